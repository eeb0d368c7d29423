"""SCRAM credentials in a real two-broker cluster (ZooKeeper + two
`headrace broker --zookeeper` processes): AlterUserScramCredentials on one
broker writes Kafka's /config/users/<user> znode and a config change
notification, and every broker applies the set from ZooKeeper (its
scram-credentials.json copy, and DescribeUserScramCredentials)."""
from __future__ import annotations

import json
import time

import pytest

from headrace import EmbeddedCluster

TIMEOUT_S = 30


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    with EmbeddedCluster(2, data_dir=tmp_path_factory.mktemp("sasl-cluster"),
                         settings={"zookeeper.session.timeout.ms": 3000}) as c:
        yield c


def _wait(pred, what: str, timeout: float = TIMEOUT_S):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = pred()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def _stored(node) -> dict:
    path = node.data_dir / "scram-credentials.json"
    return json.loads(path.read_text()) if path.exists() else {}


def test_scram_users_go_through_zookeeper_to_every_broker(cluster):
    from confluent_kafka.admin import (AdminClient, ScramCredentialInfo, ScramMechanism,
                                       UserScramCredentialDeletion, UserScramCredentialUpsertion)
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    for f in admin.alter_user_scram_credentials([UserScramCredentialUpsertion(
            "zed@corp", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 4096),
            b"zed-pw")]).values():
        f.result(TIMEOUT_S)
    data, _ = cluster.zk.get("/config/users/zed%40corp")
    znode = json.loads(data)
    assert znode["version"] == 1 and list(znode["config"]) == ["SCRAM-SHA-256"]
    cred = znode["config"]["SCRAM-SHA-256"]
    assert cred.startswith("salt=") and ",stored_key=" in cred and cred.endswith(",iterations=4096")
    changes = [json.loads(cluster.zk.get(f"/config/changes/{c}")[0])
               for c in cluster.zk.get_children("/config/changes")]
    assert {"version": 2, "entity_path": "users/zed%40corp"} in changes
    # Every broker applies the set from ZooKeeper (and keeps a copy).
    for node_id in (1, 2):
        node = cluster.node(node_id)
        _wait(lambda: _stored(node).get("users", {}).get("zed@corp", {}).get("SCRAM-SHA-256")
              == cred, f"broker {node_id} to apply the credential")
    got = admin.describe_user_scram_credentials(["zed@corp"])["zed@corp"].result(TIMEOUT_S)
    assert [(i.mechanism, i.iterations) for i in got.scram_credential_infos] == \
        [(ScramMechanism.SCRAM_SHA_256, 4096)]
    # Deleting it empties the znode's SCRAM keys and every broker's store.
    for f in admin.alter_user_scram_credentials([UserScramCredentialDeletion(
            "zed@corp", ScramMechanism.SCRAM_SHA_256)]).values():
        f.result(TIMEOUT_S)
    assert json.loads(cluster.zk.get("/config/users/zed%40corp")[0])["config"] == {}
    for node_id in (1, 2):
        node = cluster.node(node_id)
        _wait(lambda: "zed@corp" not in _stored(node).get("users", {"zed@corp": 1}),
              f"broker {node_id} to drop the credential")
