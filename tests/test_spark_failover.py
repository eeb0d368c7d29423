"""A Spark stream in local mode (no task retries) over a 3-broker cluster
while partition leaders (of the input topic, or of the output topic) are
SIGKILLed twice: the source retries its broker calls through each
failover, the sink's clients ride on librdkafka's retries, the query runs
to the end, and the exactly-once sink loses and duplicates nothing. Real EmbeddedCluster (a
ZooKeeper and three broker processes), real Spark in its own process."""
from __future__ import annotations

import time

import pytest

from cluster_clients import create_topic
from headrace import EmbeddedCluster
from spark_kill_harness import StreamJob, kill_group
from spark_session import produce_values

SETTINGS = {"zookeeper.session.timeout.ms": 6000, "replica.lag.time.max.ms": 4000}
LIMIT = 200
TOTAL = 8000


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
                    assert time.monotonic() < deadline, job.log_tail("finish")
                    time.sleep(0.1)
                led = {t: c.wait_for_leaders(t) for t in ("fo-in", "fo-out-eos")}
                commits = job.commits("eos")
                broker, took = _kill_leader(c, victims, partition)
                killed.append((commits, broker, took, {t: sorted(p for p, b in leaders.items()
                                                                if b == broker)
                                                       for t, leaders in led.items()}))
            code = proc.wait(300)
        finally:
            kill_group(proc)
        print(f"{victims} leaders SIGKILLed at (commits, broker, s to a new leader, "
              f"partitions it led) {killed}; "
              f"job exit {code}")
        assert code == 0, job.log_tail("finish")
        assert all(n < TOTAL // LIMIT for n, _, _, _ in killed), killed
        assert all(led[victims] for _, _, _, led in killed), killed
        assert job.outcome([str(i) for i in range(TOTAL)])["eos"] == (0, 0)
