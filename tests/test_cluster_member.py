"""ClusterMember against a real ZooKeeper, with a stand-in for the C++
binding (``BindingStandIn``: the four methods of docs/cluster.md, recording
what the member pushes and queueing what the data plane would propose), so
that the control plane is tested without a cluster-enabled C++ build.
"""
from __future__ import annotations

import json
import queue
import threading

import pytest

from headrace.cluster import zk_layout as L
from headrace.cluster.member import ClusterMember, split_connect
from zookeeper_fixture import wait_for


class BindingStandIn:
    """headrace._core.Broker's cluster methods, in Python."""

    def __init__(self, node_id: int, port: int):
        self.node_id = node_id
        self.advertised_address = f"127.0.0.1:{port}"
        self.applied: list[dict] = []
        self.isr_proposals: list[dict] = []
        self.requests: queue.Queue = queue.Queue()
        self.results: dict[int, dict] = {}
        self._next_id = 0
        self._lock = threading.Lock()
        self._done = threading.Condition(self._lock)

    # the binding
    def apply_cluster(self, state_json: str) -> None:
        self.applied.append(json.loads(state_json))

    def isr_changes(self) -> str:
        with self._lock:
            out, self.isr_proposals = self.isr_proposals, []
        return json.dumps(out)

    def next_control_request(self, timeout_s: float):
        try:
            return self.requests.get(timeout=timeout_s)
        except queue.Empty:
            return None

    def complete_control_request(self, request_id, result_json: str) -> None:
        with self._done:
            self.results[request_id] = json.loads(result_json)
            self._done.notify_all()

    # test helpers
    @property
    def state(self) -> dict | None:
        return self.applied[-1] if self.applied else None

    def request(self, kind: str, payload: dict, timeout: float = 15.0) -> dict:
        with self._lock:
            self._next_id += 1
            rid = self._next_id
        self.requests.put((rid, kind, json.dumps(payload)))
        with self._done:
            assert self._done.wait_for(lambda: rid in self.results, timeout), "no answer"
            return self.results.pop(rid)

    def partition(self, topic: str, p: int) -> dict | None:
        for t in (self.state or {}).get("topics", []):
            if t["name"] == topic:
                for part in t["partitions"]:
                    if part["partition"] == p:
                        return part
        return None


@pytest.fixture
def members(zookeeper, zk_chroot):
    made = []

    def _make(node_id: int, **settings) -> tuple[ClusterMember, BindingStandIn]:
        b = BindingStandIn(node_id, 9100 + node_id)
        values = {"zookeeper.connect": zookeeper.connect_string + zk_chroot + "/kafka",
                  "zookeeper.session.timeout.ms": "4000", "node.id": str(node_id),
                  **{k.replace("_", "."): str(v) for k, v in settings.items()}}
        m = ClusterMember(b, values).start()
        made.append(m)
        return m, b

    yield _make
    for m in made:
        m.close(controlled_shutdown=False)


def test_split_connect():
    assert split_connect("h1:1,h2:2/kafka/x") == ("h1:1,h2:2", "/kafka/x")
    assert split_connect("h:1") == ("h:1", "")


def test_members_register_elect_and_push_state(members, zk_factory):
    m1, b1 = members(1, broker_rack="r1")
    m2, b2 = members(2, broker_rack="r2")
    assert m1.cluster_id == m2.cluster_id and len(m1.cluster_id) == 22

    def both_seen():
        s = b1.state
        return s and [b["id"] for b in s["brokers"]] == [1, 2] and s["controller_id"] in (1, 2)
    wait_for(both_seen, what="state with both brokers and a controller")
    s = b1.state
    assert s["cluster_id"] == m1.cluster_id and s["controller_epoch"] >= 1
    # The chroot of zookeeper.connect was created and holds Kafka's layout.
    zk = zk_factory()
    # Each broker's epoch is its registration's czxid (KIP-380).
    epoch1 = zk.exists("/kafka" + L.broker_path(1)).czxid
    assert s["brokers"][0] == {"id": 1, "host": "127.0.0.1", "port": 9101, "rack": "r1",
                               "endpoints": ["PLAINTEXT://127.0.0.1:9101"], "epoch": epoch1}
    assert s["broker_epoch"] == epoch1
    data, _ = zk.get("/kafka" + L.broker_path(2))
    reg = json.loads(data)
    assert reg["endpoints"] == ["PLAINTEXT://127.0.0.1:9102"] and reg["version"] == 5
    assert reg["rack"] == "r2"


def test_create_topics_request_and_isr_change(members):
    m1, b1 = members(1)
    m2, b2 = members(2)
    wait_for(lambda: b2.state and len(b2.state["brokers"]) == 2)
    res = b2.request("create_topics", {"topics": [
        {"name": "orders", "num_partitions": 2, "replication_factor": 2, "assignments": None,
         "configs": {"cleanup.policy": "compact"}, "validate_only": False},
        {"name": "orders", "num_partitions": 1, "replication_factor": 1, "assignments": None,
         "configs": {}, "validate_only": False},
        {"name": "toobig", "num_partitions": 1, "replication_factor": 3, "assignments": None,
         "configs": {}, "validate_only": False}]})
    assert [t["error_code"] for t in res["topics"]] == [0, 36, 38], res
    for b in (b1, b2):
        wait_for(lambda: (p := b.partition("orders", 1)) and p["leader"] != -1,
                 what="orders-1 with a leader in the pushed state")
    t = next(t for t in b1.state["topics"] if t["name"] == "orders")
    assert t["configs"] == {"cleanup.policy": "compact"} and len(t["id"]) == 22
    p0 = b1.partition("orders", 0)
    assert sorted(p0["isr"]) == [1, 2] and p0["leader_epoch"] == 0

    # The leader shrinks the ISR: written to ZooKeeper, pushed back to both.
    leader_b = {1: b1, 2: b2}[p0["leader"]]
    follower = 3 - p0["leader"]
    leader_b.isr_proposals.append({"topic": "orders", "partition": 0, "leader_epoch": 0,
                                   "isr": [p0["leader"]]})
    for b in (b1, b2):
        wait_for(lambda: b.partition("orders", 0)["isr"] == [p0["leader"]], what="ISR shrink")
    # A proposal made at an old leader epoch, or by a non-leader, is dropped.
    {1: b1, 2: b2}[follower].isr_proposals.append(
        {"topic": "orders", "partition": 0, "leader_epoch": 0, "isr": [follower]})
    leader_b.isr_proposals.append({"topic": "orders", "partition": 0, "leader_epoch": 9,
                                   "isr": [1, 2]})
    m = {1: m1, 2: m2}[follower]
    assert not m.write_isr_change({"topic": "orders", "partition": 0, "leader_epoch": 0,
                                   "isr": [follower]})
    assert b1.partition("orders", 0)["isr"] == [p0["leader"]]
    # The follower has its replica on a failed log directory: it does not
    # rejoin, whatever its leader saw of its fetches; once the report is
    # gone it does.
    leader_m = {1: m1, 2: m2}[p0["leader"]]
    rejoin = {"topic": "orders", "partition": 0, "leader_epoch": 0,
              "isr": [p0["leader"], follower]}
    m.zk.create(L.offline_replicas_path(follower),
                L.encode_offline_replicas(follower, [("orders", 0)]), ephemeral=True,
                makepath=True)
    assert not leader_m.write_isr_change(rejoin)
    m.zk.delete(L.offline_replicas_path(follower))
    assert leader_m.write_isr_change(rejoin)
    for b in (b1, b2):
        wait_for(lambda: sorted(b.partition("orders", 0)["isr"]) == [1, 2], what="ISR expand")

    res = b1.request("create_partitions", {"topics": [{"name": "orders", "count": 4}]})
    assert res["topics"][0]["error_code"] == 0
    wait_for(lambda: (p := b1.partition("orders", 3)) and p["leader"] != -1)
    res = b1.request("delete_topics", {"topics": ["orders", "ghost"]})
    assert [t["error_code"] for t in res["topics"]] == [0, 3]
    wait_for(lambda: not any(t["name"] == "orders" for t in b2.state["topics"]))
    res = b1.request("no_such_kind", {"topics": [{"name": "x"}]})
    assert res["topics"][0]["error_code"] == -1


def test_controlled_shutdown_on_close(members):
    m1, b1 = members(1)
    m2, b2 = members(2)
    wait_for(lambda: b1.state and len(b1.state["brokers"]) == 2)
    res = b1.request("create_topics", {"topics": [
        {"name": "cs", "num_partitions": -1, "replication_factor": -1,
         "assignments": {"0": [2, 1], "1": [1, 2]}, "configs": {}, "validate_only": False}]})
    assert res["topics"][0]["error_code"] == 0, res
    wait_for(lambda: (p := b2.partition("cs", 0)) and p["leader"] == 2)
    wait_for(lambda: (p := b2.partition("cs", 1)) and p["leader"] == 1)
    assert m2.controlled_shutdown(5.0)
    # Leadership moved (epoch + 1) and was pushed to the shutting broker too.
    p = b2.partition("cs", 0)
    assert p["leader"] == 1 and p["leader_epoch"] == 1 and p["isr"] == [1]
    assert b2.partition("cs", 1)["isr"] == [1]
    m2.close(controlled_shutdown=False)
    wait_for(lambda: [b["id"] for b in b1.state["brokers"]] == [1], what="2 left")


def test_session_expiry_reregisters(members, zookeeper, zk_factory):
    from kazoo.client import KazooClient

    m1, b1 = members(1)
    wait_for(lambda: b1.state and b1.state["controller_id"] == 1)
    epoch = b1.state["controller_epoch"]
    old_session = m1.zk.client_id
    # Expire m1's session from outside: a second client on the same session
    # id closes it (the standard way to expire a ZooKeeper session in tests).
    twin = KazooClient(hosts=zookeeper.connect_string, client_id=old_session)
    twin.start(10)
    twin.stop()
    twin.close()
    zk = zk_factory()

    def back():
        stat = zk.exists("/kafka" + L.broker_path(1))
        return stat is not None and stat.ephemeralOwner != old_session[0]
    wait_for(back, timeout=20, what="re-registration under a new session")
    wait_for(lambda: b1.state["controller_id"] == 1 and b1.state["controller_epoch"] > epoch,
             timeout=20, what="re-elected with a higher epoch")


def test_registration_waits_for_an_older_session(members, zookeeper, zk_chroot, zk_factory):
    zk = zk_factory()
    zk.ensure_path("/kafka/brokers/ids")
    holder = zk_factory()
    holder.create("/kafka" + L.broker_path(5), b"{}", ephemeral=True)
    threading.Timer(1.0, lambda: (holder.stop(), holder.close())).start()
    m5, b5 = members(5)  # blocks until the old registration is gone
    data, stat = zk.get("/kafka" + L.broker_path(5))
    assert json.loads(data)["port"] == 9105 and stat.ephemeralOwner == m5.zk.client_id[0]
