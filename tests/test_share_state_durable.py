"""Durable share state on a single node (KIP-932, issue 31 item 2): the
share coordinator keeps every share-partition's state in
__share_group_state, and a broker SIGKILLed mid-stream comes back with it.
Acknowledged (ACCEPTed) and rejected records are never delivered again;
records delivered but not acknowledged come back with their delivery count
carried on; records produced after the restart follow. DeleteGroups deletes
the stored state, durably.

confluent-kafka's ShareConsumer in explicit acknowledgement mode against a
real broker process; commit_sync returns only once the broker answered the
acknowledgements, which it does once the state is committed.
"""
from __future__ import annotations

import time
import uuid

import pytest
from confluent_kafka import AcknowledgeType, Producer, ShareConsumer
from confluent_kafka.admin import AdminClient, NewTopic

from test_group_configs import TIMEOUT_S, _alter

LOCK_MS = 15000  # no lock expires during a test: what comes back is the restart's doing


@pytest.fixture
def b(broker_factory):
    return broker_factory(None, "--set", f"group.share.record.lock.duration.ms={LOCK_MS}",
                          "--set", "group.share.heartbeat.interval.ms=500")


def _admin(b) -> AdminClient:
    return AdminClient({"bootstrap.servers": b.bootstrap, "log_level": 0})


def _consumer(b, group) -> ShareConsumer:
    return ShareConsumer({"bootstrap.servers": b.bootstrap, "group.id": group,
                          "share.acknowledgement.mode": "explicit", "log_level": 0})


def _setup(b, n: int) -> tuple[str, str]:
    """A 1-partition topic with records v-0..v-(n-1) and a group reading it
    from the earliest offset."""
    topic = "durable-" + uuid.uuid4().hex[:8]
    group = "sg-durable-" + uuid.uuid4().hex[:6]
    admin = _admin(b)
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(TIMEOUT_S)
    _alter(admin, group, {"share.auto.offset.reset": "earliest"})
    _produce(b, topic, [f"v-{i}" for i in range(n)])
    return topic, group


def _produce(b, topic, values):
    p = Producer({"bootstrap.servers": b.bootstrap, "linger.ms": 0})
    for v in values:
        p.produce(topic, value=v.encode())
    p.flush(TIMEOUT_S)


def _receive(c, want: int, ack=None, timeout=TIMEOUT_S) -> dict[str, int]:
    """Polls until `want` distinct records arrived; {value: delivery count}.
    `ack(value)` picks each record's acknowledgement (None: leave it)."""
    got: dict[str, int] = {}
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and len(got) < want:
        batch = c.poll(0.5)
        for m in batch:
            assert m.error() is None, m.error()
            v = m.value().decode()
            assert v not in got, f"{v} delivered twice"
            got[v] = m.delivery_count()
            kind = ack(v) if ack else None
            if kind is not None:
                c.acknowledge(m, kind)
        if batch and ack:
            c.commit_sync(TIMEOUT_S)
    return got


def _quiet(c, seconds: float) -> list[str]:
    """What arrives within `seconds` (expected: nothing)."""
    out = []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        out += [m.value().decode() for m in c.poll(0.5)]
    return out


def _kind(v: str):
    i = int(v.split("-")[1])
    return {0: AcknowledgeType.ACCEPT, 1: AcknowledgeType.ACCEPT,
            2: AcknowledgeType.REJECT, 3: None}[i % 4]


def test_acknowledged_records_stay_acknowledged_across_a_sigkill(b):
    n = 200
    topic, group = _setup(b, n)
    c = _consumer(b, group)
    c.subscribe([topic])
    first = _receive(c, n, ack=_kind)
    assert len(first) == n and set(first.values()) == {1}
    held = {v for v in first if _kind(v) is None}
    assert len(held) == n // 4

    b.kill()  # mid-stream: 50 records acquired and not acknowledged
    b.start_again()
    try:
        c.close()
    except Exception:
        pass  # its broker went away under it
    _produce(b, topic, [f"after-{i}" for i in range(10)])

    c2 = _consumer(b, group)
    try:
        c2.subscribe([topic])
        again = _receive(c2, len(held) + 10, ack=lambda v: AcknowledgeType.ACCEPT)
        redelivered = {v: k for v, k in again.items() if v.startswith("v-")}
        new = {v: k for v, k in again.items() if v.startswith("after-")}
        # Exactly the unacknowledged records come back (none lost), with the
        # delivery count they had carried on; nothing accepted or rejected.
        assert set(redelivered) == held, sorted(set(redelivered) ^ held)
        assert set(redelivered.values()) == {2}, redelivered
        assert set(new) == {f"after-{i}" for i in range(10)} and set(new.values()) == {1}
        assert _quiet(c2, 3.0) == []
    finally:
        c2.close()

    # All acknowledged now: a second crash brings nothing back.
    b.kill()
    b.start_again()
    c3 = _consumer(b, group)
    try:
        c3.subscribe([topic])
        _produce(b, topic, ["last"])
        assert _receive(c3, 1, ack=lambda v: AcknowledgeType.ACCEPT) == {"last": 1}
        assert _quiet(c3, 2.0) == []
    finally:
        c3.close()
    assert "share coordinator: loaded 1 share-partition state(s)" in b.stderr, b.stderr[-3000:]


def test_deleting_the_group_deletes_its_stored_state(b):
    n = 20
    topic, group = _setup(b, n)
    c = _consumer(b, group)
    c.subscribe([topic])
    assert len(_receive(c, n, ack=lambda v: AcknowledgeType.ACCEPT)) == n
    c.close()
    admin = _admin(b)
    deadline = time.monotonic() + TIMEOUT_S
    while True:  # the member's leave reaches the coordinator asynchronously
        fut = admin.delete_consumer_groups([group], request_timeout=TIMEOUT_S)[group]
        try:
            fut.result(TIMEOUT_S)
            break
        except Exception as e:  # NON_EMPTY_GROUP until the member left
            assert "NON_EMPTY" in str(e) and time.monotonic() < deadline, e
            time.sleep(0.2)
    b.kill()
    b.start_again()
    # The group configs went with the group (as Kafka): set earliest again.
    _alter(_admin(b), group, {"share.auto.offset.reset": "earliest"})
    c2 = _consumer(b, group)
    try:
        c2.subscribe([topic])
        again = _receive(c2, n, ack=lambda v: AcknowledgeType.ACCEPT)
        assert sorted(again) == sorted(f"v-{i}" for i in range(n))
        assert set(again.values()) == {1}
    finally:
        c2.close()
