"""`headrace cluster info` against a real 2-broker cluster with racks
(`cluster up --detach`): the JSON from the brokers (DescribeCluster) agrees
with the one read from ZooKeeper. Slow: it starts ZooKeeper and 2 brokers
(single-node `cluster info` is in tests/test_cli_json.py)."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]


def _cli(*args):
    r = subprocess.run([sys.executable, "-m", "headrace.cli", *args], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return r.stdout


def test_cluster_info_from_brokers_matches_zookeeper(tmp_path):
    data = tmp_path / "c"
    _cli("cluster", "up", "--brokers", "2", "--data-dir", str(data), "--base-port", "0",
         "--zookeeper-port", "0", "--rack", "1=east", "--rack", "2=west", "--detach")
    try:
        state = json.loads((data / "cluster.json").read_text())
        bootstrap = ",".join(b["address"] for b in state["brokers"].values())
        via_zk = json.loads(_cli("cluster", "info", "--data-dir", str(data), "--format", "json"))
        via_brokers = json.loads(_cli("cluster", "info", "--brokers", bootstrap,
                                      "--format", "json"))
        assert [(b["id"], b["rack"]) for b in via_brokers["brokers"]] == \
            [(1, "east"), (2, "west")]
        assert via_brokers["brokers"] == via_zk["brokers"]
        for key in ("cluster_id", "controller", "topics", "partitions"):
            assert via_brokers[key] == via_zk[key], key
        assert via_zk["controller_epoch"] >= 1 and via_brokers["controller_epoch"] is None
    finally:
        _cli("cluster", "down", "--data-dir", str(data))
