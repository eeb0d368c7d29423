"""Idempotent producers (KIP-98 without transactions) against a broker process:
InitProducerId over the raw wire, duplicate/out-of-order batches over the raw
wire, and librdkafka's idempotent producer end to end."""
from __future__ import annotations

import struct

import crc32c

from batch_builder import ATTRIBUTES_OFFSET, CRC_OFFSET, encode_batch
from broker_kafka_clients import ConfluentClient
from broker_wire import API_PRODUCE, Connection, Reader, batch_headers, fetch_once, kstring

API_INIT_PRODUCER_ID = 22
ERR_NONE = 0
ERR_OUT_OF_ORDER_SEQUENCE_NUMBER = 45
ERR_INVALID_PRODUCER_EPOCH = 47
ERR_INVALID_REQUEST = 42


def init_producer_id(conn: Connection, transactional_id: str | None = None) -> tuple[int, int, int]:
    """InitProducerId v1 (non-flexible): (error, producer id, epoch)."""
    conn.send_request(API_INIT_PRODUCER_ID, 1, kstring(transactional_id) + struct.pack(">i", 60000))
    _, r = conn.recv_response()
    r.i32()  # throttle time
    return r.i16(), r.i64(), r.i16()


def idempotent_batch(values: list[bytes], producer_id: int, epoch: int, sequence: int) -> bytes:
    """A RecordBatch v2 stamped with producer id/epoch/base sequence (CRC redone)."""
    b = bytearray(encode_batch([(None, v) for v in values], producer_id=producer_id))
    struct.pack_into(">qhi", b, 43, producer_id, epoch, sequence)
    struct.pack_into(">I", b, CRC_OFFSET, crc32c.crc32c(bytes(b[ATTRIBUTES_OFFSET:])))
    return bytes(b)


def produce_v3(conn: Connection, topic: str, partition: int, records: bytes) -> tuple[int, int]:
    """Produce v3, acks=-1, one partition: (error code, base offset)."""
    body = kstring(None) + struct.pack(">hi", -1, 30000) + struct.pack(">i", 1) + kstring(topic)
    body += struct.pack(">i", 1) + struct.pack(">ii", partition, len(records)) + records
    conn.send_request(API_PRODUCE, 3, body)
    _, r = conn.recv_response()
    assert r.i32() == 1 and r.string() == topic and r.i32() == 1
    assert r.i32() == partition
    err, base = r.i16(), r.i64()
    r.i64()  # log append time
    return err, base


def test_init_producer_id_hands_out_distinct_ids_and_bumps_transactional_epochs(module_broker):
    with Connection(module_broker.address) as c:
        e1, pid1, epoch1 = init_producer_id(c)
        e2, pid2, epoch2 = init_producer_id(c)
        assert (e1, e2, epoch1, epoch2) == (ERR_NONE, ERR_NONE, 0, 0)
        assert pid1 >= 0 and pid2 >= 0 and pid1 != pid2
        # A transactional id keeps its producer id; each init bumps the epoch.
        err, tpid, tepoch = init_producer_id(c, "txn-1")
        assert err == ERR_NONE and tpid not in (pid1, pid2)
        assert init_producer_id(c, "txn-1") == (ERR_NONE, tpid, tepoch + 1)
        assert init_producer_id(c, "")[0] == ERR_INVALID_REQUEST


def test_same_idempotent_batch_twice_is_stored_once_with_one_offset(module_broker):
    b = module_broker
    topic = "idem-raw-dupes"
    ConfluentClient(b.bootstrap).create_topic(topic, 1)
    with Connection(b.address) as c:
        _, pid, epoch = init_producer_id(c)
        first = idempotent_batch([b"a", b"b", b"c"], pid, epoch, 0)
        assert produce_v3(c, topic, 0, first) == (ERR_NONE, 0)
        assert produce_v3(c, topic, 0, first) == (ERR_NONE, 0)
        # A gap in the sequence is refused; the next batch in order is stored.
        gap = idempotent_batch([b"x"], pid, epoch, 5)
        assert produce_v3(c, topic, 0, gap)[0] == ERR_OUT_OF_ORDER_SEQUENCE_NUMBER
        assert produce_v3(c, topic, 0, idempotent_batch([b"d"], pid, epoch, 3)) == (ERR_NONE, 3)
        assert produce_v3(c, topic, 0, idempotent_batch([b"d"], pid, epoch, 3)) == (ERR_NONE, 3)
        # An older epoch is fenced once a newer one was seen.
        assert produce_v3(c, topic, 0, idempotent_batch([b"e"], pid, epoch + 1, 0)) == (ERR_NONE, 4)
        stale = idempotent_batch([b"f"], pid, epoch, 4)
        assert produce_v3(c, topic, 0, stale)[0] == ERR_INVALID_PRODUCER_EPOCH
    got = batch_headers(fetch_once(b.address, topic, 0, 0).records)
    assert [(h.base_offset, h.record_count, h.producer_id) for h in got] == \
        [(0, 3, pid), (3, 1, pid), (4, 1, pid)]


def test_confluent_idempotent_producer_stores_10000_messages_once_in_order(module_broker):
    b = module_broker
    topic = "idem-confluent-10k"
    client = ConfluentClient(b.bootstrap)
    client.create_topic(topic, 1)
    p = client.producer(**{"enable.idempotence": True, "linger.ms": 5,
                           "max.in.flight.requests.per.connection": 5})
    errors = []
    n = 10_000
    for i in range(n):
        p.produce(topic, value=b"m%05d" % i, partition=0,
                  on_delivery=lambda err, m: err and errors.append(err))
        p.poll(0)
    assert p.flush(60) == 0
    assert errors == []
    got = client.read(topic, 1, "earliest")
    assert [(r.offset, r.value) for r in got] == [(i, b"m%05d" % i) for i in range(n)]
    headers = batch_headers(fetch_once(b.address, topic, 0, 0, max_bytes=64 << 20).records)
    assert sum(h.record_count for h in headers) == n
    assert len({h.producer_id for h in headers}) == 1 and headers[0].producer_id >= 0
