"""Consumer groups end to end: real clients in separate processes against a
real `headrace broker` (issue 4, "What the tests must show").

Each group member is this file run as a script (`python test_groups_e2e.py
member ...`): it subscribes with one client library (confluent-kafka eager or
cooperative-sticky, kafka-python, aiokafka) and prints one JSON line per event
on stdout: {"ev": "assigned", "parts": [...]} whenever its assignment changes
and {"ev": "msg", "p": .., "o": .., "v": ..} per record. The tests read those
lines. Session timeouts are short (6 s) so the whole file stays fast.
"""
from __future__ import annotations

import os
import signal
import sys
import threading
import time

SESSION_MS = 6000


# --------------------------------------------------------------------------- member process
from member_process import emit as _emit  # noqa: E402


def _run_confluent(a, stop):
    from confluent_kafka import Consumer
    conf = {"bootstrap.servers": a["bootstrap"], "group.id": a["group"],
            "session.timeout.ms": SESSION_MS, "heartbeat.interval.ms": 500,
            "auto.offset.reset": a["reset"], "enable.auto.commit": True,
            "auto.commit.interval.ms": 200, "fetch.wait.max.ms": 100,
            "partition.assignment.strategy": a["strategy"]}
    if a["instance"]:
        conf["group.instance.id"] = a["instance"]
    c = Consumer(conf)
    c.subscribe([a["topic"]])
    last = None
    while not stop.is_set():
        m = c.poll(0.2)
        if m is not None and m.error() is None:
            _emit({"ev": "msg", "p": m.partition(), "o": m.offset(), "v": m.value().decode()})
        parts = sorted(tp.partition for tp in c.assignment())
        if parts != last:
            last = parts
            _emit({"ev": "assigned", "parts": parts})
    if a["instance"]:
        return  # a static member leaves without LeaveGroup: exit as if restarted
    c.close()


def _run_kafka_python(a, stop):
    from kafka import KafkaConsumer
    c = KafkaConsumer(a["topic"], bootstrap_servers=a["bootstrap"], group_id=a["group"],
                      session_timeout_ms=SESSION_MS, heartbeat_interval_ms=500,
                      max_poll_interval_ms=10000,  # rebalance timeout (default 300 s)
                      auto_offset_reset=a["reset"], enable_auto_commit=True,
                      auto_commit_interval_ms=200, fetch_max_wait_ms=100)
    last = None
    while not stop.is_set():
        # Not shorter: kafka-python 3.0.12 never re-enables its heartbeat when
        # poll()'s timer runs out while the leader's SyncGroup is in flight
        # (docs/compatibility.md, "Known client issues"); with 200 ms polls
        # that hit about one group in seven here, with 1 s none in 20.
        for tp, msgs in c.poll(timeout_ms=1000).items():
            for m in msgs:
                _emit({"ev": "msg", "p": m.partition, "o": m.offset, "v": m.value.decode()})
        parts = sorted(tp.partition for tp in c.assignment())
        if parts != last:
            last = parts
            _emit({"ev": "assigned", "parts": parts})
    c.close()


def _run_aiokafka(a, stop):
    import asyncio
    from aiokafka import AIOKafkaConsumer

    async def main():
        c = AIOKafkaConsumer(a["topic"], bootstrap_servers=a["bootstrap"], group_id=a["group"],
                             session_timeout_ms=SESSION_MS, heartbeat_interval_ms=500,
                             auto_offset_reset=a["reset"], enable_auto_commit=True,
                             auto_commit_interval_ms=200, fetch_max_wait_ms=100)
        await c.start()
        last = None
        try:
            while not stop.is_set():
                for tp, msgs in (await c.getmany(timeout_ms=200)).items():
                    for m in msgs:
                        _emit({"ev": "msg", "p": m.partition, "o": m.offset,
                               "v": m.value.decode()})
                parts = sorted(tp.partition for tp in c.assignment())
                if parts != last:
                    last = parts
                    _emit({"ev": "assigned", "parts": parts})
        finally:
            await c.stop()

    asyncio.run(main())


def _member_main(argv):
    keys = ["client", "bootstrap", "topic", "group", "reset", "strategy", "instance"]
    a = dict(zip(keys, argv))
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    {"confluent": _run_confluent, "kafka-python": _run_kafka_python,
     "aiokafka": _run_aiokafka}[a["client"]](a, stop)


if __name__ == "__main__" and len(sys.argv) > 1 and sys.argv[1] == "member":
    _member_main(sys.argv[2:])
    sys.exit(0)

# --------------------------------------------------------------------------- test side
import pytest  # noqa: E402

from broker_kafka_clients import ConfluentClient, Out  # noqa: E402
from broker_process import GROUP_ARGS, shared_broker  # noqa: E402
from member_process import MemberProcess, member_fixture  # noqa: E402
from member_process import wait_for as _wait_for  # noqa: E402

WAIT_S = 60.0


class Member(MemberProcess):
    """One member process and what it has reported."""

    def __init__(self, bootstrap, topic, group, client="confluent", reset="earliest",
                 strategy="range", instance=""):
        self.parts: list[int] | None = None
        self.assign_events: list[list[int]] = []
        self.values: list[str] = []
        super().__init__([sys.executable, os.path.abspath(__file__), "member", client, bootstrap,
                          topic, group, reset, strategy, instance])

    def on_event(self, ev):
        if ev["ev"] == "assigned":
            self.parts = ev["parts"]
            self.assign_events.append(ev["parts"])
        else:
            self.values.append(ev["v"])

    def history(self):
        return str(self.assign_events)


members = member_fixture(Member)


@pytest.fixture(scope="module")
def gbroker(tmp_path_factory):
    yield from shared_broker(tmp_path_factory, "groups-broker", *GROUP_ARGS)


def wait_for(pred, what, timeout=WAIT_S, ms=()):
    """Polls `pred`; on timeout the message lists each member's assignments."""
    _wait_for(pred, what, timeout, ms, poll=0.1)


def exclusive_cover(ms, partitions):
    """Every partition owned by exactly one live member."""
    owned = [p for m in ms for p in (m.parts or [])]
    return sorted(owned) == list(range(partitions))


def produce(bootstrap, topic, n, start=0, partitions=6):
    ConfluentClient(bootstrap).produce(
        topic, [Out(value=f"m{i}".encode(), partition=i % partitions) for i in range(start, start + n)])
    return {f"m{i}" for i in range(start, start + n)}


def seen(ms):
    out = set()
    for m in ms:
        with m.lock:
            out.update(m.values)
    return out


def create(bootstrap, topic, partitions):
    ConfluentClient(bootstrap).create_topic(topic, partitions)


# --------------------------------------------------------------------------- tests
def test_three_members_own_exclusive_partitions_and_a_seventh_idles(gbroker, members):
    create(gbroker.bootstrap, "g-six", 6)
    three = [members(gbroker.bootstrap, "g-six", "trio") for _ in range(3)]
    wait_for(lambda: exclusive_cover(three, 6) and all(len(m.parts or []) == 2 for m in three),
             "3 members x 2 partitions")
    seven = [members(gbroker.bootstrap, "g-six", "seven") for _ in range(7)]
    wait_for(lambda: exclusive_cover(seven, 6) and
             sorted(len(m.parts or []) for m in seven) == [0, 1, 1, 1, 1, 1, 1],
             "7 members: six own one partition, one idles")


def test_kill_9_moves_partitions_and_no_message_is_lost(gbroker, members):
    create(gbroker.bootstrap, "g-kill", 6)
    ms = [members(gbroker.bootstrap, "g-kill", "killers") for _ in range(3)]
    wait_for(lambda: exclusive_cover(ms, 6) and all(len(m.parts or []) == 2 for m in ms), "stable trio")
    expected = produce(gbroker.bootstrap, "g-kill", 60)
    wait_for(lambda: seen(ms) >= expected, "first 60 consumed")
    victim, rest = ms[0], ms[1:]
    victim.kill()
    killed_at = time.monotonic()
    expected |= produce(gbroker.bootstrap, "g-kill", 60, start=60)
    wait_for(lambda: exclusive_cover(rest, 6), "survivors own all 6 partitions",
             timeout=SESSION_MS / 1000 + 15)
    moved_after = time.monotonic() - killed_at
    assert moved_after < SESSION_MS / 1000 + 10, moved_after
    wait_for(lambda: seen(ms) >= expected, "every message consumed (at least once)")


def test_committed_offsets_survive_restart_and_reset_applies_only_without_commit(
        broker_factory, members, tmp_path):
    b = broker_factory(tmp_path / "data", *GROUP_ARGS)
    create(b.bootstrap, "g-resume", 6)
    first = produce(b.bootstrap, "g-resume", 30)
    m = members(b.bootstrap, "g-resume", "resumers")
    wait_for(lambda: seen([m]) >= first, "first 30 consumed")
    time.sleep(1.0)  # auto commit interval 200 ms; close commits too
    m.stop()
    b.restart()
    second = produce(b.bootstrap, "g-resume", 30, start=30)
    # Committed offsets win over auto.offset.reset=earliest: only the new 30.
    again = members(b.bootstrap, "g-resume", "resumers", reset="earliest")
    wait_for(lambda: seen([again]) >= second, "resumed after restart")
    time.sleep(1.0)
    assert seen([again]) == second
    # A group with no commit: latest applies and the old records are skipped.
    fresh = members(b.bootstrap, "g-resume", "fresh-latest", reset="latest")
    wait_for(lambda: exclusive_cover([fresh], 6), "fresh member assigned")
    time.sleep(2.0)
    third = produce(b.bootstrap, "g-resume", 12, start=60)
    wait_for(lambda: seen([fresh]) >= third, "latest consumer sees only new records")
    assert seen([fresh]) == third


@pytest.mark.parametrize("client,strategy", [("confluent", "cooperative-sticky"),
                                             ("kafka-python", ""), ("aiokafka", "")])
def test_client_groups_share_and_consume_everything(gbroker, members, client, strategy):
    topic = f"g-client-{client}"
    create(gbroker.bootstrap, topic, 6)
    ms = [members(gbroker.bootstrap, topic, f"grp-{client}", client=client,
                  strategy=strategy or "range") for _ in range(2)]
    wait_for(lambda: exclusive_cover(ms, 6) and all(len(m.parts or []) == 3 for m in ms),
             f"{client}: two members x 3 partitions", ms=ms)
    expected = produce(gbroker.bootstrap, topic, 40)
    wait_for(lambda: seen(ms) >= expected, f"{client}: all consumed")


def test_static_member_rejoins_without_rebalance(gbroker, members):
    create(gbroker.bootstrap, "g-static", 6)
    a = members(gbroker.bootstrap, "g-static", "statics", instance="static-a")
    b = members(gbroker.bootstrap, "g-static", "statics", instance="static-b")
    wait_for(lambda: exclusive_cover([a, b], 6) and len(a.parts or []) == 3, "two static members")
    a_parts = list(a.parts)
    time.sleep(2.0)
    b_events = len(b.assign_events)
    a.stop()  # exits without LeaveGroup, like a restarted static member
    a2 = members(gbroker.bootstrap, "g-static", "statics", instance="static-a")
    wait_for(lambda: a2.parts == a_parts, "restarted static member gets its old partitions")
    time.sleep(3.0)
    assert len(b.assign_events) == b_events, f"b was rebalanced: {b.assign_events}"
