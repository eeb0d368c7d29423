"""A real cluster: ZooKeeper and three `headrace broker --zookeeper` processes
(headrace.EmbeddedCluster), driven by a Kafka client. Checks the control
plane end to end: CreateTopics through a broker -> ZooKeeper -> controller
-> every broker's view (Metadata); controlled shutdown on SIGTERM; failover
when a broker is killed (its session expires); restart.

Replication of data between brokers is the data plane's (tests elsewhere).
"""
from __future__ import annotations

import time

import pytest
from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic

from headrace import EmbeddedCluster
from zookeeper_fixture import wait_for

SESSION_MS = 3000


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    with EmbeddedCluster(3, data_dir=tmp_path_factory.mktemp("cluster"),
                         settings={"zookeeper.session.timeout.ms": SESSION_MS},
                         racks={1: "a", 2: "b", 3: "c"}) as c:
        yield c


def admin_for(cluster) -> AdminClient:
    return AdminClient({"bootstrap.servers": cluster.bootstrap_servers, "log_level": 0})


def metadata_leaders(cluster, topic) -> dict[int, int]:
    md = admin_for(cluster).list_topics(topic, timeout=10)
    t = md.topics.get(topic)
    if t is None or t.error is not None:
        return {}
    return {p: pm.leader for p, pm in t.partitions.items()}


def create(cluster, topic, partitions, rf):
    admin = admin_for(cluster)  # kept alive until the answer is in
    futures = admin.create_topics([NewTopic(topic, partitions, rf)],
                                               operation_timeout=15, request_timeout=20)
    try:
        futures[topic].result(30)
    except Exception as e:
        md = admin.list_topics(timeout=10)
        raise AssertionError(f"create {topic}: {e}; Metadata: controller {md.controller_id}, "
                             f"brokers {sorted(md.brokers)}; ZooKeeper: controller "
                             f"{cluster.controller_id()}, live {cluster.live_brokers()}") from e


def test_cluster_up(cluster):
    assert cluster.live_brokers() == [1, 2, 3]
    assert cluster.controller_id() in (1, 2, 3)
    # The brokers' views catch up with ZooKeeper a moment after start (the
    # controller -1, a broker missing until then): wait, as a client retries.
    admin = admin_for(cluster)

    def caught_up():
        md = admin.list_topics(timeout=10)
        return md.controller_id == cluster.controller_id() and sorted(md.brokers) == [1, 2, 3]

    wait_for(caught_up, 15, 0.2, what="Metadata names the controller and the 3 brokers")


def test_create_topic_through_a_broker(cluster):
    create(cluster, "orders", 6, 3)
    leaders = cluster.wait_for_leaders("orders", 15)
    assert sorted(set(leaders.values())) == [1, 2, 3]  # leaders spread
    states = cluster.partition_states("orders")
    assert all(sorted(s.isr) == [1, 2, 3] for s in states.values())
    wait_for(lambda: metadata_leaders(cluster, "orders") == leaders, 15,
             what="Metadata leaders = ZooKeeper leaders")
    admin = admin_for(cluster)
    futures = admin.create_topics([NewTopic("orders", 1, 1)], request_timeout=20)
    with pytest.raises(Exception) as e:
        futures["orders"].result(30)
    assert "TOPIC_ALREADY_EXISTS" in str(e.value) or "already exists" in str(e.value)
    futures = admin.create_topics([NewTopic("toobig", 1, 4)], request_timeout=20)
    with pytest.raises(Exception) as e:
        futures["toobig"].result(30)
    assert "REPLICATION_FACTOR" in str(e.value) or "larger than available" in str(e.value)
    futures = admin.create_partitions([NewPartitions("orders", 8)], request_timeout=20)
    futures["orders"].result(30)
    assert len(cluster.wait_for_leaders("orders", 15)) == 8


def test_sigterm_moves_leadership_first(cluster):
    create(cluster, "cs", 3, 3)
    leaders = cluster.wait_for_leaders("cs", 15)
    victim = leaders[0]
    epochs = {p: s.leader_epoch for p, s in cluster.partition_states("cs").items()}
    assert cluster.stop(victim) == 0
    # Controlled shutdown: by the time the process exited, leadership had moved.
    states = cluster.partition_states("cs")
    for p, s in states.items():
        assert s.leader != victim and s.leader != -1, (p, s)
        if leaders[p] == victim:
            assert s.leader_epoch == epochs[p] + 1
        assert victim not in s.isr
    cluster.restart(victim)
    assert victim in cluster.live_brokers()


def test_kill_fails_over_after_session_timeout(cluster):
    create(cluster, "ko", 3, 3)
    leaders = cluster.wait_for_leaders("ko", 15)
    victim = leaders[1]
    t0 = time.monotonic()
    cluster.kill(victim)
    wait_for(lambda: all(s.leader not in (victim, -1)
                         for s in cluster.partition_states("ko").values()),
             SESSION_MS / 1000 + 15, what="leaders moved off the killed broker")
    assert time.monotonic() - t0 < SESSION_MS / 1000 + 10
    wait_for(lambda: victim not in metadata_leaders(cluster, "ko").values()
             and metadata_leaders(cluster, "ko"), 15, what="Metadata without the dead leader")
    cluster.start_node(victim)
    assert victim in cluster.live_brokers()


def test_delete_topic(cluster):
    create(cluster, "gone", 2, 2)
    cluster.wait_for_leaders("gone", 15)
    admin = admin_for(cluster)
    futures = admin.delete_topics(["gone"], request_timeout=20)
    futures["gone"].result(30)
    assert cluster.partition_states("gone") == {}
    wait_for(lambda: "gone" not in admin_for(cluster).list_topics(timeout=10).topics, 15)


def test_paused_broker_loses_its_session_and_rejoins(cluster):
    create(cluster, "pz", 3, 3)
    leaders = cluster.wait_for_leaders("pz", 15)
    victim = leaders[2]
    cluster.pause(victim)  # SIGSTOP: no heartbeats, the session expires
    try:
        wait_for(lambda: victim not in cluster.live_brokers(), SESSION_MS / 1000 + 15,
                 what="the paused broker's registration to expire")
        wait_for(lambda: all(s.leader not in (victim, -1)
                             for s in cluster.partition_states("pz").values()), 15,
                 what="leaders moved off the paused broker")
    finally:
        cluster.resume(victim)
    # Back: its member sees the expired session, registers again.
    wait_for(lambda: victim in cluster.live_brokers(), 30, what="re-registration")
    assert cluster.node(victim).running


def test_paused_controller_is_replaced_and_steps_down(cluster):
    old = cluster.controller_id()
    data, _ = cluster.zk.get("/controller_epoch")
    epoch = int(data)
    log_start = cluster.node(old).log_path.stat().st_size
    cluster.pause(old)
    try:
        wait_for(lambda: cluster.controller_id() not in (-1, old), SESSION_MS / 1000 + 15,
                 what="a new controller")
        data, _ = cluster.zk.get("/controller_epoch")
        assert int(data) > epoch
    finally:
        cluster.resume(old)
    new = cluster.controller_id()
    wait_for(lambda: old in cluster.live_brokers(), 30, what="the old controller re-registered")
    wait_for(lambda: "no longer controller" in
             cluster.node(old).log_path.read_text()[log_start:], 15,
             what="the old controller stepping down")
    assert cluster.controller_id() == new
