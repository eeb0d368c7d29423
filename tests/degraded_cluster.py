"""The cluster the degraded-read tests (CLI and console) break: 3 brokers
with a 6 s ZooKeeper session, a topic of 6 partitions over 2 replicas
holding 60 keyed records, and consumer groups that read them all."""
from __future__ import annotations

import contextlib

from cli_run import headrace, ok


@contextlib.contextmanager
def degraded_cluster(data_dir, topic: str, groups: list[str]):
    from headrace.embedded_cluster import EmbeddedCluster

    # No initial rebalance delay (3 s by default) for each group's one member.
    with EmbeddedCluster(3, {"zookeeper.session.timeout.ms": 6000,
                             "offsets.topic.replication.factor": 3,
                             "group.initial.rebalance.delay.ms": 0},
                         data_dir=data_dir) as c:
        bs = c.bootstrap_servers
        ok(headrace("topic", "create", topic, "--partitions", "6", "--replication-factor", "2",
                    brokers=bs))
        c.wait_for_leaders(topic)
        ok(headrace("produce", topic, "-K", ":", brokers=bs,
                    input="".join(f"k{i}:v{i}\n" for i in range(60))))
        for g in groups:
            ok(headrace("consume", topic, "--group", g, "--count", "60", brokers=bs))
        yield c
