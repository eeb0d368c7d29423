"""The built-in schema registry on a 3-broker cluster (ZooKeeper, real
broker processes): one writer (the leader of ``_schemas`` partition 0),
writes sent to any broker forwarded to it, every broker answering reads
from its own copy, and ids that stay unique when the writer's broker is
SIGKILLed between two registrations (docs/schema-registry.md)."""
from __future__ import annotations

import pytest
from confluent_kafka.admin import AdminClient
from confluent_kafka.schema_registry import Schema

from headrace import EmbeddedCluster
from registry_clients import call, sr_client

SESSION_MS = 3000


def record(name: str, *fields: str) -> str:
    import json
    return json.dumps({"type": "record", "name": name,
                       "fields": [{"name": f, "type": "string", "default": ""} for f in fields]})


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    with EmbeddedCluster(3, data_dir=tmp_path_factory.mktemp("registry-cluster"),
                         settings={"zookeeper.session.timeout.ms": SESSION_MS}) as c:
        yield c


def writer_of(cluster) -> tuple[int, list[int]]:
    """(leader of _schemas partition 0, its replicas) from the metadata."""
    md = AdminClient({"bootstrap.servers": cluster.bootstrap_servers}).list_topics(
        "_schemas", timeout=10)
    p = md.topics["_schemas"].partitions[0]
    return p.leader, sorted(p.replicas)


def http_of(cluster, node_id: int) -> str:
    return cluster.node(node_id).http_address


def test_a_write_on_any_broker_is_read_on_every_broker(cluster):
    first, *others = cluster.node_ids
    sid = sr_client(http_of(cluster, first)).register_schema(
        "orders-value", Schema(record("Order", "id"), "AVRO"))
    leader, replicas = writer_of(cluster)
    assert replicas == [1, 2, 3]  # replication factor min(3, brokers)
    # A second write through a broker that is not the writer is forwarded.
    non_writer = next(n for n in cluster.node_ids if n != leader)
    sid2 = sr_client(http_of(cluster, non_writer)).register_schema(
        "orders-value", Schema(record("Order", "id", "note"), "AVRO"))
    assert sid2 == sid + 1
    for n in cluster.node_ids:
        c = sr_client(http_of(cluster, n))
        assert c.get_schema(sid2).schema_str == record("Order", "id", "note").replace(" ", "")
        assert c.get_versions("orders-value") == [1, 2]


def test_a_forwarded_write_is_never_forwarded_again(cluster):
    """A write forwarded to a broker that is not (or no longer) the writer
    is answered 50003 there (the forwarder then asks again), not sent on."""
    leader, _ = writer_of(cluster)
    other = next(n for n in cluster.node_ids if n != leader)
    status, doc, _ = call(http_of(cluster, other), "POST", "/subjects/loop-value/versions",
                          {"schema": record("Loop", "a")},
                          headers={"X-Headrace-Forwarded-By": str(leader)})
    assert (status, doc["error_code"]) == (500, 50003)
    assert f"broker {other} is not the registry's writer" in doc["message"]
    assert call(http_of(cluster, leader), "GET", "/subjects/loop-value/versions")[0] == 404


def test_ids_stay_unique_when_the_writer_is_killed(cluster):
    leader, _ = writer_of(cluster)
    survivors = [n for n in cluster.node_ids if n != leader]
    before = sr_client(http_of(cluster, survivors[0]), timeout=60).register_schema(
        "failover-value", Schema(record("F", "a"), "AVRO"))
    cluster.kill(leader)
    # Registered through a survivor while the dead writer may still be named
    # leader: the survivor keeps forwarding until a new writer answers.
    after = sr_client(http_of(cluster, survivors[1]), timeout=60).register_schema(
        "failover-value", Schema(record("F", "a", "b"), "AVRO"))
    assert after > before
    new_leader, _ = writer_of(cluster)
    assert new_leader in survivors
    for n in survivors:
        status, doc, _ = call(http_of(cluster, n), "GET", "/subjects/failover-value/versions")
        assert (status, doc) == (200, [1, 2])
        for sid in (before, after):
            assert call(http_of(cluster, n), "GET", f"/schemas/ids/{sid}")[0] == 200
    # The killed broker comes back and answers from its own copy.
    cluster.start_node(leader)
    c = sr_client(http_of(cluster, leader))
    assert c.get_versions("failover-value") == [1, 2]
    assert [c.get_version("failover-value", v).schema_id for v in (1, 2)] == [before, after]
    # And a third id is new again, whoever writes now.
    third = sr_client(http_of(cluster, leader), timeout=60).register_schema(
        "failover-value", Schema(record("F", "a", "b", "c"), "AVRO"))
    assert third > after
