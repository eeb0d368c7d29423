"""The reassignment rules (headrace.cluster.reassignment) on their own:
how a request changes the topic znode and the partition state, and when a
reassignment completes. The end-to-end runs with real brokers are in
test_cluster_replication.py::test_reassignment_*."""
from headrace.cluster import reassignment as R
from headrace.cluster import zk_layout as L

LIVE = {1, 2, 3, 4}


def _topic(replicas):
    return L.TopicAssignment("id", {0: list(replicas)})


def test_start_puts_targets_first_bumps_the_epoch_and_keeps_leader_and_isr():
    a = _topic([1, 2, 3])
    code, _, st = R.plan_alter(a, 0, [2, 3, 4], L.PartitionState(1, 5, [1, 2, 3], 7), LIVE, 8)
    assert code == R.NONE
    assert (a.partitions[0], a.adding[0], a.removing[0]) == ([2, 3, 4, 1], [4], [1])
    assert (st.leader, st.leader_epoch, st.isr, st.controller_epoch) == (1, 6, [1, 2, 3], 8)
    assert a.target(0) == [2, 3, 4] and a.reassigning(0)
    # The znode round-trips in Kafka's version 3 format.
    back = L.TopicAssignment.decode("t", a.encode())
    assert (back.partitions, back.adding, back.removing) == (a.partitions, {0: [4]}, {0: [1]})


def test_completion_waits_for_the_whole_target_in_the_isr_then_moves_the_leader():
    a = _topic([1, 2, 3])
    _, _, st = R.plan_alter(a, 0, [2, 3, 4], L.PartitionState(1, 5, [1, 2, 3], 7), LIVE, 8)
    assert R.plan_completion(a, 0, st, LIVE, 8) is None  # 4 not in the ISR yet
    grown = L.PartitionState(1, 6, [1, 2, 3, 4], 8)
    done = R.plan_completion(a, 0, grown, LIVE, 8)
    assert (done.leader, done.leader_epoch, done.isr) == (2, 7, [2, 3, 4])
    assert a.partitions[0] == [2, 3, 4] and not a.reassigning(0)


def test_completion_waits_when_no_target_replica_can_lead():
    a = _topic([1, 2])
    R.plan_alter(a, 0, [3], L.PartitionState(1, 0, [1, 2], 1), LIVE, 1)
    assert R.plan_completion(a, 0, L.PartitionState(1, 1, [1, 2, 3], 1), {1, 2}, 1) is None
    assert a.reassigning(0)


def test_cancel_restores_the_original_replicas_and_drops_added_ones_from_the_isr():
    a = _topic([1, 2])
    R.plan_alter(a, 0, [3, 4], L.PartitionState(1, 0, [1, 2], 1), LIVE, 1)
    assert a.partitions[0] == [3, 4, 1, 2]
    code, _, st = R.plan_alter(a, 0, None, L.PartitionState(1, 1, [1, 2, 3], 1), LIVE, 1)
    assert code == R.NONE
    assert a.partitions[0] == [1, 2] and not a.reassigning(0)
    assert (st.leader, st.leader_epoch, st.isr) == (1, 2, [1, 2])


def test_a_new_target_replaces_the_one_in_progress():
    a = _topic([1, 2])
    R.plan_alter(a, 0, [3, 4], L.PartitionState(1, 0, [1, 2], 1), LIVE, 1)
    code, _, st = R.plan_alter(a, 0, [2, 3], L.PartitionState(1, 1, [1, 2, 4], 1), LIVE, 1)
    assert code == R.NONE
    assert (a.partitions[0], a.adding[0], a.removing[0]) == ([2, 3, 1], [3], [1])
    assert st.isr == [1, 2]  # 4 is no longer a replica


def test_refusals_leave_the_assignment_untouched():
    a = _topic([1, 2])
    st = L.PartitionState(1, 0, [1, 2], 1)
    for target, code in (([], R.INVALID_REPLICA_ASSIGNMENT), ([2, 2], R.INVALID_REPLICA_ASSIGNMENT),
                         ([2, 9], R.INVALID_REPLICA_ASSIGNMENT),
                         (None, R.NO_REASSIGNMENT_IN_PROGRESS)):
        assert R.plan_alter(a, 0, target, st, LIVE, 1)[0] == code
    assert R.plan_alter(a, 5, [1], st, LIVE, 1)[0] == R.UNKNOWN_TOPIC_OR_PARTITION
    assert a.partitions == {0: [1, 2]} and not a.reassigning(0)


def test_same_set_in_another_order_only_reorders():
    a = _topic([1, 2, 3])
    code, _, st = R.plan_alter(a, 0, [3, 1, 2], L.PartitionState(1, 0, [1, 2, 3], 1), LIVE, 1)
    assert (code, st) == (R.NONE, None)
    assert a.partitions[0] == [3, 1, 2] and not a.reassigning(0)
