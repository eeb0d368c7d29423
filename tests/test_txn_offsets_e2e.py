"""Transactional offset commits end to end with confluent-kafka: a
consume-transform-produce loop commits its group's offsets inside its
transaction (send_offsets_to_transaction: AddOffsetsToTxn + TxnOffsetCommit);
they are invisible until the transaction commits, and an aborted
transaction's offsets never appear.

Skips, saying so, while the broker does not advertise the transaction
coordinator's APIs (AddPartitionsToTxn 24, AddOffsetsToTxn 25, EndTxn 26)
and TxnOffsetCommit (28) in ApiVersions; runs as soon as they are built in.
"""
from __future__ import annotations

import time

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from acl_wire import Conn, msg
from broker_process import GROUP_ARGS, shared_broker
from broker_wire import Connection, decode_api_versions
from cli_run import headrace, ok

pytestmark = pytest.mark.timeout(180)

INVALID_PRODUCER_EPOCH, CONCURRENT_TRANSACTIONS, PRODUCER_FENCED = 47, 51, 90
NEEDED = {24: "AddPartitionsToTxn", 25: "AddOffsetsToTxn", 26: "EndTxn", 28: "TxnOffsetCommit"}


def _advertised(address) -> set[int]:
    with Connection(address) as c:
        c.send_request(18, 0)  # ApiVersions v0
        _, r = c.recv_response()
        return set(decode_api_versions(r, 0).apis)


@pytest.fixture(scope="module")
def txn_broker(tmp_path_factory):
    gen = shared_broker(tmp_path_factory, "txn-offsets-broker", *GROUP_ARGS)
    b = next(gen)
    missing = sorted(set(NEEDED) - _advertised(b.address))
    if missing:
        b.stop()
        pytest.skip("the broker does not advertise " +
                    ", ".join(f"{NEEDED[k]} ({k})" for k in missing) + " in ApiVersions")
    yield b
    next(gen, None)


def _committed(bootstrap: str, group: str, tp: TopicPartition) -> int:
    """The group's committed offset as OffsetFetch without require_stable
    answers it (read_uncommitted: librdkafka does not ask for stability)."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                  "isolation.level": "read_uncommitted", "enable.auto.commit": False})
    try:
        return c.committed([tp], timeout=20)[0].offset
    finally:
        c.close()


def _consume(consumer: Consumer, n: int) -> list:
    out, deadline = [], time.monotonic() + 30
    while len(out) < n and time.monotonic() < deadline:
        m = consumer.poll(0.5)
        if m is not None and not m.error():
            out.append(m)
    assert len(out) == n, f"consumed {len(out)} of {n}"
    return out


def test_offsets_sent_to_a_transaction_appear_only_when_it_commits(txn_broker, request):
    b = txn_broker.bootstrap
    src, dst = f"src-{request.node.name[:30]}", f"dst-{request.node.name[:30]}"
    group = f"{src}-g"
    for t in (src, dst):
        ok(headrace("topic", "create", t, "--partitions", "1", brokers=b))
    ok(headrace("produce", src, input="a\nb\nc\nd\ne\n", brokers=b))
    tp = TopicPartition(src, 0)

    consumer = Consumer({"bootstrap.servers": b, "group.id": group, "auto.offset.reset": "earliest",
                         "enable.auto.commit": False, "isolation.level": "read_committed",
                         "session.timeout.ms": 6000})
    producer = Producer({"bootstrap.servers": b, "transactional.id": f"{group}-tx"})
    try:
        consumer.subscribe([src])
        producer.init_transactions(30)

        # A committed transaction: 3 records in, their offsets with it.
        producer.begin_transaction()
        for m in _consume(consumer, 3):
            producer.produce(dst, m.value().upper())
        producer.send_offsets_to_transaction(consumer.position(consumer.assignment()),
                                             consumer.consumer_group_metadata(), 30)
        assert producer.flush(30) == 0
        assert _committed(b, group, tp) < 0  # pending: invisible before the commit
        producer.commit_transaction(30)
        assert _committed(b, group, tp) == 3

        # An aborted one: its offsets are dropped.
        producer.begin_transaction()
        for m in _consume(consumer, 2):
            producer.produce(dst, m.value().upper())
        producer.send_offsets_to_transaction(consumer.position(consumer.assignment()),
                                             consumer.consumer_group_metadata(), 30)
        producer.abort_transaction(30)
        assert _committed(b, group, tp) == 3
    finally:
        consumer.close()


def _init_producer_id(conn, txn_id: str) -> tuple[int, int]:
    """InitProducerId v4, retried while the coordinator still ends an earlier
    incarnation's transaction (CONCURRENT_TRANSACTIONS)."""
    deadline = time.monotonic() + 30
    while True:
        r = conn.call(msg("producer", "InitProducerIdRequest", 4, transactional_id=txn_id,
                          transaction_timeout_ms=60000, producer_id=-1, producer_epoch=-1))
        if r.error_code != CONCURRENT_TRANSACTIONS or time.monotonic() > deadline:
            assert r.error_code == 0, r
            return r.producer_id, r.producer_epoch
        time.sleep(0.05)


def test_a_fenced_producers_late_offsets_are_refused_and_leave_the_group_stable(
        txn_broker, request):
    """The race a Spark speculative copy hit: producer A adds the group to its
    transaction (AddOffsetsToTxn); a new incarnation's InitProducerId fences
    A and aborts the transaction (its marker reaches the group coordinator);
    only then does A's TxnOffsetCommit arrive. Accepted, it would stay
    pending with no marker left to end it, and every require_stable
    OffsetFetch of the group (read_committed consumers) would answer
    UNSTABLE_OFFSET_COMMIT until the client gave up."""
    b = txn_broker.bootstrap
    topic = f"late-{request.node.name[:30]}"
    group, txn_id = f"{topic}-g", f"{topic}-tx"
    ok(headrace("topic", "create", topic, "--partitions", "1", brokers=b))
    host, port = txn_broker.address
    with Conn((host, port)) as conn:
        pid, epoch = _init_producer_id(conn, txn_id)
        r = conn.call(msg("producer", "AddOffsetsToTxnRequest", 3, transactional_id=txn_id,
                          producer_id=pid, producer_epoch=epoch, group_id=group))
        assert r.error_code == 0, r
        new_pid, new_epoch = _init_producer_id(conn, txn_id)  # fences A, aborts its txn
        assert (new_pid, new_epoch) != (pid, epoch)
        late = conn.call(msg("producer", "TxnOffsetCommitRequest", 3, transactional_id=txn_id,
                             group_id=group, producer_id=pid, producer_epoch=epoch,
                             generation_id=-1, member_id="", group_instance_id=None,
                             topics=[{"name": topic, "partitions": [
                                 {"partition_index": 0, "committed_offset": 7,
                                  "committed_leader_epoch": -1, "committed_metadata": ""}]}]))
        assert late.topics[0].partitions[0].error_code in (INVALID_PRODUCER_EPOCH,
                                                           PRODUCER_FENCED), late
        fetched = conn.call(msg("consumer", "OffsetFetchRequest", 7, group_id=group,
                                require_stable=True,
                                topics=[{"name": topic, "partition_indexes": [0]}]))
        part = fetched.topics[0].partitions[0]
        assert (part.error_code, part.committed_offset) == (0, -1), fetched
