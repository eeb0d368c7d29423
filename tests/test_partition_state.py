"""The partition state machine seen by real clients (confluent-kafka): what
is acknowledged to acks=all is committed and visible at once,
min.insync.replicas is applied against the ISR, and a produce that cannot be
committed in time gets REQUEST_TIMED_OUT-class errors, never an ack.

docs/durability.md states the policy these tests check."""
from __future__ import annotations

import uuid

import pytest

from broker_process import shared_broker


@pytest.fixture(scope="module")
def pbroker(tmp_path_factory):
    yield from shared_broker(tmp_path_factory, "partition-state")


def _topic(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def _create(bootstrap: str, topic: str, **configs: str) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1, config=configs)])[topic].result(30)


def _produce(bootstrap: str, topic: str, n: int, **conf) -> list[tuple[str | None, int]]:
    """Produces n values; returns (error name or None, offset) per delivery."""
    from confluent_kafka import Producer
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, **conf})
    reports: list[tuple[str | None, int]] = []
    for i in range(n):
        p.produce(topic, value=f"v{i}".encode(),
                  on_delivery=lambda err, msg: reports.append(
                      (err.name() if err else None, msg.offset())))
    assert p.flush(30) == 0
    return reports


def _watermarks(bootstrap: str, topic: str) -> tuple[int, int]:
    from confluent_kafka import Consumer, TopicPartition
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "wm"})
    try:
        return c.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)
    finally:
        c.close()


def test_an_acks_all_acknowledgement_means_committed_and_visible(pbroker):
    topic = _topic("visible")
    _create(pbroker.bootstrap, topic)
    reports = _produce(pbroker.bootstrap, topic, 200, acks="all")
    assert [e for e, _ in reports] == [None] * 200
    assert sorted(o for _, o in reports) == list(range(200))
    # Asked right after the last ack: the high watermark already covers it.
    assert _watermarks(pbroker.bootstrap, topic) == (0, 200)


def test_min_insync_replicas_above_the_isr_refuses_acks_all(pbroker):
    topic = _topic("minisr")
    _create(pbroker.bootstrap, topic, **{"min.insync.replicas": "2"})
    # retries=0: librdkafka retries this retriable error until message.timeout.ms
    # otherwise, and then reports only _MSG_TIMED_OUT.
    refused = _produce(pbroker.bootstrap, topic, 5, acks="all", retries=0)
    assert [e for e, _ in refused] == ["NOT_ENOUGH_REPLICAS"] * 5
    assert _watermarks(pbroker.bootstrap, topic) == (0, 0)  # nothing appended
    accepted = _produce(pbroker.bootstrap, topic, 5, acks=1)
    assert [e for e, _ in accepted] == [None] * 5
    # A topic without the setting on the same broker is unaffected.
    plain = _topic("plain")
    _create(pbroker.bootstrap, plain)
    assert [e for e, _ in _produce(pbroker.bootstrap, plain, 3, acks="all")] == [None] * 3


def test_acks_one_records_become_visible_after_the_flusher_commits_them(pbroker):
    from confluent_kafka import Consumer, TopicPartition
    topic = _topic("acks1")
    _create(pbroker.bootstrap, topic)
    reports = _produce(pbroker.bootstrap, topic, 50, acks=1)
    assert [e for e, _ in reports] == [None] * 50
    c = Consumer({"bootstrap.servers": pbroker.bootstrap, "group.id": "acks1",
                  "enable.auto.commit": False})
    try:
        c.assign([TopicPartition(topic, 0, 0)])
        got = []
        for _ in range(100):
            got += [m.value() for m in c.consume(50, timeout=0.2) if not m.error()]
            if len(got) == 50:
                break
        assert got == [f"v{i}".encode() for i in range(50)]
    finally:
        c.close()


def test_a_consumer_never_sees_records_that_are_not_flushed(broker_factory, tmp_path, monkeypatch):
    """The flusher is held for real: every fsync of the partition's files
    waits while a file exists (HEADRACE_FAULT_INJECT ...:hold=FILE). Records
    produced with acks=1 are acknowledged (appended) but must stay invisible
    to consumers — high watermark 0, nothing fetched — until the fsync is let
    go; an acks=all produce is not acknowledged while held."""
    from confluent_kafka import Consumer, Producer, TopicPartition
    topic = "held"
    hold = tmp_path / "hold-fsyncs"
    monkeypatch.setenv("HEADRACE_FAULT_INJECT", f"fsync:path={topic}-0/:hold={hold}")
    broker = broker_factory(tmp_path / "data")
    monkeypatch.delenv("HEADRACE_FAULT_INJECT")
    _create(broker.bootstrap, topic)
    hold.touch()  # from now on the partition's fsyncs wait
    assert [e for e, _ in _produce(broker.bootstrap, topic, 20, acks=1)] == [None] * 20

    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "held",
                  "enable.auto.commit": False, "fetch.wait.max.ms": 100})
    p = Producer({"bootstrap.servers": broker.bootstrap, "acks": "all", "linger.ms": 0})
    acked_all: list = []
    try:
        c.assign([TopicPartition(topic, 0, 0)])
        seen = [m for m in c.consume(100, timeout=1.5) if not m.error()]
        assert seen == [], "a consumer read records that were not fsynced"
        assert c.get_watermark_offsets(TopicPartition(topic, 0), timeout=10) == (0, 0)
        p.produce(topic, value=b"all", on_delivery=lambda err, msg: acked_all.append(err))
        p.poll(1.0)
        assert acked_all == [], "acks=all was acknowledged before its fsync"

        hold.unlink()  # the held fsync completes; the HW moves
        assert p.flush(30) == 0 and acked_all == [None]
        got = []
        for _ in range(100):
            got += [m.value() for m in c.consume(100, timeout=0.2) if not m.error()]
            if len(got) == 21:
                break
        assert got == [f"v{i}".encode() for i in range(20)] + [b"all"]
    finally:
        c.close()
