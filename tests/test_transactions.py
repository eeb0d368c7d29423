"""Transactions (KIP-98) end to end: real transactional producers of three
clients (confluent-kafka, kafka-python, aiokafka) against a real broker
process, read_committed and read_uncommitted consumers checking exactly which
records each sees, zombie fencing, the LSO and the timeout abort, and offsets
sent to the transaction."""
from __future__ import annotations

import asyncio
import time
import uuid

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition

from broker_kafka_clients import ConfluentClient

TIMEOUT_S = 60.0
# The broker's timeout-abort check runs every 200 ms in this module.
BROKER_ARGS = ("--set", "transaction.abort.timed.out.transaction.cleanup.interval.ms=200",
               "--set", "group.initial.rebalance.delay.ms=0")


@pytest.fixture(scope="module")
def txn_broker(tmp_path_factory):
    from broker_process import BrokerProcess, _finish
    b = BrokerProcess(tmp_path_factory.mktemp("txn-broker"), *BROKER_ARGS).start()
    yield b
    _finish([b])


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def txn_producer(bootstrap: str, txn_id: str, **extra) -> Producer:
    conf = {"bootstrap.servers": bootstrap, "transactional.id": txn_id,
            "transaction.timeout.ms": 30000, "linger.ms": 5}
    conf.update(extra)
    p = Producer(conf)
    p.init_transactions(TIMEOUT_S)
    return p


def read_all(bootstrap: str, topic: str, partitions: int, isolation: str,
             expect: int | None = None) -> list[tuple[int, int, bytes]]:
    """(partition, offset, value) of every record a consumer with `isolation`
    reads from the start: `expect` records, or (None) all up to each
    partition's end as the broker answered it at the time, the last stable
    offset for read_committed, the high watermark otherwise (librdkafka's
    partition EOF, not a pause in the flow)."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": unique("reader"),
                  "enable.auto.commit": False, "isolation.level": isolation,
                  "enable.partition.eof": expect is None})
    c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    out, at_end = [], set()
    deadline = time.monotonic() + TIMEOUT_S
    try:
        while time.monotonic() < deadline:
            if len(out) == expect or (expect is None and len(at_end) == partitions):
                break
            m = c.poll(0.2)
            if m is None:
                continue
            if m.error() is not None and m.error().code() == KafkaError._PARTITION_EOF:
                at_end.add(m.partition())
                continue
            assert m.error() is None, m.error()
            out.append((m.partition(), m.offset(), m.value()))
        else:
            raise AssertionError(f"read {len(out)} records of {topic} in {TIMEOUT_S} s; "
                                 f"expected {expect}, at the end of {sorted(at_end)}")
    finally:
        c.close()
    return sorted(out)


def end_offsets(bootstrap: str, topic: str, partitions: int, isolation: str) -> list[int]:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": unique("wm"),
                  "isolation.level": isolation})
    try:
        out = []
        for p in range(partitions):
            # get_watermark_offsets asks ListOffsets with the consumer's isolation.
            _, high = c.get_watermark_offsets(TopicPartition(topic, p), TIMEOUT_S, cached=False)
            out.append(high)
        return out
    finally:
        c.close()


def test_commit_and_abort_across_topics_seen_exactly_by_isolation(txn_broker):
    bs = txn_broker.bootstrap
    a, b = unique("txa"), unique("txb")
    client = ConfluentClient(bs)
    client.create_topic(a, 3)
    client.create_topic(b, 2)
    p = txn_producer(bs, unique("tid"))
    p.begin_transaction()
    for i in range(30):
        p.produce(a, f"c{i}".encode(), partition=i % 3)
        p.produce(b, f"c{i}".encode(), partition=i % 2)
    p.commit_transaction(TIMEOUT_S)
    p.begin_transaction()
    for i in range(20):
        p.produce(a, f"x{i}".encode(), partition=i % 3)
        p.produce(b, f"x{i}".encode(), partition=i % 2)
    p.flush(TIMEOUT_S)
    p.abort_transaction(TIMEOUT_S)
    p.begin_transaction()
    p.produce(a, b"last", partition=0)
    p.commit_transaction(TIMEOUT_S)

    for topic, parts in ((a, 3), (b, 2)):
        expected = sorted([f"c{i}".encode() for i in range(30)] + ([b"last"] if topic == a else []))
        # Then idle: a leaked aborted record would show up as one too many.
        committed = read_all(bs, topic, parts, "read_committed", expect=len(expected))
        committed += read_all(bs, topic, parts, "read_committed")[len(expected):]
        values = sorted(v for _, _, v in committed)
        assert values == expected
        uncommitted = read_all(bs, topic, parts, "read_uncommitted")
        values_u = sorted(v for _, _, v in uncommitted)
        # Aborted records are in the log; control batches are never records.
        assert values_u == sorted(expected + [f"x{i}".encode() for i in range(20)])
        # Offsets have gaps where the markers are: 30/parts records + 3 markers
        # (commit, abort, commit) in partition 0 of `a`.
        offsets0 = [o for part, o, _ in uncommitted if part == 0]
        assert offsets0 == sorted(offsets0)
        assert len(set(offsets0)) == len(offsets0)
        assert max(offsets0) + 1 < end_offsets(bs, topic, parts, "read_uncommitted")[0] + 1
    p.flush(TIMEOUT_S)


def test_open_transaction_holds_the_lso_until_commit(txn_broker):
    bs = txn_broker.bootstrap
    t = unique("lso")
    ConfluentClient(bs).create_topic(t, 1)
    plain = Producer({"bootstrap.servers": bs})
    plain.produce(t, b"before", partition=0)
    plain.flush(TIMEOUT_S)
    p = txn_producer(bs, unique("tid"))
    p.begin_transaction()
    for i in range(5):
        p.produce(t, f"open{i}".encode(), partition=0)
    p.flush(TIMEOUT_S)
    # Non-transactional records after the open transaction: visible to
    # read_uncommitted at once, to read_committed only once it ends.
    plain.produce(t, b"after", partition=0)
    plain.flush(TIMEOUT_S)
    assert end_offsets(bs, t, 1, "read_uncommitted") == [7]
    assert end_offsets(bs, t, 1, "read_committed") == [1]  # the LSO: first open offset
    assert [v for *_, v in read_all(bs, t, 1, "read_committed")] == [b"before"]
    assert len(read_all(bs, t, 1, "read_uncommitted", expect=7)) == 7
    p.commit_transaction(TIMEOUT_S)
    seen = [v for *_, v in read_all(bs, t, 1, "read_committed", expect=7)]
    assert seen == [b"before"] + [f"open{i}".encode() for i in range(5)] + [b"after"]
    assert end_offsets(bs, t, 1, "read_committed") == [8]  # after the COMMIT marker


def test_zombie_is_fenced_and_none_of_its_writes_become_visible(txn_broker):
    bs = txn_broker.bootstrap
    t = unique("zombie")
    ConfluentClient(bs).create_topic(t, 2)
    tid = unique("tid")
    old = txn_producer(bs, tid)
    old.begin_transaction()
    for i in range(10):
        old.produce(t, f"zombie{i}".encode(), partition=i % 2)
    old.flush(TIMEOUT_S)
    new = txn_producer(bs, tid)  # fences `old` and aborts its open transaction
    new.begin_transaction()
    for i in range(10):
        new.produce(t, f"new{i}".encode(), partition=i % 2)
    new.commit_transaction(TIMEOUT_S)
    # The zombie's late writes and its commit fail as fenced.
    old.produce(t, b"zombie-late", partition=0)
    with pytest.raises(KafkaException) as err:
        old.commit_transaction(TIMEOUT_S)
    assert err.value.args[0].code() in (KafkaError._FENCED, KafkaError.PRODUCER_FENCED,
                                        KafkaError.INVALID_PRODUCER_EPOCH)
    values = sorted(v for *_, v in read_all(bs, t, 2, "read_committed", expect=10))
    assert values == sorted(f"new{i}".encode() for i in range(10))
    assert not any(v.startswith(b"zombie") for *_, v in read_all(bs, t, 2, "read_committed"))


def test_hanging_transaction_is_aborted_at_its_timeout(txn_broker):
    bs = txn_broker.bootstrap
    t = unique("hang")
    ConfluentClient(bs).create_topic(t, 1)
    p = txn_producer(bs, unique("tid"), **{"transaction.timeout.ms": 1500})
    p.begin_transaction()
    p.produce(t, b"never", partition=0)
    p.flush(TIMEOUT_S)
    assert end_offsets(bs, t, 1, "read_committed") == [0]
    deadline = time.monotonic() + 20
    while end_offsets(bs, t, 1, "read_committed") != [2] and time.monotonic() < deadline:
        time.sleep(0.2)
    # The coordinator aborted it: the LSO moved past the ABORT marker.
    assert end_offsets(bs, t, 1, "read_committed") == [2]
    assert read_all(bs, t, 1, "read_committed") == []
    with pytest.raises(KafkaException):
        p.commit_transaction(TIMEOUT_S)


def test_send_offsets_to_transaction_commits_offsets_with_the_records(txn_broker):
    bs = txn_broker.bootstrap
    src, dst = unique("src"), unique("dst")
    client = ConfluentClient(bs)
    client.create_topic(src, 1)
    client.create_topic(dst, 1)
    plain = Producer({"bootstrap.servers": bs})
    for i in range(10):
        plain.produce(src, f"in{i}".encode(), partition=0)
    plain.flush(TIMEOUT_S)
    group = unique("ctp")
    consumer = Consumer({"bootstrap.servers": bs, "group.id": group,
                         "enable.auto.commit": False, "auto.offset.reset": "earliest",
                         "isolation.level": "read_committed"})
    consumer.assign([TopicPartition(src, 0, 0)])
    p = txn_producer(bs, unique("tid"))
    try:
        for commit in (False, True):
            got = []
            deadline = time.monotonic() + TIMEOUT_S
            while len(got) < 5 and time.monotonic() < deadline:
                m = consumer.poll(0.2)
                if m is not None and m.error() is None:
                    got.append(m)
            p.begin_transaction()
            for m in got:
                p.produce(dst, m.value().upper(), partition=0)
            p.send_offsets_to_transaction([TopicPartition(src, 0, got[-1].offset() + 1)],
                                          consumer.consumer_group_metadata(), TIMEOUT_S)
            if commit:
                p.commit_transaction(TIMEOUT_S)
            else:
                p.abort_transaction(TIMEOUT_S)
                # Nothing committed for the group; rewind as an application would.
                consumer.seek(TopicPartition(src, 0, 0))
        committed = consumer.committed([TopicPartition(src, 0)], TIMEOUT_S)[0].offset
        assert committed == 5
    finally:
        consumer.close()
    values = [v for *_, v in read_all(bs, dst, 1, "read_committed", expect=5)]
    assert values == [f"IN{i}".encode() for i in range(5)]


def test_kafka_python_transactional_producer(txn_broker):
    kafka = pytest.importorskip("kafka")
    bs = txn_broker.bootstrap
    t = unique("kp")
    ConfluentClient(bs).create_topic(t, 2)
    p = kafka.KafkaProducer(bootstrap_servers=bs, transactional_id=unique("tid"))
    try:
        p.init_transactions()
        p.begin_transaction()
        for i in range(10):
            p.send(t, f"kp{i}".encode(), partition=i % 2)
        p.commit_transaction()
        p.begin_transaction()
        for i in range(10):
            p.send(t, f"kpx{i}".encode(), partition=i % 2)
        p.flush()
        p.abort_transaction()
    finally:
        p.close()
    values = sorted(v for *_, v in read_all(bs, t, 2, "read_committed", expect=10))
    assert values == sorted(f"kp{i}".encode() for i in range(10))
    assert len(read_all(bs, t, 2, "read_uncommitted", expect=20)) == 20


def test_aiokafka_transactional_producer_with_offsets(txn_broker):
    aiokafka = pytest.importorskip("aiokafka")
    bs = txn_broker.bootstrap
    src, dst = unique("aisrc"), unique("aidst")
    client = ConfluentClient(bs)
    client.create_topic(src, 1)
    client.create_topic(dst, 1)
    group = unique("aig")

    async def run():
        p = aiokafka.AIOKafkaProducer(bootstrap_servers=bs, transactional_id=unique("tid"))
        await p.start()
        try:
            async with p.transaction():
                for i in range(5):
                    await p.send_and_wait(dst, f"ai{i}".encode(), partition=0)
                await p.send_offsets_to_transaction(
                    {aiokafka.TopicPartition(src, 0): 42}, group)
            with pytest.raises(RuntimeError):
                async with p.transaction():
                    await p.send_and_wait(dst, b"aborted", partition=0)
                    raise RuntimeError("abort this one")
        finally:
            await p.stop()

    asyncio.run(run())
    values = [v for *_, v in read_all(bs, dst, 1, "read_committed", expect=5)]
    assert values == [f"ai{i}".encode() for i in range(5)]
    c = Consumer({"bootstrap.servers": bs, "group.id": group})
    try:
        assert c.committed([TopicPartition(src, 0)], TIMEOUT_S)[0].offset == 42
    finally:
        c.close()
