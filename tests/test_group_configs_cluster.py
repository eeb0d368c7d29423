"""Group configs in a 2-broker cluster (issue 31): a value set through one
broker is written to ZooKeeper's /config/groups/<group> (Kafka's layout)
and every broker describes it; a share consumer of a group whose
share.auto.offset.reset=earliest reads the records produced before it
joined from the partition's leader, whichever broker that is; DELETE
removes the znode."""
from __future__ import annotations

import json
import time
import uuid

import pytest
from confluent_kafka import Producer, ShareConsumer
from confluent_kafka.admin import AdminClient, NewTopic

from broker_config_wire import RESOURCE_GROUP, alter_config, describe_config
from headrace import EmbeddedCluster
from test_share_consume import _records
from zookeeper_fixture import wait_for

TIMEOUT_S = 30


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    with EmbeddedCluster(2, data_dir=tmp_path_factory.mktemp("gc-cluster"),
                         settings={"zookeeper.session.timeout.ms": 3000,
                                   "offsets.topic.replication.factor": 2}) as c:
        yield c


def _address(cluster, node):
    host, port = cluster.node(node).address.rsplit(":", 1)
    return host, int(port)


def test_a_group_config_set_through_one_broker_is_seen_by_every_broker(cluster):
    group = "gcc-" + uuid.uuid4().hex[:6]
    assert alter_config(_address(cluster, 1), RESOURCE_GROUP, group,
                        {"share.auto.offset.reset": "earliest",
                         "share.delivery.count.limit": "3"}) == (0, None)
    data, _ = cluster.zk.get(f"/config/groups/{group}")
    assert json.loads(data) == {"version": 1, "config": {
        "share.auto.offset.reset": "earliest", "share.delivery.count.limit": "3"}}
    for node in (1, 2):
        wait_for(lambda: describe_config(_address(cluster, node), RESOURCE_GROUP, group)[1]
                 .get("share.auto.offset.reset") == "earliest",
                 TIMEOUT_S, what=f"broker {node} describes the group config")
    code, message = alter_config(_address(cluster, 2), RESOURCE_GROUP, group,
                                 {"share.delivery.count.limit": "99"})
    assert code == 40, (code, message)  # INVALID_CONFIG, nothing written
    assert alter_config(_address(cluster, 2), RESOURCE_GROUP, group,
                        {"share.auto.offset.reset": None,
                         "share.delivery.count.limit": None}) == (0, None)
    assert cluster.zk.exists(f"/config/groups/{group}") is None
    wait_for(lambda: describe_config(_address(cluster, 1), RESOURCE_GROUP, group)[1]
             .get("share.auto.offset.reset") == "latest",
             TIMEOUT_S, what="broker 1 drops the deleted config")


def test_earliest_share_group_reads_old_records_from_every_leader(cluster):
    topic = "gcc-share-" + uuid.uuid4().hex[:6]
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers, "log_level": 0})
    admin.create_topics([NewTopic(topic, 2, 2)])[topic].result(TIMEOUT_S)
    leaders = cluster.wait_for_leaders(topic, TIMEOUT_S)
    before = [f"before-{i}" for i in range(40)]
    p = Producer({"bootstrap.servers": cluster.bootstrap_servers, "linger.ms": 0})
    for i, v in enumerate(before):
        p.produce(topic, value=v.encode(), partition=i % 2)
    p.flush(TIMEOUT_S)
    group = "gcc-early-" + uuid.uuid4().hex[:6]
    # Set through the broker that leads neither partition if there is one,
    # else broker 1: the leaders learn it from ZooKeeper.
    via = 1 if set(leaders.values()) != {1} else 2
    assert alter_config(_address(cluster, via), RESOURCE_GROUP, group,
                        {"share.auto.offset.reset": "earliest"}) == (0, None)
    for node in set(leaders.values()):
        wait_for(lambda: describe_config(_address(cluster, node), RESOURCE_GROUP, group)[1]
                 .get("share.auto.offset.reset") == "earliest",
                 TIMEOUT_S, what=f"leader {node} has the group config")
    c = ShareConsumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": group})
    try:
        c.subscribe([topic])
        got: list[str] = []
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and len(got) < len(before):
            got.extend(m.value().decode() for m in _records(c.poll(0.5)))
        assert sorted(got) == sorted(before), leaders
    finally:
        c.close()
