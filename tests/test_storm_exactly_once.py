"""Exactly-once topic -> topic under the Storm harness, against real brokers:
KafkaSpout (exactly_once) -> UpperWithSource (a plain streamparse bolt
passing the source coordinates on) -> KafkaBolt (transactional), each a real
component process, routed and acked by tests/storm_topology.py.

Each run copies uniquely numbered records and counts, with a read_committed
consumer, the records lost and duplicated in the output: 0 / 0 whatever is
SIGKILLed (spout, sink bolt, both) or when the broker is SIGKILLed and
restarted on the same data dir and port; and the spout group's committed
offsets end at the input's end."""
from __future__ import annotations

import time
from collections import Counter

import pytest

from broker_process import GROUP_ARGS
from storm_harness import SpoutTask
from storm_kafka import (FAST_GROUP, SPOUT_FIELDS, committed, create_topic, end_offsets,
                         launch, produce, read_committed_values, unique)
from storm_multilang import base_conf, env_ok
from storm_topology import LinearTopology, components_on_path

pytestmark = pytest.mark.skipif(env_ok() is not None, reason=str(env_ok()))
PARTS = 3
MIDDLE_FIELDS = ["topic", "partition", "offset", "from_offset", "key", "message"]
MESSAGE_TIMEOUT_S = 5


class Run:
    """Topics, records and the three components of one exactly-once run."""

    def __init__(self, broker, tmp, n: int, spout_extra: dict | None = None,
                 middle_extra: dict | None = None, timeout_s: float = MESSAGE_TIMEOUT_S,
                 mode: str = "exactly_once", sink_extra: dict | None = None,
                 default_group: bool = False):
        """mode: the spout's guarantee; the sink is transactional for
        exactly_once, else an acked KafkaBolt."""
        self.broker, self.tmp, self.n, self.mode = broker, tmp, n, mode
        self.src, self.dst, self.group = unique("eos-src"), unique("eos-dst"), unique("eos-g")
        # default_group: the spout uses its default group, the sink derives
        # it from headrace.source_spout (the spout's component id).
        self.default_group = default_group
        if default_group:
            self.group = "headrace-storm-headrace-test-kafka-spout"
        create_topic(broker.bootstrap, self.src, PARTS)
        create_topic(broker.bootstrap, self.dst, PARTS)
        produce(broker.bootstrap, self.src, n, PARTS)
        self.ends = end_offsets(broker.bootstrap, self.src, PARTS)
        self.spout_extra, self.middle_extra = spout_extra or {}, middle_extra or {}
        self.timeout_s = timeout_s
        self.sink_extra = sink_extra or {}
        self.topo = LinearTopology(self._spout, [("middle", self._middle), ("sink", self._sink)],
                                   max_pending=300, message_timeout_s=timeout_s)

    def _conf(self, **extra):
        return base_conf(**{"headrace.brokers": self.broker.bootstrap,
                            "topology.message.timeout.secs": self.timeout_s, **extra})

    def _spout(self) -> SpoutTask:
        conf = self._conf(**{"headrace.topics": self.src, "headrace.guarantee": self.mode,
                             "headrace.consumer": FAST_GROUP, **self.spout_extra})
        if not self.default_group:
            conf["headrace.group"] = self.group
        if self.mode != "exactly_once":
            conf["headrace.commit_period_ms"] = 200
        return SpoutTask(launch("headrace.storm.KafkaSpout", self._dir("spout"), conf,
                                "kafka-spout", 1, SPOUT_FIELDS))

    def _middle(self):
        from storm_harness import BoltTask
        return BoltTask(launch("storm_components.UpperWithSource", self._dir("middle"),
                               self._conf(**self.middle_extra), "middle", 3, MIDDLE_FIELDS,
                               sources={"kafka-spout": SPOUT_FIELDS}))

    def _sink(self):
        from storm_harness import BoltTask
        source = {"headrace.source_spout": "kafka-spout"} if self.default_group else \
            {"headrace.source_group": self.group}
        conf = self._conf(**{"headrace.transactional": True, **source,
                             "headrace.topic": self.dst, "headrace.transaction_interval_ms": 100,
                             **self.sink_extra})
        if self.mode != "exactly_once":
            conf = self._conf(**{"headrace.topic": self.dst})
        return BoltTask(launch("headrace.storm.KafkaBolt", self._dir("sink"), conf, "sink", 5,
                               [], sources={"middle": MIDDLE_FIELDS}))

    def _dir(self, name: str):
        return self.tmp / f"{name}-{time.monotonic_ns()}"

    def mid_flight(self, k: int):
        """At least ``k`` records acked and 100 tuples in flight (a kill now
        hits buffered, unacked and in-transaction tuples); untracked modes:
        ``k`` tuples reached the sink."""
        if self.mode in ("at_most_once", "none"):
            return lambda: self.topo.stage("sink").sent >= k
        sink = self.topo.stage("sink")

        def done() -> bool:
            if len(set(self.topo.acked)) < k:
                return False
            # The sink's acks wait until 100 tuples are in flight: a fast
            # pipeline drains faster than the spout emits otherwise. _kill
            # lets them go.
            sink.held = True
            return len(self.topo.roots) >= 100
        return done

    def committed_to_end(self):
        state = {"next": 0.0}

        def done() -> bool:   # the group read at most every 0.3 s
            if time.monotonic() < state["next"]:
                return False
            state["next"] = time.monotonic() + 0.3
            return committed(self.broker.bootstrap, self.group) == self.ends
        return done

    def count(self, timeout: float = 30.0) -> tuple[int, int, int]:
        """(lost, duplicated, output records) as read_committed reads them."""
        values = read_committed_values(self.broker.bootstrap, self.dst, PARTS, self.n, timeout)
        expect = Counter(f"V{i}".encode() for i in range(self.n))
        got = Counter(values)
        lost = sum(1 for v in expect if v not in got)
        dup = sum(c - 1 for c in got.values() if c > 1) + sum(c for v, c in got.items()
                                                              if v not in expect)
        return lost, dup, len(values)


def _kill(run: Run, what: str) -> None:
    topo = run.topo
    topo.stage("sink").held = False   # mid_flight held its acks back
    if what in ("spout", "both"):
        topo.kill_spout()
    if what in ("sink", "both"):
        topo.kill_bolt("sink")
    if what == "broker":
        run.broker.kill()
        end = time.monotonic() + 2.0   # the topology keeps running against no broker
        while time.monotonic() < end:
            topo.turn() or time.sleep(0.01)
        before = run.broker.bootstrap
        run.broker.start_again()
        assert run.broker.bootstrap == before, "the broker came back on another port"
    if what in ("sink", "both"):
        topo.restart_bolt("sink")
    if what in ("spout", "both"):
        topo.restart_spout()


@pytest.mark.parametrize("fault", ["spout", "sink", "both", "broker"])
def test_exactly_once_topic_to_topic_survives_sigkill(broker_factory, tmp_path, monkeypatch,
                                                       fault):
    components_on_path(monkeypatch)
    broker = broker_factory(tmp_path / "data", *GROUP_ARGS)
    t0 = time.monotonic()
    # Killing the spout (or both): transactions start at 250 tuples, or after
    # 8 s, so what the sink holds at the kill is not committed before the
    # restarted spout (which joins the group once the dead member's 3 s
    # session expired) re-emits it from the committed position: replays join
    # buffered records (spout), or reach the new sink (both).
    slow_txn = {"headrace.transaction_interval_ms": 8000,
                "headrace.transaction_max_tuples": 250} if fault in ("spout", "both") else {}
    run = Run(broker, tmp_path, n=3000, sink_extra=slow_txn)
    topo = run.topo.start()
    try:
        topo.run_until(run.mid_flight(run.n // 3), 60, "a third of the records acked")
        in_flight = len(topo.roots)
        _kill(run, fault)
        topo.run_until(run.committed_to_end(), 90, "the group committed to the input's end")
    finally:
        topo.close()
    lost, dup, total = run.count()
    replays = len(topo.emitted) - len(set(topo.emitted))
    print(f"\nEXACTLY_ONCE kill {fault}: {run.n} in, {total} out, lost {lost}, duplicated {dup}; "
          f"{in_flight} in flight at the kill, {len(topo.emitted)} emits ({replays} replays), "
          f"{len(topo.failed)} fails/timeouts; "
          f"{time.monotonic() - t0:.1f} s")
    assert (lost, dup) == (0, 0)
    assert committed(broker.bootstrap, run.group) == run.ends
    assert topo.violations == []


def test_failed_and_timed_out_tuples_are_replayed_and_written_once(broker_factory, tmp_path,
                                                                    monkeypatch):
    """The middle bolt fails some tuples once; their replay comes after a
    back-off longer than the message timeout, so the tuples queued behind
    them in the sink (waiting for the gap) time out and are replayed while
    still buffered: every record is written once, each replay acked. (The
    spout uses its default group; the sink derives it from source_spout.)"""
    components_on_path(monkeypatch)
    broker = broker_factory(tmp_path / "data", *GROUP_ARGS)
    t0 = time.monotonic()
    run = Run(broker, tmp_path, n=1200, timeout_s=2,
              spout_extra={"headrace.retry_initial_delay_ms": 2500},
              middle_extra={"test.fail_offsets_mod": 100}, default_group=True)
    topo = run.topo.start()
    try:
        topo.run_until(run.committed_to_end(), 90, "the group committed to the input's end")
    finally:
        topo.close()
    lost, dup, total = run.count()
    sink = topo.stage("sink")
    print(f"\nEXACTLY_ONCE replays: {run.n} in, {total} out, lost {lost}, duplicated {dup}; "
          f"{len(topo.failed)} fails/timeouts, {len(topo.emitted) - len(set(topo.emitted))} "
          f"replays, {sink.sent} tuples reached the sink; {time.monotonic() - t0:.1f} s")
    assert (lost, dup) == (0, 0)
    assert committed(broker.bootstrap, run.group) == run.ends
    assert len(topo.failed) >= 12, "the middle bolt failed offsets 1, 101, ... of each partition"
    assert sink.sent > run.n, "replays of buffered or written records reached the sink"
    assert topo.violations == []


@pytest.mark.slow
@pytest.mark.parametrize("fault", ["spout", "sink", "both", "broker"])
@pytest.mark.parametrize("mode", ["at_least_once", "at_most_once", "none"])
def test_other_modes_under_the_same_faults(broker_factory, tmp_path, monkeypatch, mode, fault):
    """The same topology and faults with an acked (not transactional) sink:
    at_least_once loses nothing, at_most_once writes nothing twice, none
    promises neither (figures printed for docs/storm.md)."""
    components_on_path(monkeypatch)
    broker = broker_factory(tmp_path / "data", *GROUP_ARGS)
    t0 = time.monotonic()
    run = Run(broker, tmp_path, n=3000, mode=mode)
    topo = run.topo.start()
    try:
        topo.run_until(run.mid_flight(run.n // 3), 60, "a third of the records through")
        _kill(run, fault)
        topo.run_until(run.committed_to_end(), 90, "the group committed to the input's end")
        end = time.monotonic() + MESSAGE_TIMEOUT_S + 1   # in-flight tuples finish or replay
        while time.monotonic() < end:
            topo.turn() or time.sleep(0.005)
    finally:
        topo.close()
    lost, dup, total = run.count(timeout=5)
    print(f"\n{mode.upper()} kill {fault}: {run.n} in, {total} out, lost {lost}, duplicated "
          f"{dup}; {time.monotonic() - t0:.1f} s")
    if mode == "at_least_once":
        assert lost == 0
    if mode == "at_most_once":
        assert dup == 0
    if mode != "at_least_once":   # unanchored: Storm never reports a failure to the spout
        assert topo.emitted == [] and topo.untracked >= run.n - lost
