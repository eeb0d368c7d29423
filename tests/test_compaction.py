"""Log compaction (cleanup.policy=compact) end to end, with real clients.

- 100 keys x 50 versions plus tombstones: after cleaning, consuming the whole
  partition with confluent-kafka and replaying it into a dict gives exactly
  the model dict (latest value per key, deleted keys absent), at the offsets
  they were written at, with far fewer records than were produced.
- Tombstones disappear once delete.retention.ms passed after their clean.
- A SIGKILL in the middle of a (throttled) cleaning pass loses no latest value
  and no offset; the restarted broker finishes the cleaning.
- A keyless record on a compacted topic: INVALID_RECORD, with per-record
  errors (ProduceResponse v8 record_errors) and nothing appended.
- Aborted transactional records disappear after cleaning; read_committed
  still sees exactly the committed ones.

Topics use small segments (segment.bytes 16 KiB), a dirty ratio of 0.01 and
the brokers a 100 ms cleaner backoff, so cleaning starts within a second.
"""
from __future__ import annotations

import os
import struct
import time
from pathlib import Path

import pytest

from batch_builder import encode_batch
from broker_process import BrokerProcess, shared_broker
from broker_wire import API_PRODUCE, Connection, kstring

pytestmark = pytest.mark.timeout(180)

CLEANER_ARGS = ("--set", "log.cleaner.backoff.ms=100")
COMPACT = {"cleanup.policy": "compact", "segment.bytes": "16384",
           "min.cleanable.dirty.ratio": "0.01"}


@pytest.fixture(scope="module")
def cbroker(tmp_path_factory):
    yield from shared_broker(tmp_path_factory, "compaction-broker", *CLEANER_ARGS)


def _create(bootstrap, topic, **configs):
    from confluent_kafka.admin import AdminClient, NewTopic
    admin = AdminClient({"bootstrap.servers": bootstrap})
    cfg = dict(COMPACT)
    cfg.update({k.replace("_", "."): str(v) for k, v in configs.items()})
    admin.create_topics([NewTopic(topic, 1, 1, config=cfg)], request_timeout=30)[topic].result(60)


def _producer(bootstrap, **extra):
    from confluent_kafka import Producer
    # Small batches, so that the 16 KiB segments roll often.
    conf = {"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5,
            "batch.size": 4096, "compression.type": "lz4", "message.timeout.ms": 60000}
    conf.update(extra)
    return Producer(conf)


def _produce(bootstrap, topic, items, model, offsets):
    """items: (key, value|None); fills model (key -> value, tombstone deletes)
    and offsets (offset -> (key, value)) from the delivery reports."""
    p = _producer(bootstrap)
    errors = []

    def cb(err, m):
        if err:
            errors.append(err)
        else:
            offsets[m.offset()] = (m.key(), m.value())

    for i, (k, v) in enumerate(items):
        p.produce(topic, key=k, value=v, on_delivery=cb)
        if i % 200 == 0:
            p.poll(0)
    assert p.flush(60) == 0
    assert not errors, errors[:3]
    for k, v in items:
        if v is None:
            model.pop(k, None)
        else:
            model[k] = v


def _consume_all(bootstrap, topic, isolation="read_uncommitted"):
    """Every record of partition 0 up to the high watermark / LSO, in order:
    [(offset, key, value)]."""
    from confluent_kafka import Consumer, KafkaError, TopicPartition
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"check-{time.monotonic_ns()}",
                  "enable.auto.commit": False, "fetch.wait.max.ms": 50,
                  "isolation.level": isolation, "enable.partition.eof": True})
    try:
        c.assign([TopicPartition(topic, 0, 0)])
        out = []
        deadline = time.monotonic() + 60
        while True:
            assert time.monotonic() < deadline, f"read {len(out)} records, no EOF"
            batch = c.consume(1000, 0.5)
            eof = False
            for m in batch:
                if m.error():
                    assert m.error().code() == KafkaError._PARTITION_EOF, m.error()
                    eof = True
                    continue
                out.append((m.offset(), m.key(), m.value()))
            if eof:
                return out
    finally:
        c.close()


def _replay(records):
    d = {}
    for _, k, v in records:
        if v is None:
            d.pop(k, None)
        else:
            d[k] = v
    return d


def _check(records, model, offsets):
    """The consumed records replay to the model, and each one is the record
    written at its offset (offsets never change)."""
    offs = [o for o, _, _ in records]
    assert offs == sorted(set(offs)), "offsets not strictly increasing"
    for o, k, v in records:
        assert offsets.get(o) == (k, v), f"offset {o}: {(k, v)} != written {offsets.get(o)}"
    assert _replay(records) == model


def _wait_for(pred, timeout, what):
    deadline = time.monotonic() + timeout
    while not pred():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)


def _filler(n, tag):
    """Unique-key records that push what came before out of the active segment."""
    return [(f"{tag}-{i}".encode(), os.urandom(200)) for i in range(n)]


def test_latest_value_per_key_survives_cleaning(cbroker):
    topic = "compact-versions"
    _create(cbroker.bootstrap, topic, delete_retention_ms=3600000)
    model, offsets = {}, {}
    items = [(f"key-{k}".encode(), f"v{v}-{k}-{os.urandom(30).hex()}".encode())
             for v in range(50) for k in range(100)]
    items += [(f"key-{k}".encode(), None) for k in range(0, 100, 10)]  # 10 tombstones
    items += _filler(150, "fill")
    _produce(cbroker.bootstrap, topic, items, model, offsets)
    produced = len(items)

    def cleaned():
        return len(_consume_all(cbroker.bootstrap, topic)) < produced // 5
    _wait_for(cleaned, 60, "the cleaner to compact the topic")
    records = _consume_all(cbroker.bootstrap, topic)
    _check(records, model, offsets)
    # The tombstones are still there (delete.retention.ms is an hour).
    keys = [k for _, k, v in records if v is None]
    assert sorted(keys) == sorted(f"key-{k}".encode() for k in range(0, 100, 10))
    # Below the filler, no key appears twice.
    first_fill = min(o for o, k, _ in records if k.startswith(b"fill-"))
    below = [k for o, k, _ in records if o < first_fill]
    assert len(below) == len(set(below)) == 100


def test_tombstones_go_after_delete_retention(cbroker):
    topic = "compact-tombstones"
    _create(cbroker.bootstrap, topic, delete_retention_ms=1000)
    model, offsets = {}, {}
    items = [(f"key-{k}".encode(), f"v{v}-{os.urandom(40).hex()}".encode()) for v in range(5)
             for k in range(40)]
    items += [(f"key-{k}".encode(), None) for k in range(0, 40, 2)]
    items += _filler(120, "fill")
    _produce(cbroker.bootstrap, topic, items, model, offsets)

    def tombstones_gone():
        return all(v is not None for _, _, v in _consume_all(cbroker.bootstrap, topic))
    _wait_for(tombstones_gone, 30, "tombstones to be removed")
    records = _consume_all(cbroker.bootstrap, topic)
    _check(records, model, offsets)
    assert {k for _, k, _ in records if k.startswith(b"key-")} == \
        {f"key-{k}".encode() for k in range(1, 40, 2)}


def _produce_v8(address, topic, batch):
    """One raw Produce v8 (acks=1); returns (error_code, record_errors,
    error_message) of partition 0."""
    body = kstring(None) + struct.pack(">hi", 1, 30000)
    body += struct.pack(">i", 1) + kstring(topic)
    body += struct.pack(">i", 1) + struct.pack(">i", 0) + struct.pack(">i", len(batch)) + batch
    with Connection(address) as conn:
        conn.send_request(API_PRODUCE, 8, body)
        _, r = conn.recv_response()
    topics = r.array(lambda r: (r.string(), r.array(lambda r: (
        r.i32(), r.i16(), r.i64(), r.i64(), r.i64(),
        r.array(lambda r: (r.i32(), r.string())), r.string()))))
    (_, parts), = topics
    (_, code, _, _, _, record_errors, message), = parts
    return code, record_errors, message


def test_keyless_records_are_refused_with_per_record_errors(cbroker):
    topic = "compact-keyless"
    _create(cbroker.bootstrap, topic)
    batch = encode_batch([(b"k0", b"v"), (None, b"no key"), (b"k2", b"v"), (None, b"again")])
    code, record_errors, message = _produce_v8(cbroker.address, topic, batch)
    assert code == 87  # INVALID_RECORD
    assert [i for i, _ in record_errors] == [1, 3]
    assert all("without key" in m for _, m in record_errors)
    assert "without key" in message
    # Nothing was appended; a keyed batch goes in at offset 0.
    code, record_errors, _ = _produce_v8(cbroker.address, topic, encode_batch([(b"k", b"v")]))
    assert (code, record_errors) == (0, [])
    # A real client gets INVALID_RECORD too.
    from confluent_kafka import KafkaError
    p = _producer(cbroker.bootstrap)
    errs = []
    p.produce(topic, value=b"no key", on_delivery=lambda err, m: errs.append(err))
    p.flush(30)
    assert errs and errs[0] is not None and errs[0].code() == KafkaError.INVALID_RECORD
    assert len(_consume_all(cbroker.bootstrap, topic)) == 1


def test_aborted_transactions_disappear_and_read_committed_is_exact(cbroker):
    from confluent_kafka import Producer
    topic = "compact-txn"
    _create(cbroker.bootstrap, topic, delete_retention_ms=500)
    p = Producer({"bootstrap.servers": cbroker.bootstrap, "transactional.id": "compact-txn-1",
                  "linger.ms": 5})
    p.init_transactions(30)
    committed = {}
    for round_ in range(3):
        p.begin_transaction()
        for k in range(20):
            p.produce(topic, key=f"key-{k}".encode(), value=f"committed-{round_}".encode())
        p.commit_transaction(30)
        committed.update({f"key-{k}".encode(): f"committed-{round_}".encode() for k in range(20)})
        p.begin_transaction()
        for k in range(30):
            p.produce(topic, key=f"key-{k}".encode(), value=b"aborted")
        p.flush(30)
        p.abort_transaction(30)
    p.begin_transaction()
    for i in range(150):
        p.produce(topic, key=f"fill-{i}".encode(), value=b"f" * 200)
        committed[f"fill-{i}".encode()] = b"f" * 200
    p.commit_transaction(30)

    def aborted_gone():
        return all(v != b"aborted" for _, _, v in _consume_all(cbroker.bootstrap, topic))
    _wait_for(aborted_gone, 30, "aborted records to be cleaned away")
    rc = _consume_all(cbroker.bootstrap, topic, isolation="read_committed")
    assert _replay(rc) == committed
    assert all(v != b"aborted" for _, _, v in rc)


def _cleaning_in_progress(data_dir: Path, topic: str) -> bool:
    return any(data_dir.glob(f"{topic}-0/*.cleaned")) or any(data_dir.glob(f"{topic}-0/*.swap"))


def test_sigkill_during_cleaning_loses_nothing(broker_factory, tmp_path):
    data = tmp_path / "kill-data"
    # 400 KB/s: a pass over ~1.5 MB takes seconds, so the kill lands mid-pass.
    b = broker_factory(data, *CLEANER_ARGS, "--set", "log.cleaner.io.max.bytes.per.second=400000")
    topic = "compact-kill"
    _create(b.bootstrap, topic, delete_retention_ms=3600000)
    model, offsets = {}, {}
    items = [(f"key-{k}".encode(), f"v{v}-".encode() + os.urandom(150)) for v in range(40)
             for k in range(200)]
    items += [(f"key-{k}".encode(), None) for k in range(0, 200, 20)]
    items += _filler(150, "fill")
    _produce(b.bootstrap, topic, items, model, offsets)
    _wait_for(lambda: _cleaning_in_progress(data, topic), 30, "a cleaning pass to start")
    time.sleep(0.5)
    b.kill()
    b.start_again()
    before = _consume_all(b.bootstrap, topic)
    _check(before, model, offsets)  # nothing lost at the crash
    b.stop()
    # Restarted unthrottled, the broker finishes the job.
    b2 = broker_factory(data, *CLEANER_ARGS)
    _wait_for(lambda: len(_consume_all(b2.bootstrap, topic)) < len(items) // 5, 60,
              "the restarted broker to finish cleaning")
    _check(_consume_all(b2.bootstrap, topic), model, offsets)
    assert not any((data / f"{topic}-0").glob("*.cleaned"))
