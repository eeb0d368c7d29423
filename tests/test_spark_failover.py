"""A Spark stream in local mode (no task retries) over a 3-broker cluster
while partition leaders are SIGKILLed twice: the source retries its broker
calls through each failover, the query runs to the end, and the
exactly-once sink loses and duplicates nothing. Real EmbeddedCluster (a
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


def _kill_leader(cluster: EmbeddedCluster, topic: str, partition: int) -> int:
    """SIGKILLs the leader of ``topic``-``partition``, waits until another
    broker leads it, restarts the killed one; returns its id."""
    leader = cluster.wait_for_leaders(topic)[partition]
    cluster.kill(leader)
    deadline = time.monotonic() + 60
    while True:
        state = cluster.partition_states(topic).get(partition)
        if state is not None and state.leader not in (leader, -1):
            break
        assert time.monotonic() < deadline, f"no new leader of {topic}-{partition}"
        time.sleep(0.1)
    cluster.restart(leader)
    return leader


@pytest.mark.timeout(600)
def test_stream_survives_two_leader_sigkills_exactly_once(tmp_path):
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
                killed.append((job.commits("eos"), _kill_leader(c, "fo-in", partition)))
            code = proc.wait(300)
        finally:
            kill_group(proc)
        print(f"leaders SIGKILLed at (commits, broker) {killed}; job exit {code}")
        assert code == 0, job.log_tail("finish")
        assert all(n < TOTAL // LIMIT for n, _ in killed), killed
        assert job.outcome([str(i) for i in range(TOTAL)])["eos"] == (0, 0)
