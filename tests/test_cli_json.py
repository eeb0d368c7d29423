"""`--format json` of the list and describe commands, compared with what the
broker itself answers (confluent-kafka's AdminClient), against one real broker
process with auto-create off; `cluster info` and `cluster log-dirs`; a
produce the broker refuses is one error line."""
from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient

from broker_process import GROUP_ARGS, shared_broker
from cli_run import headrace, ok, one_error_line

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(scope="module")
def jb(tmp_path_factory):
    yield from shared_broker(tmp_path_factory, "json-broker", *GROUP_ARGS,
                             "--set", "auto.create.topics.enable=false")


def _json(*args, brokers):
    r = ok(headrace(*args, "--format", "json", brokers=brokers))
    return json.loads(r.stdout)  # exactly one document


def test_topic_list_and_describe_match_the_broker(jb):
    b = jb.bootstrap
    ok(headrace("topic", "create", "js-orders", "--partitions", "2", "--config",
                "retention.ms=60000", brokers=b))
    ok(headrace("produce", "js-orders", "-p", "1", input="a\nb\nc\n", brokers=b))
    md = AdminClient({"bootstrap.servers": b}).list_topics(timeout=10)
    listed = _json("topic", "list", brokers=b)
    assert listed["topics"] == [{"name": n, "partitions": len(md.topics[n].partitions)}
                                for n in sorted(md.topics)]
    d = _json("topic", "describe", "js-orders", brokers=b)
    assert [p["partition"] for p in d["partitions"]] == [0, 1]
    p1 = d["partitions"][1]
    assert (p1["leader"], p1["replicas"], p1["isr"]) == (0, [0], [0])
    assert (p1["start_offset"], p1["end_offset"], p1["records"]) == (0, 3, 3)
    seg = sum(f.stat().st_size for f in (jb.data_dir / "js-orders-1").glob("*.log"))
    assert p1["size_bytes"] == seg and d["size_bytes"] == seg and d["records"] == 3
    assert d["configs"]["retention.ms"] == {"value": "60000", "source": "override",
                                            "read_only": False, "sensitive": False}


def test_group_list_and_describe_match_the_broker(jb):
    b = jb.bootstrap
    ok(headrace("topic", "create", "js-grp", brokers=b))
    ok(headrace("produce", "js-grp", input="1\n2\n3\n4\n", brokers=b))
    ok(headrace("consume", "js-grp", "--group", "js-g", "--count", "3", brokers=b))
    assert {"group_id": "js-g", "state": "EMPTY"} in _json("group", "list", brokers=b)["groups"]
    d = _json("group", "describe", "js-g", brokers=b)
    assert (d["group_id"], d["state"], d["members"]) == ("js-g", "EMPTY", [])
    assert d["offsets"] == [{"topic": "js-grp", "partition": 0, "committed": 3,
                             "end_offset": 4, "lag": 1, "member_id": None, "error": None}]
    # while a member is in: its assignment, as the broker reports it
    c = Consumer({"bootstrap.servers": b, "group.id": "js-live", "session.timeout.ms": 6000})
    try:
        c.subscribe(["js-grp"])
        deadline = time.monotonic() + 20
        while not c.assignment() and time.monotonic() < deadline:
            c.poll(0.2)
        d = _json("group", "describe", "js-live", brokers=b)
        assert d["state"] == "STABLE" and len(d["members"]) == 1
        assert d["members"][0]["assignment"] == [{"topic": "js-grp", "partition": 0}]
        assert d["offsets"][0]["member_id"] == d["members"][0]["member_id"]
    finally:
        c.close()


def test_cluster_info_and_log_dirs(jb):
    b = jb.bootstrap
    admin = AdminClient({"bootstrap.servers": b})
    cluster = admin.describe_cluster(request_timeout=10).result(timeout=10)
    info = _json("cluster", "info", brokers=b)
    host, port = jb.address
    assert info["cluster_id"] == cluster.cluster_id
    assert info["controller"] == cluster.controller.id
    # (a single-node broker reports no rack in DescribeCluster; clusters do,
    # tests/test_cli_cluster_info.py)
    assert info["brokers"] == [{"id": 0, "host": host, "port": port, "rack": None,
                                "status": "up"}]
    assert info["down_brokers"] == [] and info["offline"] == []
    assert [n.rack for n in cluster.nodes] == [None]
    assert info["topics"] == len(admin.list_topics(timeout=10).topics)
    table = ok(headrace("cluster", "info", brokers=b)).stdout.splitlines()
    assert table[0] == f"cluster id   {cluster.cluster_id}"
    assert f"  0     {host}:{port}  rack -" in table
    ok(headrace("topic", "create", "js-dirs", brokers=b))
    dirs = _json("cluster", "log-dirs", "--topic", "js-dirs", brokers=b)["log_dirs"]
    assert len(dirs) == 1 and Path(dirs[0]["path"]) == jb.data_dir.absolute()
    assert dirs[0]["partitions"] == [{"topic": "js-dirs", "partition": 0, "size_bytes": 0}]
    assert 0 < dirs[0]["usable_bytes"] <= dirs[0]["total_bytes"]


def test_txn_list_and_describe(jb):
    b = jb.bootstrap
    ok(headrace("topic", "create", "js-txn", brokers=b))
    p = Producer({"bootstrap.servers": b, "transactional.id": "js-tx-1"})
    p.init_transactions(10)
    p.begin_transaction()
    p.produce("js-txn", b"x")
    p.flush(10)
    try:
        txns = _json("txn", "list", brokers=b)["transactions"]
        mine = [t for t in txns if t["transactional_id"] == "js-tx-1"]
        assert len(mine) == 1 and mine[0]["state"] == "Ongoing"
        d = _json("txn", "describe", "js-tx-1", brokers=b)
        assert d["partitions"] == [{"topic": "js-txn", "partition": 0}]
        assert d["producer_id"] == mine[0]["producer_id"] and d["age_ms"] >= 0
    finally:
        p.abort_transaction(10)


def test_config_show_json():
    doc = json.loads(ok(headrace("config", "show", "--changed", "--set", "num.partitions=3",
                                 "--format", "json")).stdout)
    assert doc["settings"] == [{"name": "num.partitions", "value": "3", "source": "flag",
                                "set_as": "num.partitions", "default": "1",
                                "doc": doc["settings"][0]["doc"]}]


def test_produce_to_a_topic_the_broker_will_not_create(jb):
    one_error_line(headrace("produce", "js-never-created", input="x\n", brokers=jb.bootstrap),
                   "js-never-created", "refused")
