"""The controller against a real ZooKeeper: election, epoch fencing,
partition states of new topics, failover on a broker's session ending,
leaderless partitions, topic deletion, controlled shutdown.

No C++ broker here: "brokers" are ephemeral /brokers/ids/<id> znodes, each
held by its own ZooKeeper session (kazoo client); ending that session is a
broker dying.
"""
from __future__ import annotations

import pytest
from kazoo.exceptions import NoNodeError

from headrace.cluster import topic_admin
from headrace.cluster import zk_layout as L
from headrace.cluster.controller import Controller, ControllerFenced, Fence
from headrace.cluster.leadership import decide
from headrace.cluster.placement import (PlacementError, assign_replicas, rack_alternated,
                                        validate_assignment)
from zookeeper_fixture import wait_for


class Cluster:
    """Controllers and fake brokers in one chroot."""

    def __init__(self, zk_factory):
        self.zk_factory = zk_factory
        self.admin = zk_factory()
        L.ensure_base_paths(self.admin)
        self.brokers = {}      # id -> kazoo client holding its registration
        self.controllers = {}  # id -> Controller

    def register(self, broker_id, rack=None):
        c = self.zk_factory()
        reg = L.BrokerRegistration(broker_id, "127.0.0.1", 9000 + broker_id, rack)
        c.create(L.broker_path(broker_id), reg.encode(), ephemeral=True, makepath=True)
        self.brokers[broker_id] = c
        return c

    def end_session(self, broker_id):
        c = self.brokers.pop(broker_id)
        c.stop()
        c.close()

    def controller(self, broker_id, **kw):
        ctl = Controller(self.zk_factory(), broker_id, **kw).start()
        self.controllers[broker_id] = ctl
        return ctl

    def stop_controller(self, broker_id):
        ctl = self.controllers.pop(broker_id)
        ctl.zk.stop()  # the session ends: /controller goes away
        ctl.zk.close()
        ctl.close()

    def active(self):
        act = [c for c in self.controllers.values() if c.active]
        return act[0] if len(act) == 1 else None

    def controller_id(self):
        try:
            data, _ = self.admin.get(L.CONTROLLER)
        except NoNodeError:
            return None
        return L.decode_controller(data)

    def epoch(self):
        data, _ = self.admin.get(L.CONTROLLER_EPOCH)
        return L.decode_controller_epoch(data)

    def create_topic(self, name, partitions=None, rf=None, assignments=None, configs=None):
        payload = {"topics": [{"name": name,
                               "num_partitions": -1 if partitions is None else partitions,
                               "replication_factor": -1 if rf is None else rf,
                               "assignments": assignments, "configs": configs or {}}]}
        return topic_admin.create_topics(self.admin, payload)["topics"][0]

    def state(self, topic, p):
        try:
            data, _ = self.admin.get(L.partition_state_path(topic, p))
        except NoNodeError:
            return None
        return L.PartitionState.decode(data)

    def wait_state(self, topic, p, pred, what="", timeout=10.0):
        return wait_for(lambda: (s := self.state(topic, p)) is not None and pred(s) and s,
                        timeout, what=what or f"{topic}-{p}")


@pytest.fixture
def cluster(zk_factory):
    c = Cluster(zk_factory)
    yield c
    for ctl in list(c.controllers.values()):
        ctl.close()


def test_one_controller_elected_and_failover_raises_epoch(cluster):
    for b in (1, 2, 3):
        cluster.register(b)
        cluster.controller(b)
    ctl = wait_for(cluster.active, what="one active controller")
    assert cluster.controller_id() == ctl.broker_id
    first_epoch = cluster.epoch()
    assert ctl.epoch == first_epoch >= 1
    assert sum(c.active for c in cluster.controllers.values()) == 1

    old_id = ctl.broker_id
    cluster.stop_controller(old_id)
    new = wait_for(lambda: (a := cluster.active()) and a.broker_id != old_id and a,
                   what="a new controller")
    assert cluster.controller_id() == new.broker_id
    assert new.epoch == cluster.epoch() > first_epoch


def test_stale_controller_writes_are_fenced(cluster):
    cluster.register(1)
    cluster.register(2)
    a = cluster.controller(1)
    wait_for(lambda: a.active, what="controller 1")
    stale = Fence(cluster.admin, a.fence.epoch, a.fence.epoch_version)
    assert cluster.create_topic("fenced", 1, 2)["error_code"] == 0
    cluster.wait_state("fenced", 0, lambda s: True)

    b = cluster.controller(2)
    cluster.stop_controller(1)
    wait_for(lambda: b.active, what="controller 2")
    assert b.epoch > stale.epoch

    data, stat = cluster.admin.get(L.partition_state_path("fenced", 0))
    before = L.PartitionState.decode(data)
    forged = L.PartitionState(leader=2, leader_epoch=before.leader_epoch + 7, isr=[2],
                              controller_epoch=stale.epoch)
    with pytest.raises(ControllerFenced):
        stale.set_partition_state("fenced", 0, forged, stat.version)
    assert cluster.state("fenced", 0) == before
    # The current controller's fence writes.
    current = Fence(cluster.admin, b.fence.epoch, b.fence.epoch_version)
    ok = L.PartitionState(before.leader, before.leader_epoch, before.isr, b.epoch)
    current.set_partition_state("fenced", 0, ok, stat.version)
    assert cluster.state("fenced", 0).controller_epoch == b.epoch


def test_new_topic_gets_states_and_rack_aware_placement(cluster):
    racks = {1: "a", 2: "a", 3: "b", 4: "b", 5: "c", 6: "c"}
    for b, r in racks.items():
        cluster.register(b, rack=r)
    ctl = cluster.controller(1)
    res = cluster.create_topic("racky", 12, 3, configs={"min.insync.replicas": "2"})
    assert res["error_code"] == 0, res
    assert len(res["topic_id"]) == 22 and res["num_partitions"] == 12
    data, _ = cluster.admin.get(L.topic_path("racky"))
    assignment = L.TopicAssignment.decode("racky", data)
    assert assignment.topic_id == res["topic_id"]
    leaders = {}
    for p, replicas in assignment.partitions.items():
        assert len(replicas) == 3 and len(set(replicas)) == 3
        assert {racks[b] for b in replicas} == {"a", "b", "c"}, (p, replicas)
        leaders[replicas[0]] = leaders.get(replicas[0], 0) + 1
        s = cluster.wait_state("racky", p, lambda s: True)
        assert s.leader == replicas[0] and s.isr == replicas and s.leader_epoch == 0
        assert s.controller_epoch == ctl.epoch
    assert sorted(leaders.values()) == [2] * 6  # balanced leaders
    data, _ = cluster.admin.get(L.topic_config_path("racky"))
    assert L.decode_topic_config(data) == {"min.insync.replicas": "2"}


def test_topic_without_id_gets_one(cluster):
    cluster.register(1)
    ctl = cluster.controller(1)
    wait_for(lambda: ctl.active)
    # As an old Kafka tool writes it: version 1, no topic_id.
    cluster.admin.create(L.topic_path("old"), b'{"version":1,"partitions":{"0":[1]}}')
    cluster.wait_state("old", 0, lambda s: s.leader == 1)

    def has_id():
        data, _ = cluster.admin.get(L.topic_path("old"))
        return L.TopicAssignment.decode("old", data).topic_id
    assert len(wait_for(has_id, what="a topic id")) == 22


def test_create_topic_errors(cluster):
    cluster.register(1)
    cluster.register(2)
    assert cluster.create_topic("dup", 1, 1)["error_code"] == 0
    assert cluster.create_topic("dup", 1, 1)["error_code"] == topic_admin.TOPIC_ALREADY_EXISTS
    assert cluster.create_topic("bad/name", 1, 1)["error_code"] == \
        topic_admin.INVALID_TOPIC_EXCEPTION
    assert cluster.create_topic("x" * 250, 1, 1)["error_code"] == \
        topic_admin.INVALID_TOPIC_EXCEPTION
    assert cluster.create_topic("zero", 0, 1)["error_code"] == topic_admin.INVALID_PARTITIONS
    r = cluster.create_topic("big", 1, 3)
    assert r["error_code"] == topic_admin.INVALID_REPLICATION_FACTOR
    assert "larger than available brokers: 2" in r["error_message"]
    assert cluster.create_topic("asg", assignments={"0": [1, 1]})["error_code"] == \
        topic_admin.INVALID_REPLICA_ASSIGNMENT
    assert cluster.create_topic("asg", assignments={"0": [1, 9]})["error_code"] == \
        topic_admin.INVALID_REPLICA_ASSIGNMENT
    assert cluster.create_topic("asg", assignments={"1": [1]})["error_code"] == \
        topic_admin.INVALID_REPLICA_ASSIGNMENT
    assert cluster.create_topic("asg", assignments={"0": [2, 1], "1": [1, 2]})["error_code"] == 0
    data, _ = cluster.admin.get(L.topic_path("asg"))
    assert L.TopicAssignment.decode("asg", data).partitions == {0: [2, 1], 1: [1, 2]}
    assert cluster.create_topic("d.ot", 1, 1)["error_code"] == 0
    assert cluster.create_topic("d_ot", 1, 1)["error_code"] == topic_admin.INVALID_TOPIC_EXCEPTION


def test_broker_leaving_moves_leadership_within_isr(cluster):
    for b in (1, 2, 3, 4):
        cluster.register(b)
    ctl = cluster.controller(1)
    wait_for(lambda: ctl.active)
    # p0: leader 2, ISR 2,3 (4 is a replica but not in the ISR).
    assert cluster.create_topic("fo", assignments={"0": [2, 4, 3], "1": [3, 2, 4]})[
        "error_code"] == 0
    s0 = cluster.wait_state("fo", 0, lambda s: s.leader == 2)
    cluster.wait_state("fo", 1, lambda s: s.leader == 3)
    data, stat = cluster.admin.get(L.partition_state_path("fo", 0))
    cluster.admin.set(L.partition_state_path("fo", 0),
                      L.PartitionState(2, s0.leader_epoch, [2, 3], s0.controller_epoch).encode(),
                      version=stat.version)

    cluster.end_session(2)
    s = cluster.wait_state("fo", 0, lambda s: s.leader != 2, "p0 leader moved")
    assert s.leader == 3, "leader must come from the ISR (4 is not in it)"
    assert s.isr == [3] and s.leader_epoch == s0.leader_epoch + 1
    # p1: follower 2 leaves the ISR, the leader and its epoch stay.
    s1 = cluster.wait_state("fo", 1, lambda s: 2 not in s.isr, "p1 ISR shrunk")
    assert s1.leader == 3 and s1.leader_epoch == 0 and s1.isr == [3, 4]

    # The last ISR member goes: no leader (unclean election is off), ISR kept.
    cluster.end_session(3)
    s = cluster.wait_state("fo", 0, lambda s: s.leader == -1, "p0 offline")
    assert s.isr == [3] and s.leader_epoch == s0.leader_epoch + 2
    s1 = cluster.wait_state("fo", 1, lambda s: s.leader == 4, "p1 to 4")
    assert s1.isr == [4] and s1.leader_epoch == 1

    # 3 comes back: it takes over the leaderless partition it is the ISR of.
    cluster.register(3)
    s = cluster.wait_state("fo", 0, lambda s: s.leader == 3, "p0 back on 3")
    assert s.isr == [3] and s.leader_epoch == s0.leader_epoch + 3
    # 2 coming back changes nothing by itself (the leaders' ISR expansion adds it).
    cluster.register(2)
    assert cluster.state("fo", 1).leader == 4


def test_unclean_leader_election(cluster):
    for b in (1, 2):
        cluster.register(b)
    ctl = cluster.controller(1, unclean_leader_election=True)
    wait_for(lambda: ctl.active)
    assert cluster.create_topic("uncl", assignments={"0": [2, 1]})["error_code"] == 0
    s0 = cluster.wait_state("uncl", 0, lambda s: s.leader == 2)
    data, stat = cluster.admin.get(L.partition_state_path("uncl", 0))
    cluster.admin.set(L.partition_state_path("uncl", 0),
                      L.PartitionState(2, 0, [2], s0.controller_epoch).encode(),
                      version=stat.version)
    cluster.end_session(2)
    s = cluster.wait_state("uncl", 0, lambda s: s.leader == 1, "unclean leader 1")
    assert s.isr == [1] and s.leader_epoch == 1


def test_unclean_leader_election_per_topic(cluster):
    for b in (1, 2):
        cluster.register(b)
    ctl = cluster.controller(1)  # broker default: off
    wait_for(lambda: ctl.active)
    for name, configs in (("on", {"unclean.leader.election.enable": "true"}), ("off", {})):
        assert cluster.create_topic(name, assignments={"0": [2, 1]}, configs=configs)[
            "error_code"] == 0
        s0 = cluster.wait_state(name, 0, lambda s: s.leader == 2)
        data, stat = cluster.admin.get(L.partition_state_path(name, 0))
        cluster.admin.set(L.partition_state_path(name, 0),
                          L.PartitionState(2, 0, [2], s0.controller_epoch).encode(),
                          version=stat.version)
    cluster.end_session(2)
    cluster.wait_state("on", 0, lambda s: s.leader == 1, "unclean election on the topic")
    assert cluster.wait_state("off", 0, lambda s: s.leader == -1).isr == [2]


def test_controller_failover_keeps_going(cluster):
    for b in (1, 2, 3):
        cluster.register(b)
    cluster.controller(1)
    wait_for(lambda: cluster.controllers[1].active)
    cluster.controller(2)
    assert cluster.create_topic("cf", assignments={"0": [3, 2]})["error_code"] == 0
    cluster.wait_state("cf", 0, lambda s: s.leader == 3)
    cluster.stop_controller(1)
    wait_for(lambda: cluster.controllers[2].active, what="controller 2")
    cluster.end_session(3)
    s = cluster.wait_state("cf", 0, lambda s: s.leader == 2)
    assert s.controller_epoch == cluster.controllers[2].epoch


def test_topic_deletion_and_partition_creation(cluster):
    for b in (1, 2, 3):
        cluster.register(b)
    ctl = cluster.controller(1)
    wait_for(lambda: ctl.active)
    assert cluster.create_topic("grow", 2, 2)["error_code"] == 0
    r = topic_admin.create_partitions(cluster.admin, {"topics": [{"name": "grow", "count": 5}]})
    assert r["topics"][0]["error_code"] == 0, r
    for p in range(5):
        s = cluster.wait_state("grow", p, lambda s: True)
        assert len(s.isr) == 2
    r = topic_admin.create_partitions(cluster.admin, {"topics": [{"name": "grow", "count": 3},
                                                                 {"name": "nope", "count": 3}]})
    assert [t["error_code"] for t in r["topics"]] == [topic_admin.INVALID_PARTITIONS,
                                                      topic_admin.UNKNOWN_TOPIC_OR_PARTITION]

    r = topic_admin.delete_topics(cluster.admin, {"topics": ["grow", "nope"]})
    assert [t["error_code"] for t in r["topics"]] == [0, topic_admin.UNKNOWN_TOPIC_OR_PARTITION]
    assert cluster.admin.exists(L.topic_path("grow")) is None
    assert cluster.admin.exists(L.topic_config_path("grow")) is None
    assert cluster.admin.get_children(L.ADMIN_DELETE_TOPICS) == []
    # The name can be used again, with a new topic id.
    assert cluster.create_topic("grow", 1, 1)["error_code"] == 0


def test_controlled_shutdown_moves_leadership_away(cluster):
    for b in (1, 2, 3):
        cluster.register(b)
    ctl = cluster.controller(1)
    wait_for(lambda: ctl.active)
    assert cluster.create_topic("cs", assignments={"0": [2, 3], "1": [3, 2]})[
        "error_code"] == 0
    assert cluster.create_topic("cs1", assignments={"0": [2]})["error_code"] == 0
    for p in range(2):
        cluster.wait_state("cs", p, lambda s: True)
    cluster.wait_state("cs1", 0, lambda s: True)
    b2 = cluster.brokers[2]
    b2.create(L.controlled_shutdown_path(2), L.ControlledShutdown(2).encode(), ephemeral=True)

    def done():
        data, _ = b2.get(L.controlled_shutdown_path(2))
        cs = L.ControlledShutdown.decode(2, data)
        return cs.done and cs
    cs = wait_for(done, what="controlled shutdown done")
    assert cs.remaining == [("cs1", 0)]  # RF 1: nowhere to move
    s0 = cluster.state("cs", 0)
    assert s0.leader == 3 and s0.isr == [3] and s0.leader_epoch == 1
    s1 = cluster.state("cs", 1)
    assert s1.leader == 3 and s1.isr == [3] and s1.leader_epoch == 0
    assert cluster.state("cs1", 0).leader == 2


def test_preferred_leader_comes_back(cluster):
    for b in (1, 2):
        cluster.register(b)
    ctl = cluster.controller(1, imbalance_check_interval_s=0.2)
    wait_for(lambda: ctl.active)
    assert cluster.create_topic("pref", assignments={"0": [2, 1], "1": [1, 2]})[
        "error_code"] == 0
    cluster.wait_state("pref", 0, lambda s: s.leader == 2)
    cluster.end_session(2)
    cluster.wait_state("pref", 0, lambda s: s.leader == 1 and s.leader_epoch == 1)
    cluster.register(2)
    # 2 is back but out of the ISR: it does not lead again (yet).
    assert cluster.state("pref", 0).leader == 1
    # Its leader takes it back into the ISR (as a leader's isr_changes would).
    data, stat = cluster.admin.get(L.partition_state_path("pref", 0))
    st = L.PartitionState.decode(data)
    cluster.admin.set(L.partition_state_path("pref", 0),
                      L.PartitionState(1, st.leader_epoch, [1, 2], st.controller_epoch).encode(),
                      version=stat.version)
    s = cluster.wait_state("pref", 0, lambda s: s.leader == 2, "preferred leader back")
    assert s.leader_epoch == 2 and s.isr == [1, 2]
    assert cluster.state("pref", 1).leader == 1


def test_a_broker_bounced_before_a_controller_was_elected_loses_its_leaderships(cluster):
    """KIP-380: the partition state records each ISR member's broker epoch,
    so a broker that re-registered under a new session while no controller
    watched (the controller itself, restarted within its session) is seen
    as bounced by the next controller's very first pass."""
    for b in (1, 2, 3):
        cluster.register(b)
    cluster.controller(1)
    wait_for(lambda: cluster.controllers[1].active)
    assert cluster.create_topic("bnc", assignments={"0": [1, 2, 3], "1": [2, 1, 3]})[
        "error_code"] == 0
    s0 = cluster.wait_state("bnc", 0, lambda s: s.leader == 1)
    s1 = cluster.wait_state("bnc", 1, lambda s: s.leader == 2)
    assert set(s0.broker_epochs) == {1, 2, 3}
    # Controller and broker 1 go together (one process), and broker 1 is
    # back under a new registration before any controller runs again.
    cluster.stop_controller(1)
    cluster.end_session(1)
    cluster.register(1)
    cluster.controller(2)
    s = cluster.wait_state("bnc", 0, lambda s: s.leader != 1, "p0 leadership moved off 1")
    assert s.leader == 2 and s.leader_epoch == s0.leader_epoch + 1 and 1 not in s.isr
    s = cluster.wait_state("bnc", 1, lambda s: 1 not in s.isr, "1 left the ISR of p1")
    assert s.leader == 2 and s.leader_epoch == s1.leader_epoch
    # It is the only ISR member left: then it leads, under its new epoch.
    cluster.admin.set(L.partition_state_path("bnc", 1),
                      L.PartitionState(2, s.leader_epoch, [2, 1], s.controller_epoch,
                                       {2: s.broker_epochs[2], 1: 1}).encode())
    cluster.end_session(2)
    s = cluster.wait_state("bnc", 1, lambda s: s.leader == 1, "p1 to the bounced 1")
    epoch1 = cluster.brokers[1].exists(L.broker_path(1)).czxid
    assert s.isr == [1] and s.broker_epochs == {1: epoch1}


def test_decide_rules():
    st = L.PartitionState
    live = {1, 2, 3}
    # New partition: first live replica leads, ISR = live replicas.
    assert decide([4, 2, 1], None, live, set(), set(), False, 5) == st(2, 0, [2, 1], 5)
    assert decide([4], None, live, set(), set(), False, 5) is None
    # Healthy: nothing to do.
    assert decide([1, 2], st(1, 3, [1, 2], 4), live, set(), set(), False, 5) is None
    # A broker that bounced (new session) as leader: another ISR member takes over.
    assert decide([1, 2], st(1, 3, [1, 2], 4), live, {1}, set(), False, 5) == st(2, 4, [2], 5)
    # ... unless it is the only ISR member.
    assert decide([1, 2], st(1, 3, [1], 4), live, {1}, set(), False, 5) == st(1, 4, [1], 5)
    # Broker epochs: one recorded that the live registration no longer has
    # is a bounce, whoever decides; the state records the members' epochs.
    epochs = {1: 11, 2: 20, 3: 30}
    assert decide([1, 2], st(1, 3, [1, 2], 4, {1: 10, 2: 20}), live, set(), set(), False, 5,
                  epochs=epochs) == st(2, 4, [2], 5, {2: 20})
    assert decide([1, 2], st(2, 3, [2, 1], 4, {1: 10, 2: 20}), live, set(), set(), False, 5,
                  epochs=epochs) == st(2, 3, [2], 5, {2: 20})
    assert decide([1, 2], st(1, 3, [1], 4, {1: 10}), live, set(), set(), False, 5,
                  epochs=epochs) == st(1, 4, [1], 5, {1: 11})
    # A state without epochs (an older version's) gets them.
    assert decide([1, 2], st(1, 3, [1, 2], 4), live, set(), set(), False, 5,
                  epochs=epochs) == st(1, 3, [1, 2], 5, {1: 11, 2: 20})
    assert decide([1, 2], st(1, 3, [1, 2], 4, {1: 11, 2: 20}), live, set(), set(), False, 5,
                  epochs=epochs) is None


def test_placement_matches_kafka():
    # Kafka's documented example (AdminUtils): 5 brokers, 10 partitions, RF 3.
    got = assign_replicas({b: None for b in range(5)}, 10, 3, start_index=0,
                          next_replica_shift=0)
    assert got == {0: [0, 1, 2], 1: [1, 2, 3], 2: [2, 3, 4], 3: [3, 4, 0], 4: [4, 0, 1],
                   5: [0, 2, 3], 6: [1, 3, 4], 7: [2, 4, 0], 8: [3, 0, 1], 9: [4, 1, 2]}
    assert rack_alternated({0: "r1", 1: "r1", 2: "r2", 3: "r3", 4: "r3", 5: "r2"}) == \
        [0, 2, 3, 1, 5, 4]
    with pytest.raises(PlacementError) as e:
        assign_replicas({1: "a", 2: None}, 1, 1)
    assert e.value.error_code == 39
    with pytest.raises(PlacementError):
        validate_assignment({0: [1], 1: [1, 2]}, [1, 2])
