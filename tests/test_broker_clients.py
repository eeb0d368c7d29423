"""Real clients against a real broker process over TCP: confluent-kafka,
kafka-python, aiokafka and kcat (Debian), under every compression codec.

Each case: create a 3-partition topic through the client's admin API, produce
keyed messages (the client's partitioner spreads them) and unkeyed ones with
explicit partitions, all with headers, then consume by assign+seek
- from earliest: every value/key/header/partition/offset/timestamp exactly,
  offsets dense per partition from 0;
- from a timestamp (offsets_for_times): exactly the second group;
- from latest: nothing old; a message produced after the seek arrives;
and another client reads what this one produced identically.
"""
from __future__ import annotations

import time
import zlib
from collections import defaultdict

import pytest

from broker_kafka_clients import CLIENTS, CODEC_IDS, CODECS, ConfluentClient, Out, Rec
from broker_wire import batch_headers, fetch_once

PARTITIONS = 3
CLIENT_NAMES = list(CLIENTS)

pytestmark = [pytest.mark.timeout(300),
              # kafka-python 3.0 loads its schemas with deprecated importlib calls.
              pytest.mark.filterwarnings("ignore:read_text is deprecated:DeprecationWarning"),
              pytest.mark.filterwarnings("ignore:open_text is deprecated:DeprecationWarning")]


def _now_ms() -> int:
    return int(time.time() * 1000)


def _payload(tag: str) -> bytes:
    # Compressible, so that every codec really compresses.
    return (tag + ":" + "lorem ipsum dolor sit amet " * 12).encode()


def _old_group(client: str, t0: int | None) -> list[Out]:
    """12 keyed messages (6 keys, each twice) and 6 unkeyed with explicit partitions."""
    per_message = client != "kcat"  # kcat's -H applies to a whole kcat run
    msgs = []
    for i in range(12):
        headers = (("src", client.encode()), ("grp", b"keyed"))
        if per_message:
            headers += (("idx", str(i).encode()), ("dup", b"first"), ("dup", b""))
        msgs.append(Out(_payload(f"{client}-keyed-{i}"), key=f"key-{i % 6}".encode(),
                        headers=headers, timestamp=None if t0 is None else t0 + i))
    for i in range(6):
        headers = (("src", client.encode()), ("grp", b"unkeyed"))
        if per_message:
            headers += (("idx", str(100 + i).encode()),)
        msgs.append(Out(_payload(f"{client}-unkeyed-{i}"), partition=i % PARTITIONS,
                        headers=headers, timestamp=None if t0 is None else t0 + 100 + i))
    return msgs


def _new_group(client: str, t1: int | None) -> list[Out]:
    return [Out(_payload(f"{client}-new-{i}"), key=None if i % 2 else f"nk-{i}".encode(),
                partition=i % PARTITIONS, headers=(("grp", b"new"),),
                timestamp=None if t1 is None else t1 + i)
            for i in range(6)]


def _librdkafka_consistent_random(key: bytes, partitions: int) -> int:
    """librdkafka's default partitioner for a non-empty key: CRC32(key) % partitions."""
    return zlib.crc32(key) % partitions


def _expected(client, msgs: list[Out], reports) -> list[Rec]:
    """The records the broker must hold, in produce order: partitions from the
    delivery reports (or librdkafka's partitioner for kcat), offsets dense per
    partition from 0."""
    next_offset = defaultdict(int)
    out = []
    for i, m in enumerate(msgs):
        if m.partition is not None:
            p = m.partition
        elif reports is not None:
            p = reports[i][0]
        else:
            p = _librdkafka_consistent_random(m.key, PARTITIONS)
        off = next_offset[p]
        next_offset[p] += 1
        if reports is not None:
            assert reports[i] == (p, off), f"{client}: delivery report {reports[i]} for message {i}"
        out.append(Rec(p, off, m.key, m.value, m.headers, m.timestamp if m.timestamp else -1))
    return out


def _with_timestamps(expected: list[Rec], got: list[Rec], lo: int, hi: int) -> list[Rec]:
    """For kcat (no producer timestamps): check each consumed CreateTime lies
    within [lo, hi] and take it into the expectation."""
    by_pos = {(r.partition, r.offset): r.timestamp for r in got}
    out = []
    for r in expected:
        ts = by_pos.get((r.partition, r.offset))
        assert ts is not None and lo <= ts <= hi, f"timestamp {ts} of {r} not in [{lo}, {hi}]"
        out.append(Rec(r.partition, r.offset, r.key, r.value, r.headers, ts))
    return out


def _assert_same(got: list[Rec], want: list[Rec], what: str):
    want = sorted(want, key=lambda r: (r.partition, r.offset))
    assert len(got) == len(want), f"{what}: {len(got)} records, expected {len(want)}"
    for g, w in zip(got, want):
        assert g == w, f"{what}: got {g}\nexpected {w}"
    kinds = {g.create_time for g in got} - {None}
    assert kinds <= {True}, f"{what}: timestamp type not CreateTime"


def _assert_partition_count(bootstrap, topic, n):
    admin = ConfluentClient(bootstrap).admin()
    md = admin.list_topics(topic, timeout=30).topics[topic]
    assert md.error is None, md.error
    assert sorted(md.partitions) == list(range(n))


def _assert_compression(address, topic, recs: list[Rec], codec: str):
    """Raw Fetch v4 of every partition: the stored batches carry the producer's codec."""
    for p in range(PARTITIONS):
        n = sum(1 for r in recs if r.partition == p)
        fp = fetch_once(address, topic, p, 0)
        assert fp.error_code == 0 and fp.high_watermark == n
        batches = batch_headers(fp.records)
        assert sum(b.record_count for b in batches) == n, batches
        assert {b.compression for b in batches} == {CODEC_IDS[codec]}, \
            f"partition {p}: producer asked for {codec}, stored batches {batches}"


def _produce_groups(client, topic, codec):
    """Produces the old group, then the new group with later CreateTimes.
    Returns (expected old, expected new, split timestamp, kcat time bounds)."""
    kcat = client.name == "kcat"
    if kcat:
        t_lo = _now_ms()
        old = _old_group(client.name, None)
        client.produce(topic, old, codec)
        time.sleep(0.05)
        t_split = _now_ms()
        time.sleep(0.05)
        new = _new_group(client.name, None)
        client.produce(topic, new, codec)
        t_hi = _now_ms()
        exp = _expected(client.name, old + new, None)
        return exp[:len(old)], exp[len(old):], t_split, (t_lo, t_split, t_hi)
    base = _now_ms() - 600_000  # ten minutes ago: far from retention, clearly ordered
    old = _old_group(client.name, base)
    new = _new_group(client.name, base + 300_000)
    reports = client.produce(topic, old, codec)
    reports += client.produce(topic, new, codec)
    exp = _expected(client.name, old + new, reports)
    return exp[:len(old)], exp[len(old):], base + 300_000, None


@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("client_name", CLIENT_NAMES)
def test_produce_then_consume_from_earliest_timestamp_and_latest(module_broker, client_name,
                                                                  codec):
    b = module_broker
    client = CLIENTS[client_name](b.bootstrap)
    topic = f"e2e-{client_name}-{codec}"
    client.create_topic(topic, PARTITIONS)
    _assert_partition_count(b.bootstrap, topic, PARTITIONS)

    old, new, t_split, kcat_bounds = _produce_groups(client, topic, codec)
    keyed_parts = {r.key: r.partition for r in old if r.key is not None}
    assert len(set(keyed_parts.values())) > 1, "key hashing should spread 6 keys"

    # From earliest: everything, exactly.
    got = client.read(topic, PARTITIONS, "earliest")
    if kcat_bounds:
        lo, split, hi = kcat_bounds
        old = _with_timestamps(old, got, lo, split - 1)
        new = _with_timestamps(new, got, split + 1, hi)
    _assert_same(got, old + new, f"{client_name}/{codec} from earliest")
    for p in range(PARTITIONS):
        offs = [r.offset for r in got if r.partition == p]
        assert offs == list(range(len(offs))), f"partition {p} offsets {offs}"
    _assert_compression(b.address, topic, got, codec)

    # From a timestamp: exactly the second group.
    got_ts = client.read(topic, PARTITIONS, ("timestamp", t_split))
    _assert_same(got_ts, new, f"{client_name}/{codec} from timestamp {t_split}")

    # From latest: nothing old, then the late messages.
    ends = defaultdict(int)
    for r in old + new:
        ends[r.partition] = max(ends[r.partition], r.offset + 1)
    late = [Out(_payload(f"{client_name}-late-{p}"), partition=p, headers=(("grp", b"late"),))
            for p in range(PARTITIONS)]
    t_late = _now_ms()
    got_late = client.read_latest(topic, PARTITIONS, lambda: client.produce(topic, late, codec),
                                  len(late))
    assert [(r.partition, r.offset, r.key, r.value, r.headers) for r in got_late] == \
        [(p, ends[p], None, late[p].value, late[p].headers) for p in range(PARTITIONS)]
    assert all(r.timestamp >= t_late - 1000 for r in got_late), got_late


@pytest.mark.parametrize("producer_name,reader_name", [
    (CLIENT_NAMES[i], CLIENT_NAMES[(i + 1) % len(CLIENT_NAMES)]) for i in range(len(CLIENT_NAMES))
] + [("kafka-python", "kcat"), ("kcat", "aiokafka")])
def test_what_one_client_produces_another_reads_identically(module_broker, producer_name,
                                                            reader_name):
    b = module_broker
    producer = CLIENTS[producer_name](b.bootstrap)
    reader = CLIENTS[reader_name](b.bootstrap)
    # Codec varies with the pair so that every reader decodes some foreign codec.
    codec = CODECS[(CLIENT_NAMES.index(producer_name) + 2 * CLIENT_NAMES.index(reader_name))
                   % len(CODECS)]
    topic = f"cross-{producer_name}-to-{reader_name}"
    reader.create_topic(topic, PARTITIONS)
    old, new, _, _ = _produce_groups(producer, topic, codec)
    by_producer = producer.read(topic, PARTITIONS, "earliest")
    by_reader = reader.read(topic, PARTITIONS, "earliest")
    assert len(by_producer) == len(old) + len(new)
    _assert_same(by_reader, by_producer, f"{producer_name} -> {reader_name} ({codec})")
    assert [(r.partition, r.offset, r.key, r.value, r.headers) for r in by_reader] == \
        sorted([(r.partition, r.offset, r.key, r.value, r.headers) for r in old + new])


def test_kafka_python_default_producer_is_idempotent(module_broker):
    """kafka-python 3.x's default producer is idempotent: it needs InitProducerId
    and stamps its batches with the producer id it got."""
    from broker_kafka_clients import KafkaPythonClient
    b = module_broker
    client = KafkaPythonClient(b.bootstrap, enable_idempotence=True)
    client.create_topic("kp-default-producer", 1)
    msgs = [Out(_payload(f"kp-default-{i}"), key=b"k%d" % i, partition=0,
                headers=(("i", b"%d" % i),)) for i in range(10)]
    assert client.produce("kp-default-producer", msgs) == [(0, i) for i in range(10)]
    got = client.read("kp-default-producer", 1, "earliest")
    assert [(r.offset, r.key, r.value, r.headers) for r in got] == \
        [(i, m.key, m.value, m.headers) for i, m in enumerate(msgs)]
    batches = batch_headers(fetch_once(b.address, "kp-default-producer", 0, 0).records)
    assert sum(x.record_count for x in batches) == 10
    assert all(x.producer_id >= 0 for x in batches), batches
