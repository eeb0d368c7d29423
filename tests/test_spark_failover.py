"""A Spark stream in local mode (no task retries) over a 3-broker cluster
while partition leaders (of the input topic, or of the output topic) are
SIGKILLed twice: the source retries its broker calls through each
failover, the sink's clients ride on librdkafka's retries, the query runs
to the end, and the exactly-once sink loses and duplicates nothing. The
same through SIGKILLs of the sink's transaction coordinator (and, behind
`slow`, its group coordinator), found with FindCoordinator. Real
EmbeddedCluster (a ZooKeeper and three broker processes), real Spark in its
own process."""
from __future__ import annotations

import subprocess
import time

import pytest

from cluster_clients import create_topic
from headrace import EmbeddedCluster
from spark_kill_harness import StreamJob, kill_group, stall_report
from spark_session import produce_values
from test_cluster_groups import find_group_coordinators, wait_coordinators

SETTINGS = {"zookeeper.session.timeout.ms": 6000, "replica.lag.time.max.ms": 4000}
LIMIT = 200
# 20 micro-batches: the kills come at 2, 3 and 6 committed batches, so the
# query still has 14+ batches to write after the last kill of the default
# run (each batch is a round of transactions, ~1-2 s on two cores).
TOTAL = 4000


def _kill_leader(cluster: EmbeddedCluster, topic: str, partition: int) -> tuple[int, float]:
    """SIGKILLs the leader of ``topic``-``partition``, waits until another
    broker leads it, restarts the killed one; returns its id and the
    seconds from the kill to the new leader in ZooKeeper."""
    leader = cluster.wait_for_leaders(topic)[partition]
    cluster.kill(leader)
    killed_at = time.monotonic()
    deadline = killed_at + 60
    while True:
        state = cluster.partition_states(topic).get(partition)
        if state is not None and state.leader not in (leader, -1):
            break
        assert time.monotonic() < deadline, f"no new leader of {topic}-{partition}"
        time.sleep(0.1)
    took = time.monotonic() - killed_at
    cluster.restart(leader)
    return leader, round(took, 1)


@pytest.mark.timeout(600)
@pytest.mark.parametrize("victims", ["fo-in", "fo-out-eos"])
def test_stream_survives_two_leader_sigkills_exactly_once(tmp_path, victims):
    """``victims``: whose partition leaders are killed - the source's input
    topic (the source's retries) or the exactly-once sink's output topic
    (the sink's producer, its transactions and progress reads ride on
    librdkafka's own retries and coordinator lookups). Prints which input
    and output partitions each killed broker led."""
    with EmbeddedCluster(brokers=3, settings=SETTINGS, data_dir=str(tmp_path / "cluster")) as c:
        bs = c.bootstrap_servers
        create_topic(c, "fo-in", partitions=2)
        create_topic(c, "fo-out-eos", partitions=2)
        produce_values(bs, "fo-in", [str(i) for i in range(TOTAL)], partitions=2)
        job = StreamJob(bs, "fo-in", "fo-out", tmp_path, LIMIT, queries=("eos",))
        proc = job.start("finish")   # AvailableNow: exits 0 once every batch is written
        killed = []
        try:
            for partition in (0, 1):
                deadline = time.monotonic() + 240
                while job.commits("eos") < 2 + 4 * partition:
                    assert proc.poll() is None, job.log_tail("finish")
                    assert time.monotonic() < deadline, \
                        f"{job.log_tail('finish')}\n{stall_report(proc)}"
                    time.sleep(0.1)
                led = {t: c.wait_for_leaders(t) for t in ("fo-in", "fo-out-eos")}
                commits = job.commits("eos")
                broker, took = _kill_leader(c, victims, partition)
                killed.append((commits, broker, took, {t: sorted(p for p, b in leaders.items()
                                                                if b == broker)
                                                       for t, leaders in led.items()}))
            try:
                code = proc.wait(300)
            except subprocess.TimeoutExpired:
                raise AssertionError(f"the job still runs after 300 s\n{job.log_tail('finish')}"
                                     f"\n{stall_report(proc)}") from None
        finally:
            kill_group(proc)
        print(f"{victims} leaders SIGKILLed at (commits, broker, s to a new leader, "
              f"partitions it led) {killed}; "
              f"job exit {code}")
        assert code == 0, job.log_tail("finish")
        assert all(n < TOTAL // LIMIT for n, _, _, _ in killed), killed
        assert all(led[victims] for _, _, _, led in killed), killed
        assert job.outcome([str(i) for i in range(TOTAL)])["eos"] == (0, 0)


# -- the sink's transaction coordinator ---------------------------------------
# One partition of __transaction_state (and of __consumer_offsets): one broker
# coordinates every transactional id (every group). With more partitions the
# sink's ids, which differ only in their last character, land on adjacent
# partitions (abs(hashCode) % n), which round-robin leadership puts on
# different brokers: no single kill would hit both of a sink's coordinators.
COORD_SETTINGS = {**SETTINGS, "transaction.state.log.num.partitions": 1,
                  "offsets.topic.num.partitions": 1,
                  "transaction.abort.timed.out.transaction.cleanup.interval.ms": 500}
TXN_KEY, GROUP_KEY = 1, 0   # FindCoordinator key types
SINK_ARG = "coord"           # spark_stream_job gives the sink "<--sink-id>-eos"


def _sink_names(sink_id: str) -> list[str]:
    """The exactly-once sink's transactional ids (= its progress groups),
    one per Spark partition (2: one per input partition)."""
    return [f"headrace-spark-sink-{sink_id}-{p}" for p in range(2)]


def _coordinators(c: EmbeddedCluster, names: list[str]) -> dict[str, dict[str, int]]:
    """FindCoordinator's answers for ``names``: {"txn": {name: broker},
    "group": {name: broker}}."""
    return {"txn": wait_coordinators(c, names, TXN_KEY),
            "group": wait_coordinators(c, names, GROUP_KEY)}


def _kill_coordinator(c: EmbeddedCluster, names: list[str], kind: str) -> dict:
    """SIGKILLs the broker FindCoordinator names as the ``kind`` ("txn" or
    "group") coordinator of ``names[0]``, waits until FindCoordinator names
    a live coordinator for every name (transactions and groups), restarts
    the killed broker; returns what it saw."""
    before = _coordinators(c, names)
    victim = before[kind][names[0]]
    c.kill(victim)
    killed_at = time.monotonic()
    while True:
        got = {k: find_group_coordinators(c.bootstrap_servers, names, key)
               for k, key in (("txn", TXN_KEY), ("group", GROUP_KEY))}
        if all(code == 0 and node != victim for per in got.values()
               for code, node in per.values()):
            break
        assert time.monotonic() < killed_at + 60, f"no coordinator after killing {victim}: {got}"
        time.sleep(0.1)
    took = time.monotonic() - killed_at
    c.restart(victim)
    return {"kind": kind, "broker": victim,
            "coordinated": {k: sorted(n[-1] for n, b in v.items() if b == victim)
                            for k, v in before.items()},
            "s_to_new_coordinator": round(took, 1)}


def _coordinator_kills(tmp_path, kills_at: tuple[tuple[int, str], ...], total: int) -> None:
    """An exactly-once AvailableNow stream (local[2]: no task retries) whose
    sink's coordinator is SIGKILLed once the query has committed each of
    ``kills_at``'s (micro-batches, kind). The output read with
    read_committed must be 0 lost / 0 duplicated, and the query must run
    through every kill (if the job dies it is restarted from its checkpoint,
    so that the output can still be counted, and the test fails)."""
    with EmbeddedCluster(brokers=3, settings=COORD_SETTINGS,
                         data_dir=str(tmp_path / "cluster")) as c:
        bs = c.bootstrap_servers
        create_topic(c, "co-in", partitions=2)
        create_topic(c, "co-out-eos", partitions=2)
        names = _sink_names(f"{SINK_ARG}-eos")
        first = _coordinators(c, names)   # creates both internal topics
        produce_values(bs, "co-in", [str(i) for i in range(total)], partitions=2)
        job = StreamJob(bs, "co-in", "co-out", tmp_path, LIMIT, queries=("eos",),
                        extra=["--sink-id", SINK_ARG])
        kills, restarts, codes = [], 0, []
        proc = job.start("finish")   # AvailableNow: exits 0 once every batch is written
        try:
            for at, kind in kills_at:
                deadline = time.monotonic() + 240
                while job.commits("eos") < at:
                    if proc.poll() is not None:   # died (or ended): resume from the checkpoint
                        codes.append(proc.returncode)
                        assert proc.returncode != 0, job.log_tail("finish")
                        restarts += 1
                        proc = job.start("finish")
                    assert time.monotonic() < deadline, job.log_tail("finish")
                    time.sleep(0.05)
                kills.append({"commits": job.commits("eos"), **_kill_coordinator(c, names, kind)})
            while True:
                code = proc.wait(300)
                codes.append(code)
                if code == 0 or restarts >= len(kills_at):
                    break
                restarts += 1
                proc = job.start("finish")
        finally:
            kill_group(proc)
        print(f"sink {SINK_ARG}-eos, coordinators at the start {first}; SIGKILLed: {kills}; "
              f"job exits {codes}, {restarts} restarts from the checkpoint")
        assert codes[-1] == 0, job.log_tail("finish")
        assert all(k["coordinated"][k["kind"]] == ["0", "1"] for k in kills), kills
        assert all(k["commits"] < total // LIMIT for k in kills), kills
        lost, dups = job.outcome([str(i) for i in range(total)])["eos"]
        print(f"exactly-once over {total} records: {lost} lost, {dups} duplicated")
        assert (lost, dups) == (0, 0)
        # The query rode every kill: no restart was needed (before the
        # sink's progress reads were retried, a group coordinator kill made
        # one answer NOT_COORDINATOR and the query died).
        assert restarts == 0, f"the job died: exits {codes}\n{job.log_tail('finish')}"


@pytest.mark.timeout(600)
def test_exactly_once_through_a_transaction_coordinator_sigkill(tmp_path):
    """The transaction coordinator of both of the sink's transactional ids
    is SIGKILLed once, 3 micro-batches in."""
    _coordinator_kills(tmp_path, ((3, "txn"),), TOTAL)


@pytest.mark.slow
@pytest.mark.timeout(1200)
def test_exactly_once_through_three_coordinator_sigkills(tmp_path):
    """Over 16,000 records: the transaction coordinator, then the group
    coordinator of the sink's progress groups, then the transaction
    coordinator again (each the broker FindCoordinator names at that
    moment) are SIGKILLed."""
    _coordinator_kills(tmp_path, ((3, "txn"), (25, "group"), (50, "txn")), 16_000)
