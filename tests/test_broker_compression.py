"""Compression codecs, timestamps and offset-for-time against a real broker
process with real clients (issue 17, items 1 and 2):

- offsets_for_times inside batches of every codec answers the exact record
  (offset and its own timestamp), not the batch's first offset;
- a topic with compression.type=zstd stores zstd batches whatever the
  producer sent, and clients read them back exactly;
- a LogAppendTime topic hands out the broker's times;
- records outside message.timestamp.before/after.max.ms get INVALID_TIMESTAMP;
- a compressed batch whose payload is not what its codec says gets
  CORRUPT_MESSAGE, one whose records disagree with its header INVALID_RECORD,
  and neither appends anything.
(Produce/consume round trips of every client under every codec are in
test_broker_clients.py.)
"""
from __future__ import annotations

import json
import struct
import time

import crc32c
import pytest
import zstandard

from batch_builder import ATTRIBUTES_OFFSET, CRC_OFFSET, HEADER_SIZE, encode_batch
from broker_kafka_clients import CODEC_IDS, ConfluentClient, KafkaPythonClient
from broker_wire import Connection, batch_headers, fetch_once
from cli_run import headrace as run, ok
from test_broker_idempotence import produce_v3

ERR_CORRUPT_MESSAGE = 2
ERR_INVALID_TIMESTAMP = 32
ERR_INVALID_RECORD = 87
CODECS = ["gzip", "snappy", "lz4", "zstd"]
TIMEOUT_S = 30


def _now_ms() -> int:
    return int(time.time() * 1000)


def _produce_one_batch(bootstrap, topic, codec, timestamps):
    """confluent-kafka, all records to partition 0 in as few batches as it
    makes (long linger); record i has value b"v<i>" and timestamps[i]."""
    from confluent_kafka import Producer
    p = Producer({"bootstrap.servers": bootstrap, "compression.type": codec, "acks": "all",
                  "linger.ms": 500, "batch.num.messages": 10000, "message.timeout.ms": 60000})
    errors = []
    for i, ts in enumerate(timestamps):
        p.produce(topic, value=b"v%d" % i, partition=0, timestamp=ts,
                  on_delivery=lambda err, m: err and errors.append(err))
    assert p.flush(TIMEOUT_S) == 0
    assert errors == []


@pytest.mark.parametrize("codec", CODECS)
def test_offsets_for_times_answers_the_exact_record_inside_compressed_batches(module_broker,
                                                                               codec):
    from confluent_kafka import TopicPartition
    from kafka import KafkaConsumer
    from kafka import TopicPartition as KTopicPartition
    b = module_broker
    topic = f"oft-{codec}"
    client = ConfluentClient(b.bootstrap)
    client.create_topic(topic, 1)
    base = _now_ms() - 100_000
    # 200 records 10 ms apart, except a run of equal timestamps at 50..59.
    stamps = [base + 10 * i if not 50 <= i < 60 else base + 500 for i in range(200)]
    _produce_one_batch(b.bootstrap, topic, codec, stamps)
    batches = batch_headers(fetch_once(b.address, topic, 0, 0, max_bytes=16 << 20).records)
    assert sum(x.record_count for x in batches) == 200
    # librdkafka sends a batch uncompressed when the codec does not shrink it
    # (a lone record, when the linger ended early on a loaded machine): every
    # batch of several records must carry the codec, and most records must be
    # inside such batches.
    assert len(batches) < 20, batches
    assert {x.compression for x in batches if x.record_count > 1} == {CODEC_IDS[codec]}, batches
    assert sum(x.record_count for x in batches if x.compression == CODEC_IDS[codec]) >= 190

    # (asked time, expected offset, expected timestamp): inside batches, on
    # an exact hit, between records, into the run of equal times, past the end.
    cases = [(base - 1, 0, base), (base + 10 * 37, 37, base + 370), (base + 10 * 120 + 3, 121,
             base + 1210), (base + 495, 50, base + 500), (base + 10 * 199, 199, base + 1990)]
    consumer = client.consumer()
    try:
        offsets = []  # one partition, so one time per request
        for t, _, _ in cases:
            r = consumer.offsets_for_times([TopicPartition(topic, 0, t)], timeout=TIMEOUT_S)
            assert r[0].error is None
            offsets.append(r[0].offset)
        assert offsets == [o for _, o, _ in cases], codec
        past = consumer.offsets_for_times([TopicPartition(topic, 0, base + 5000)],
                                          timeout=TIMEOUT_S)
        assert past[0].offset == -1  # no record at or after: end of the log
    finally:
        consumer.close()

    kc = KafkaConsumer(bootstrap_servers=b.bootstrap, request_timeout_ms=30000)
    try:
        tp = KTopicPartition(topic, 0)
        for t, offset, ts in cases:
            found = kc.offsets_for_times({tp: t})[tp]
            assert (found.offset, found.timestamp) == (offset, ts), (codec, t)
    finally:
        kc.close()


def test_topic_compression_type_zstd_stores_zstd_batches_that_clients_read_back(module_broker):
    from confluent_kafka.admin import ConfigResource
    b = module_broker
    topic = "stored-as-zstd"
    client = ConfluentClient(b.bootstrap)
    client.create_topic(topic, 1, **{"compression.type": "zstd"})
    admin = client.admin()
    res = ConfigResource(ConfigResource.Type.TOPIC, topic)
    described = admin.describe_configs([res])[res].result(TIMEOUT_S)
    assert described["compression.type"].value == "zstd"

    from broker_kafka_clients import Out
    sent = []
    for codec in ["none", "gzip", "lz4", "snappy"]:
        msgs = [Out(b"%s-%d-" % (codec.encode(), i) * 20, key=b"k%d" % i, partition=0,
                    headers=(("codec", codec.encode()),)) for i in range(25)]
        client.produce(topic, msgs, codec)
        sent += msgs
    batches = batch_headers(fetch_once(b.address, topic, 0, 0, max_bytes=16 << 20).records)
    assert sum(x.record_count for x in batches) == 100
    assert {x.compression for x in batches} == {CODEC_IDS["zstd"]}, batches

    for reader in (client, KafkaPythonClient(b.bootstrap)):
        got = reader.read(topic, 1, "earliest")
        assert [(r.offset, r.key, r.value, r.headers) for r in got] == \
            [(i, m.key, m.value, m.headers) for i, m in enumerate(sent)], reader.name

    # The segment file itself holds zstd batches; `headrace log dump` decodes them.
    r = ok(run("log", "dump", "--json", str(b.data_dir / f"{topic}-0" / "00000000000000000000.log")))
    dumped = [json.loads(line) for line in r.stdout.splitlines()]
    assert {d["compression"] for d in dumped} == {"zstd"} and all(d["valid"] for d in dumped)
    assert [(rec["offset"], rec["value"]) for d in dumped for rec in d["records"]] == \
        [(i, m.value.decode()) for i, m in enumerate(sent)]


def test_log_append_time_topic_hands_out_the_brokers_time(module_broker):
    from confluent_kafka import TIMESTAMP_LOG_APPEND_TIME, OFFSET_BEGINNING, TopicPartition
    b = module_broker
    topic = "log-append-time"
    client = ConfluentClient(b.bootstrap)
    client.create_topic(topic, 1, **{"message.timestamp.type": "LogAppendTime"})
    old = _now_ms() - 7 * 24 * 3600 * 1000
    before = _now_ms()
    for codec in ("none", "lz4"):
        _produce_one_batch(b.bootstrap, topic, codec, [old + i for i in range(20)])
    after = _now_ms()
    c = client.consumer()
    try:
        c.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
        msgs = []
        deadline = time.monotonic() + TIMEOUT_S
        while len(msgs) < 40 and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is not None:
                assert m.error() is None, m.error()
                msgs.append(m)
        assert [m.offset() for m in msgs] == list(range(40))
        for m in msgs:
            ts_type, ts = m.timestamp()
            assert ts_type == TIMESTAMP_LOG_APPEND_TIME
            assert before - 5 <= ts <= after + 5, (ts, before, after)
        # Offset-for-time works on the broker's times, not the producer's.
        r = c.offsets_for_times([TopicPartition(topic, 0, old + 5)], timeout=TIMEOUT_S)
        assert r[0].offset == 0
    finally:
        c.close()


def test_records_outside_the_timestamp_bounds_get_invalid_timestamp(module_broker):
    from confluent_kafka import KafkaError, Producer
    b = module_broker
    topic = "timestamp-bounds"
    client = ConfluentClient(b.bootstrap)
    client.create_topic(topic, 1, **{"message.timestamp.before.max.ms": "3600000",
                                     "message.timestamp.after.max.ms": "60000"})
    now = _now_ms()
    p = Producer({"bootstrap.servers": b.bootstrap, "acks": "all", "compression.type": "zstd",
                  "message.timeout.ms": 30000, "linger.ms": 0})
    results = {}
    for name, ts in [("too-old", now - 2 * 3600 * 1000), ("too-new", now + 3600 * 1000),
                     ("fine", now - 1800 * 1000)]:
        p.produce(topic, value=name.encode(), partition=0, timestamp=ts,
                  on_delivery=lambda err, m, name=name: results.__setitem__(name, err))
        assert p.flush(TIMEOUT_S) == 0
    assert results["too-old"] is not None and results["too-old"].code() == \
        KafkaError.INVALID_TIMESTAMP, results
    assert results["too-new"] is not None and results["too-new"].code() == \
        KafkaError.INVALID_TIMESTAMP, results
    assert results["fine"] is None
    # Raw Produce: the partition's error code, nothing appended.
    with Connection(b.address) as conn:
        old = encode_batch([(None, b"x")], base_timestamp=now - 2 * 3600 * 1000)
        assert produce_v3(conn, topic, 0, old) == (ERR_INVALID_TIMESTAMP, -1)
    fp = fetch_once(b.address, topic, 0, 0)
    assert fp.high_watermark == 1


def _zstd_batch(records, record_count=None) -> bytes:
    """encode_batch's records compressed with zstd; record_count overrides the header's."""
    plain = bytearray(encode_batch(records, base_timestamp=_now_ms()))
    packed = zstandard.ZstdCompressor().compress(bytes(plain[HEADER_SIZE:]))
    head = plain[:HEADER_SIZE]
    (attrs,) = struct.unpack_from(">h", head, ATTRIBUTES_OFFSET)
    struct.pack_into(">h", head, ATTRIBUTES_OFFSET, attrs | CODEC_IDS["zstd"])
    if record_count is not None:
        struct.pack_into(">i", head, 23, record_count - 1)  # last offset delta
        struct.pack_into(">i", head, 57, record_count)
    out = head + packed
    struct.pack_into(">i", out, 8, len(out) - 12)
    struct.pack_into(">I", out, CRC_OFFSET, crc32c.crc32c(bytes(out[ATTRIBUTES_OFFSET:])))
    return bytes(out)


def test_bad_compressed_batches_are_refused_and_nothing_is_appended(module_broker):
    b = module_broker
    topic = "bad-compressed"
    ConfluentClient(b.bootstrap).create_topic(topic, 1)
    recs = [(b"k%d" % i, b"v%d" % i) for i in range(5)]
    with Connection(b.address) as conn:
        assert produce_v3(conn, topic, 0, _zstd_batch(recs)) == (0, 0)
        # The zstd bit on records that are not zstd (CRC correct): CORRUPT_MESSAGE.
        fake = bytearray(encode_batch(recs))
        struct.pack_into(">h", fake, ATTRIBUTES_OFFSET, CODEC_IDS["zstd"])
        struct.pack_into(">I", fake, CRC_OFFSET, crc32c.crc32c(bytes(fake[ATTRIBUTES_OFFSET:])))
        assert produce_v3(conn, topic, 0, bytes(fake)) == (ERR_CORRUPT_MESSAGE, -1)
        # A header claiming 6 records over 5 compressed ones: INVALID_RECORD.
        assert produce_v3(conn, topic, 0, _zstd_batch(recs, record_count=6)) == \
            (ERR_INVALID_RECORD, -1)
        # A payload cut short: CORRUPT_MESSAGE.
        whole = _zstd_batch(recs)
        cut = bytearray(whole[:-4])
        struct.pack_into(">i", cut, 8, len(cut) - 12)
        struct.pack_into(">I", cut, CRC_OFFSET, crc32c.crc32c(bytes(cut[ATTRIBUTES_OFFSET:])))
        assert produce_v3(conn, topic, 0, bytes(cut)) == (ERR_CORRUPT_MESSAGE, -1)
    fp = fetch_once(b.address, topic, 0, 0)
    assert fp.error_code == 0 and fp.high_watermark == 5
    assert sum(x.record_count for x in batch_headers(fp.records)) == 5


def test_broker_compression_type_is_the_default_of_topics_without_an_override(broker_factory):
    from confluent_kafka.admin import ConfigResource, ConfigSource
    from broker_kafka_clients import Out
    b = broker_factory(None, "--set", "compression.type=lz4")
    client = ConfluentClient(b.bootstrap)
    client.create_topic("inherits-lz4", 1)
    client.create_topic("keeps-producer", 1, **{"compression.type": "producer"})
    msgs = [Out(b"value-%d" % i * 10, partition=0) for i in range(30)]
    for topic, stored in (("inherits-lz4", "lz4"), ("keeps-producer", "gzip")):
        client.produce(topic, msgs, "gzip")
        batches = batch_headers(fetch_once(b.address, topic, 0, 0).records)
        assert sum(x.record_count for x in batches) == 30
        assert {x.compression for x in batches} == {CODEC_IDS[stored]}, (topic, batches)
        assert [r.value for r in client.read(topic, 1, "earliest")] == [m.value for m in msgs]
    admin = client.admin()
    res = ConfigResource(ConfigResource.Type.TOPIC, "inherits-lz4")
    entry = admin.describe_configs([res])[res].result(TIMEOUT_S)["compression.type"]
    assert entry.value == "lz4"
    assert entry.source == ConfigSource.STATIC_BROKER_CONFIG.value
