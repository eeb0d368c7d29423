"""Dynamic broker configs and internal topics in a real two-broker cluster
(ZooKeeper + two `headrace broker --zookeeper` processes) with real clients:

- a cluster-wide default (BROKER resource "") is written to
  /config/brokers/<default> and reaches every broker (DYNAMIC_DEFAULT_BROKER_CONFIG),
  a per-broker value (resource "2") only broker 2, and both survive a
  broker restart (read back from ZooKeeper);
- a per-broker advertised.listeners re-registers that broker in ZooKeeper
  and every broker's Metadata follows;
- __consumer_offsets, created by the first FindCoordinator, is listed as
  internal with its true leader, and Produce to it is refused.
"""
from __future__ import annotations

import json

import pytest

from broker_config_wire import alter_cluster_default, describe_topic_config
from headrace import EmbeddedCluster
from zookeeper_fixture import wait_for

TIMEOUT_S = 30


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    with EmbeddedCluster(2, data_dir=tmp_path_factory.mktemp("cfg-cluster"),
                         settings={"zookeeper.session.timeout.ms": 3000,
                                   "offsets.topic.replication.factor": 2}) as c:
        yield c


def _admin(cluster):
    from confluent_kafka.admin import AdminClient
    return AdminClient({"bootstrap.servers": cluster.bootstrap_servers, "log_level": 0})


def _broker_entry(admin, node_id, key):
    from confluent_kafka.admin import ConfigResource
    res = ConfigResource(ConfigResource.Type.BROKER, str(node_id))
    e = admin.describe_configs([res])[res].result(TIMEOUT_S)[key]
    return e.value, e.source


def _alter(admin, name, key, value):
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource
    res = ConfigResource(ConfigResource.Type.BROKER, name, incremental_configs=[
        ConfigEntry(key, value, incremental_operation=AlterConfigOpType.SET)])
    admin.incremental_alter_configs([res])[res].result(TIMEOUT_S)


def test_dynamic_broker_configs_go_through_zookeeper_to_every_broker(cluster):
    from confluent_kafka.admin import ConfigSource
    dyn_default = ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG.value
    dyn_broker = ConfigSource.DYNAMIC_BROKER_CONFIG.value
    admin = _admin(cluster)
    host, port = cluster.node(1).address.rsplit(":", 1)
    assert alter_cluster_default((host, int(port)), {"log.retention.ms": "3600000"}) == (0, None)
    _alter(admin, "2", "log.segment.bytes", "1048576")
    data, _ = cluster.zk.get("/config/brokers/<default>")
    assert json.loads(data) == {"version": 1, "config": {"log.retention.ms": "3600000"}}
    data, _ = cluster.zk.get("/config/brokers/2")
    assert json.loads(data)["config"] == {"log.segment.bytes": "1048576"}
    for node in (1, 2):
        wait_for(lambda: _broker_entry(admin, node, "log.retention.ms") == ("3600000", dyn_default),
                 TIMEOUT_S, what=f"broker {node} applies the cluster default")
    wait_for(lambda: _broker_entry(admin, 2, "log.segment.bytes") == ("1048576", dyn_broker),
             TIMEOUT_S, what="broker 2 applies its own value")
    assert _broker_entry(admin, 1, "log.segment.bytes")[0] == "1073741824"

    cluster.restart(1)
    cluster.wait_for_brokers([1, 2])
    admin = _admin(cluster)
    wait_for(lambda: _broker_entry(admin, 1, "log.retention.ms") == ("3600000", dyn_default),
             TIMEOUT_S, what="broker 1 has the default again after its restart")


def _delete(admin, name, key):
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource
    res = ConfigResource(ConfigResource.Type.BROKER, name, incremental_configs=[
        ConfigEntry(key, None, incremental_operation=AlterConfigOpType.DELETE)])
    admin.incremental_alter_configs([res])[res].result(TIMEOUT_S)


def _metadata_host(cluster, via: int, node: int) -> str:
    """The host broker `via`'s Metadata gives for broker `node`."""
    from confluent_kafka.admin import AdminClient
    admin = AdminClient({"bootstrap.servers": cluster.node(via).address, "log_level": 0})
    brokers = admin.list_topics(timeout=TIMEOUT_S).brokers
    return brokers[node].host if node in brokers else ""


def test_dynamic_advertised_listeners_re_register_the_broker(cluster):
    """A per-broker advertised.listeners change (sent to that broker, as
    Kafka's AdminClient does) rewrites its /brokers/ids znode; every broker's
    Metadata then names the new host, and replication to and from it goes on
    over the new address."""
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic
    _, port = cluster.node(2).address.rsplit(":", 1)
    admin2 = AdminClient({"bootstrap.servers": cluster.node(2).address, "log_level": 0})
    _alter(admin2, "2", "advertised.listeners", f"PLAINTEXT://localhost:{port}")
    wait_for(lambda: f"PLAINTEXT://localhost:{port}" in
             json.loads(cluster.zk.get("/brokers/ids/2")[0])["endpoints"],
             TIMEOUT_S, what="broker 2 re-registers with its new endpoint")
    registration = json.loads(cluster.zk.get("/brokers/ids/2")[0])
    assert (registration["host"], registration["port"]) == ("localhost", int(port))
    for via in (1, 2):
        wait_for(lambda: _metadata_host(cluster, via, 2) == "localhost", TIMEOUT_S,
                 what=f"broker {via}'s Metadata names broker 2 at localhost")
    assert _metadata_host(cluster, 1, 1) == "127.0.0.1"

    # An RF=2 topic with acks=all: the followers fetch through the new address.
    admin = _admin(cluster)
    admin.create_topics([NewTopic("adv-rf2", 2, 2)])["adv-rf2"].result(TIMEOUT_S)
    p = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all",
                  "log_level": 0})
    for i in range(20):
        p.produce("adv-rf2", value=b"%d" % i, partition=i % 2)
    assert p.flush(TIMEOUT_S) == 0

    _delete(admin2, "2", "advertised.listeners")
    wait_for(lambda: json.loads(cluster.zk.get("/brokers/ids/2")[0])["host"] == "127.0.0.1",
             TIMEOUT_S, what="broker 2 re-registers with its listener's own address")


def test_consumer_offsets_is_internal_with_its_true_leader(cluster):
    from confluent_kafka import KafkaError, Producer
    from kafka.admin import KafkaAdminClient
    kp = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers,
                          request_timeout_ms=TIMEOUT_S * 1000)
    try:
        # FindCoordinator for a group creates __consumer_offsets.
        wait_for(lambda: _try(lambda: kp.describe_groups(["cfg-g"])), TIMEOUT_S,
                 what="group coordinator")
        leaders = cluster.wait_for_leaders("__consumer_offsets", TIMEOUT_S)

        def described():
            t = {x["name"]: x for x in kp.describe_topics()}.get("__consumer_offsets")
            return t and t["is_internal"] and \
                sorted((p["partition_index"], p["leader_id"]) for p in t["partitions"]) == \
                sorted(leaders.items())
        wait_for(described, TIMEOUT_S, what="__consumer_offsets listed internal")
    finally:
        kp.close()
    p = Producer({"bootstrap.servers": cluster.bootstrap_servers, "message.timeout.ms": 10000,
                  "retries": 0})
    errors = []
    p.produce("__consumer_offsets", b"junk", partition=0, on_delivery=lambda e, m: errors.append(e))
    assert p.flush(TIMEOUT_S) == 0
    assert errors[0] is not None and errors[0].code() == KafkaError.TOPIC_EXCEPTION, errors


def _try(fn):
    try:
        fn()
        return True
    except Exception as e:  # noqa: BLE001 - retried by wait_for
        print("retrying:", repr(e))
        return False


def test_topic_config_goes_through_zookeeper_and_any_broker_describes_it(cluster):
    """AlterConfigs on a topic sent to a broker without a replica of it is
    stored in /config/topics/<t>; every broker, replica or not, then
    describes the new value (and an unknown topic is UNKNOWN_TOPIC_OR_PARTITION)."""
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource, NewTopic
    admin = _admin(cluster)
    topic = "cfg-anywhere"
    admin.create_topics([NewTopic(topic, 1, replica_assignment=[[1]])])[topic].result(TIMEOUT_S)
    cluster.wait_for_leaders(topic, timeout=TIMEOUT_S)
    res = ConfigResource(ConfigResource.Type.TOPIC, topic, incremental_configs=[
        ConfigEntry("retention.ms", "123456", incremental_operation=AlterConfigOpType.SET)])
    admin.incremental_alter_configs([res])[res].result(TIMEOUT_S)
    data, _ = cluster.zk.get(f"/config/topics/{topic}")
    assert json.loads(data) == {"version": 1, "config": {"retention.ms": "123456"}}
    for node in (1, 2):
        host, port = cluster.node(node).address.rsplit(":", 1)
        wait_for(lambda: describe_topic_config((host, int(port)), topic)[1].get("retention.ms")
                 == "123456", TIMEOUT_S, what=f"broker {node} describes the new value")
    host, port = cluster.node(2).address.rsplit(":", 1)
    assert describe_topic_config((host, int(port)), "no-such-topic")[0] == 3


def test_kerberos_keys_are_accepted_per_broker_without_effect(cluster):
    """Kafka's sasl.kerberos.* keys (librdkafka's 0081_admin sets one): per
    broker through IncrementalAlterConfigs, refused at the cluster default
    (per-broker keys in Kafka), reported by DescribeConfigs with Kafka's
    defaults; a value that is not a long is refused like every bad dynamic
    value."""
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import ConfigSource
    admin = _admin(cluster)
    assert _broker_entry(admin, 1, "sasl.kerberos.min.time.before.relogin") == (
        "60000", ConfigSource.DEFAULT_CONFIG.value)
    assert _broker_entry(admin, 1, "sasl.kerberos.ticket.renew.window.factor")[0] == "0.8"
    assert _broker_entry(admin, 1, "sasl.kerberos.kinit.cmd")[0] == "/usr/bin/kinit"
    _alter(admin, "1", "sasl.kerberos.min.time.before.relogin", "58000")
    wait_for(lambda: _broker_entry(admin, 1, "sasl.kerberos.min.time.before.relogin") == (
        "58000", ConfigSource.DYNAMIC_BROKER_CONFIG.value), TIMEOUT_S)
    assert _broker_entry(admin, 2, "sasl.kerberos.min.time.before.relogin")[0] == "60000"
    with pytest.raises(KafkaException) as bad:
        _alter(admin, "1", "sasl.kerberos.min.time.before.relogin", "soon")
    assert "sasl.kerberos.min.time.before.relogin" in str(bad.value)
    host, port = cluster.node(1).address.rsplit(":", 1)
    code, message = alter_cluster_default((host, int(port)), {"sasl.kerberos.service.name": "kafka"})
    assert code == 42 and "broker id must be specified" in message, (code, message)  # INVALID_REQUEST
    _alter(admin, "1", "sasl.kerberos.min.time.before.relogin", "60000")
