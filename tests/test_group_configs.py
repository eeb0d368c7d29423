"""Group configs on the GROUP config resource (Kafka 4.x, KIP-848/KIP-932;
issue 31): confluent-kafka's AdminClient sets, describes and deletes them
(IncrementalAlterConfigs / DescribeConfigs on ResourceType.GROUP, sent as
resource type 32), with Kafka's refusals (INVALID_CONFIG for an unknown key,
a bad value, a value outside the broker's group.* bounds); they survive a
restart; share.auto.offset.reset=earliest makes a share consumer receive
records produced before it joined (latest does not); DeleteGroups of the
group removes them.
"""
from __future__ import annotations

import time
import uuid

import pytest
from confluent_kafka import AcknowledgeType, KafkaException, Producer, ShareConsumer
from confluent_kafka.admin import (AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource,
                                   NewTopic, ResourceType)

from broker_process import shared_broker
from test_share_consume import _records

TIMEOUT_S = 30
DYNAMIC_GROUP_CONFIG = 8  # DescribeConfigs ConfigSource
DEFAULT_CONFIG = 5
STATIC_BROKER_CONFIG = 4


@pytest.fixture(scope="module")
def b(tmp_path_factory):
    # group.share.delivery.count.limit set in the broker's properties: the
    # group config's default then comes from there (STATIC_BROKER_CONFIG).
    yield from shared_broker(tmp_path_factory, "group-configs",
                             "--set", "group.share.delivery.count.limit=4",
                             "--set", "group.share.heartbeat.interval.ms=500",
                             "--set", "group.share.min.record.lock.duration.ms=1000")


def _admin(b) -> AdminClient:
    return AdminClient({"bootstrap.servers": b.bootstrap, "log_level": 0})


def _alter(admin, group, ops: dict[str, str | None], validate_only=False):
    entries = [ConfigEntry(k, v, incremental_operation=(
        AlterConfigOpType.DELETE if v is None else AlterConfigOpType.SET)) for k, v in ops.items()]
    res = ConfigResource(ResourceType.GROUP, group, incremental_configs=entries)
    return admin.incremental_alter_configs([res], validate_only=validate_only)[res].result(TIMEOUT_S)


def _describe(admin, group) -> dict:
    res = ConfigResource(ResourceType.GROUP, group)
    return admin.describe_configs([res])[res].result(TIMEOUT_S)


def _error(fn) -> tuple[str, str]:
    with pytest.raises(KafkaException) as e:
        fn()
    err = e.value.args[0]
    return err.name(), err.str()


KEYS = {"consumer.heartbeat.interval.ms", "consumer.session.timeout.ms",
        "share.auto.offset.reset", "share.delivery.count.limit", "share.heartbeat.interval.ms",
        "share.isolation.level", "share.partition.max.record.locks",
        "share.record.lock.duration.ms", "share.session.timeout.ms"}


def test_set_describe_delete_round_trip_with_sources(b):
    admin = _admin(b)
    group = "gc-" + uuid.uuid4().hex[:6]  # no such group yet: configs are allowed
    before = _describe(admin, group)
    assert set(before) == KEYS
    assert before["share.auto.offset.reset"].value == "latest"
    assert before["share.auto.offset.reset"].source == DEFAULT_CONFIG
    assert before["share.record.lock.duration.ms"].value == "30000"
    assert before["share.delivery.count.limit"].value == "4"
    assert before["share.delivery.count.limit"].source == STATIC_BROKER_CONFIG

    _alter(admin, group, {"share.auto.offset.reset": "earliest"}, validate_only=True)
    assert _describe(admin, group)["share.auto.offset.reset"].value == "latest"

    _alter(admin, group, {"share.auto.offset.reset": "earliest",
                          "share.record.lock.duration.ms": "20000",
                          "share.delivery.count.limit": "3"})
    after = _describe(admin, group)
    for key, value in (("share.auto.offset.reset", "earliest"),
                       ("share.record.lock.duration.ms", "20000"),
                       ("share.delivery.count.limit", "3")):
        assert (after[key].value, after[key].source) == (value, DYNAMIC_GROUP_CONFIG), key
    assert after["share.session.timeout.ms"].source == DEFAULT_CONFIG

    _alter(admin, group, {"share.record.lock.duration.ms": None})  # DELETE: back to the default
    again = _describe(admin, group)
    assert again["share.record.lock.duration.ms"].value == "30000"
    assert again["share.record.lock.duration.ms"].source == DEFAULT_CONFIG
    assert again["share.auto.offset.reset"].value == "earliest"
    assert _describe(admin, "gc-other-" + group)["share.auto.offset.reset"].value == "latest"


@pytest.mark.parametrize("key,value,needle", [
    ("share.no.such.key", "1", "Unknown group config name: share.no.such.key"),
    ("share.auto.offset.reset", "newest", "share.auto.offset.reset"),
    ("share.auto.offset.reset", "by_duration:1h", "ISO-8601"),
    ("share.record.lock.duration.ms", "abc", "INT"),
    ("share.record.lock.duration.ms", "60001", "group.share.max.record.lock.duration.ms"),
    ("share.record.lock.duration.ms", "999", "at least 1000"),
    ("share.delivery.count.limit", "11", "share.delivery.count.limit"),
    ("share.partition.max.record.locks", "99", "share.partition.max.record.locks"),
    ("consumer.session.timeout.ms", "1000", "group.consumer.min.session.timeout.ms"),
    ("share.isolation.level", "committed", "read_committed, read_uncommitted"),
])
def test_bad_keys_and_values_are_invalid_config(b, key, value, needle):
    admin = _admin(b)
    group = "gc-bad-" + uuid.uuid4().hex[:6]
    name, message = _error(lambda: _alter(admin, group, {key: value}))
    assert name == "INVALID_CONFIG", (name, message)
    assert needle in message, message
    if key in KEYS:  # nothing was set
        assert _describe(admin, group)[key].source != DYNAMIC_GROUP_CONFIG


def test_by_duration_is_accepted(b):
    admin = _admin(b)
    group = "gc-dur-" + uuid.uuid4().hex[:6]
    _alter(admin, group, {"share.auto.offset.reset": "by_duration:PT1H"})
    assert _describe(admin, group)["share.auto.offset.reset"].value == "by_duration:PT1H"


def test_group_configs_survive_a_restart(b):
    admin = _admin(b)
    group = "gc-restart-" + uuid.uuid4().hex[:6]
    _alter(admin, group, {"share.auto.offset.reset": "earliest", "share.delivery.count.limit": "2"})
    b.restart()
    admin = _admin(b)
    after = _describe(admin, group)
    assert (after["share.auto.offset.reset"].value,
            after["share.auto.offset.reset"].source) == ("earliest", DYNAMIC_GROUP_CONFIG)
    assert after["share.delivery.count.limit"].value == "2"


def _topic(b) -> str:
    name = "gc-share-" + uuid.uuid4().hex[:8]
    admin = _admin(b)
    admin.create_topics([NewTopic(name, 1, 1)])[name].result(TIMEOUT_S)
    return name


def _produce(b, topic, values):
    p = Producer({"bootstrap.servers": b.bootstrap, "linger.ms": 0})
    for v in values:
        p.produce(topic, value=v.encode())
    p.flush(TIMEOUT_S)


def _poll(consumer, until, timeout=TIMEOUT_S) -> list[str]:
    got: list[str] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and not until(got):
        got.extend(m.value().decode() for m in _records(consumer.poll(0.5)))
    return got


def test_earliest_share_group_receives_records_produced_before_it_joined(b):
    topic = _topic(b)
    before = [f"before-{i}" for i in range(20)]
    _produce(b, topic, before)
    admin = _admin(b)
    early, late = "gc-early-" + uuid.uuid4().hex[:6], "gc-late-" + uuid.uuid4().hex[:6]
    _alter(admin, early, {"share.auto.offset.reset": "earliest"})
    _alter(admin, late, {"share.auto.offset.reset": "latest"})
    c_early = ShareConsumer({"bootstrap.servers": b.bootstrap, "group.id": early})
    c_late = ShareConsumer({"bootstrap.servers": b.bootstrap, "group.id": late})
    try:
        c_early.subscribe([topic])
        c_late.subscribe([topic])
        got = _poll(c_early, lambda g: len(g) >= len(before))
        assert sorted(got) == sorted(before)
        # The latest group's share-partition starts at the high watermark of
        # its first ShareFetch: probes until it has one, then only new records.
        p = Producer({"bootstrap.servers": b.bootstrap, "linger.ms": 0})
        seen: list[str] = []
        deadline = time.monotonic() + TIMEOUT_S
        n = 0
        while not any(v.startswith("probe-") for v in seen):
            assert time.monotonic() < deadline, "the latest group never got a probe"
            p.produce(topic, value=f"probe-{n}".encode())
            p.flush(TIMEOUT_S)
            n += 1
            seen.extend(m.value().decode() for m in _records(c_late.poll(1.0)))
        assert not any(v.startswith("before-") for v in seen), seen
    finally:
        c_early.close()
        c_late.close()

    # DeleteGroups of the (now empty) share group removes its configs.
    deadline = time.monotonic() + TIMEOUT_S
    while True:
        try:
            admin.delete_consumer_groups([early], request_timeout=TIMEOUT_S)[early].result(TIMEOUT_S)
            break
        except KafkaException as e:  # the member's leave may still be on its way
            assert e.args[0].name() == "NON_EMPTY_GROUP", e
            assert time.monotonic() < deadline, "the share group never became empty"
            time.sleep(0.5)
    entry = _describe(admin, early)["share.auto.offset.reset"]
    assert (entry.value, entry.source) == ("latest", DEFAULT_CONFIG)
    assert _describe(admin, late)["share.auto.offset.reset"].source == DYNAMIC_GROUP_CONFIG


def test_a_groups_lock_duration_makes_its_unacknowledged_records_come_back(b):
    """share.record.lock.duration.ms=1500 for the group (the broker's is
    30000): records acquired and not acknowledged are delivered again
    after 1.5 s, with delivery count 2."""
    topic = _topic(b)
    _produce(b, topic, ["rec-0", "rec-1", "rec-2"])
    admin = _admin(b)
    group = "gc-lock-" + uuid.uuid4().hex[:6]
    _alter(admin, group, {"share.auto.offset.reset": "earliest",
                          "share.record.lock.duration.ms": "1500"})
    c = ShareConsumer({"bootstrap.servers": b.bootstrap, "group.id": group,
                       "share.acknowledgement.mode": "explicit"})
    try:
        c.subscribe([topic])
        first = []
        deadline = time.monotonic() + TIMEOUT_S
        while len(first) < 3 and time.monotonic() < deadline:
            first.extend(_records(c.poll(0.5)))
        assert [m.delivery_count() for m in first] == [1, 1, 1]
        time.sleep(2.0)  # past the group's lock, well within the broker's
        for m in first:  # too late: the broker refuses (INVALID_RECORD_STATE)
            c.acknowledge(m, AcknowledgeType.ACCEPT)
        c.commit_sync(10)
        again = []
        deadline = time.monotonic() + TIMEOUT_S
        while len(again) < 3 and time.monotonic() < deadline:
            batch = _records(c.poll(0.5))
            for m in batch:
                c.acknowledge(m, AcknowledgeType.ACCEPT)
            if batch:
                c.commit_sync(10)
            again.extend(batch)
        assert sorted(m.value() for m in again) == [b"rec-0", b"rec-1", b"rec-2"]
        assert all(m.delivery_count() == 2 for m in again)
    finally:
        c.close()


def test_by_duration_starts_at_the_first_record_within_the_duration(b):
    """share.auto.offset.reset=by_duration:PT1H: records stamped two hours
    ago are skipped, the ones stamped now are delivered."""
    topic = _topic(b)
    p = Producer({"bootstrap.servers": b.bootstrap, "linger.ms": 0})
    now_ms = int(time.time() * 1000)
    for i in range(5):
        p.produce(topic, value=f"old-{i}".encode(), timestamp=now_ms - 2 * 3600 * 1000)
    for i in range(5):
        p.produce(topic, value=f"new-{i}".encode(), timestamp=now_ms)
    p.flush(TIMEOUT_S)
    admin = _admin(b)
    group = "gc-bydur-" + uuid.uuid4().hex[:6]
    _alter(admin, group, {"share.auto.offset.reset": "by_duration:PT1H"})
    c = ShareConsumer({"bootstrap.servers": b.bootstrap, "group.id": group})
    try:
        c.subscribe([topic])
        got = _poll(c, lambda g: len(g) >= 5)
        assert sorted(got) == [f"new-{i}" for i in range(5)]
    finally:
        c.close()
