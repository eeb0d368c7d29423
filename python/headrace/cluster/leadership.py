"""The controller's leadership rules, as pure functions of the assignment,
the partition's state and the live brokers: ``decide`` (what a partition's
leader and ISR should be after brokers came, went or are shutting down)
and ``elect`` (ElectLeaders, preferred or unclean). controller.py applies
them and writes the result to ZooKeeper, fenced by its epoch.
"""
from __future__ import annotations

from headrace.cluster import zk_layout as L

# Kafka's error codes of ElectLeaders results.
UNKNOWN_TOPIC_OR_PARTITION, PREFERRED_LEADER_NOT_AVAILABLE = 3, 80
ELIGIBLE_LEADERS_NOT_AVAILABLE, ELECTION_NOT_NEEDED = 83, 84


def elect(election_type: int, replicas: list[int], state: L.PartitionState, live: set[int],
          shutting: set[int], controller_epoch: int
          ) -> tuple[L.PartitionState | None, int, str | None]:
    """ElectLeaders for one partition: (new state or None, error code,
    message). Preferred: the first replica of the assignment, if it is live,
    in the ISR and not shutting down. Unclean: only for a partition whose
    leader is not live; an ISR member if one is live, else any live replica
    (the ISR becomes just it: records it lacks are lost)."""
    eligible = [r for r in replicas if r in live and r not in shutting]
    if election_type == L.PREFERRED_ELECTION:
        preferred = replicas[0] if replicas else -1
        if state.leader == preferred:
            return None, ELECTION_NOT_NEEDED, "the preferred replica leads already"
        if preferred not in eligible or preferred not in state.isr:
            return None, PREFERRED_LEADER_NOT_AVAILABLE, \
                f"preferred replica {preferred} is not live and in the ISR"
        return (L.PartitionState(preferred, state.leader_epoch + 1, state.isr, controller_epoch),
                0, None)
    if state.leader != -1 and state.leader in live:
        return None, ELECTION_NOT_NEEDED, f"leader {state.leader} is live"
    in_isr = [r for r in eligible if r in state.isr]
    if in_isr:
        isr = [b for b in state.isr if b in live]
        return L.PartitionState(in_isr[0], state.leader_epoch + 1, isr, controller_epoch), 0, None
    if eligible:
        return (L.PartitionState(eligible[0], state.leader_epoch + 1, [eligible[0]],
                                 controller_epoch), 0, None)
    return None, ELIGIBLE_LEADERS_NOT_AVAILABLE, "no replica is live"


def decide(replicas: list[int], state: L.PartitionState | None, live: set[int],
           gone: set[int], shutting: set[int], unclean: bool,
           controller_epoch: int, offline: set[int] = frozenset()) -> L.PartitionState | None:
    """The state a partition should have, or None when it is fine as it is.

    - No state yet: leader = first live replica (assignment order), ISR =
      the live replicas, leader epoch 0 (none live: wait).
    - Leader dead (or gone and back) or leaderless: new leader = first
      replica in assignment order that is in the ISR and live (and not
      shutting down); leader epoch + 1, ISR = its live members. No such
      replica: leader -1 (epoch + 1 when it changes), ISR kept, so that the
      last leader takes over when it returns; with ``unclean`` any live
      replica is chosen and the ISR becomes just it.
    - Leader shutting down (controlled shutdown): moved to another live ISR
      member the same way; if none, it stays.
    - Otherwise brokers that departed (or are shutting down) leave the ISR,
      without a leader epoch bump (the leader is unchanged). The ISR never
      becomes empty.
    - ``offline``: brokers whose replica of this partition is offline (its
      log directory failed): for this partition they count as departed.
    """
    if offline:
        live = live - offline
        gone = gone | offline
    eligible = [r for r in replicas if r in live and r not in shutting]
    if state is None:
        if not eligible:
            return None
        return L.PartitionState(leader=eligible[0], leader_epoch=0, isr=eligible,
                                controller_epoch=controller_epoch)
    isr = state.isr
    leader = state.leader
    leader_ok = leader != -1 and leader in live and leader not in gone
    if leader_ok and leader not in shutting:
        new_isr = [b for b in isr if b not in gone and b not in shutting]
        if leader not in new_isr:
            new_isr.insert(0, leader)
        if new_isr == isr:
            return None
        return L.PartitionState(leader, state.leader_epoch, new_isr, controller_epoch)

    candidates = [r for r in eligible if r in isr and r not in gone]
    if not candidates:
        # A broker that bounced (new session) is still the best choice when
        # it is the only ISR member left: its log is what it was.
        candidates = [r for r in eligible if r in isr]
    if candidates:
        new_leader = candidates[0]
        new_isr = [b for b in isr if b in live and b not in gone and b not in shutting]
        if new_leader not in new_isr:
            new_isr.insert(0, new_leader)
        return L.PartitionState(new_leader, state.leader_epoch + 1, new_isr, controller_epoch)
    if leader_ok:  # shutting down, no one to take over: stays
        return None
    if unclean and eligible:
        return L.PartitionState(eligible[0], state.leader_epoch + 1, [eligible[0]],
                                controller_epoch)
    if leader == -1:
        return None
    return L.PartitionState(-1, state.leader_epoch + 1, list(isr), controller_epoch)
