"""The controller's leadership rules, as pure functions of the assignment,
the partition's state and the live brokers: ``decide`` (what a partition's
leader and ISR should be after brokers came, went or are shutting down)
and ``elect`` (ElectLeaders, preferred or unclean). controller.py applies
them and writes the result to ZooKeeper, fenced by its epoch.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Mapping

from headrace.cluster import zk_layout as L

# Kafka's error codes of ElectLeaders results.
UNKNOWN_TOPIC_OR_PARTITION, PREFERRED_LEADER_NOT_AVAILABLE = 3, 80
ELIGIBLE_LEADERS_NOT_AVAILABLE, ELECTION_NOT_NEEDED = 83, 84


def elect(election_type: int, replicas: list[int], state: L.PartitionState,
          live: Mapping[int, int], shutting: set[int], controller_epoch: int
          ) -> tuple[L.PartitionState | None, int, str | None]:
    """ElectLeaders for one partition: (new state or None, error code,
    message). ``live``: live broker -> broker epoch. Preferred: the first
    replica of the assignment, if it is live, in the ISR (and has not
    bounced since it joined) and not shutting down. Unclean: only for a
    partition whose leader is not live; an ISR member if one is live (one
    that has not bounced first), else any live replica (the ISR becomes just
    it: records it lacks are lost). The state returned is ``stamp``ed."""
    eligible = [r for r in replicas if r in live and r not in shutting]
    bounced = state.bounced(live)
    if election_type == L.PREFERRED_ELECTION:
        preferred = replicas[0] if replicas else -1
        if state.leader == preferred:
            return None, ELECTION_NOT_NEEDED, "the preferred replica leads already"
        if preferred not in eligible or preferred not in state.isr or preferred in bounced:
            return None, PREFERRED_LEADER_NOT_AVAILABLE, \
                f"preferred replica {preferred} is not live and in the ISR"
        new = L.PartitionState(preferred, state.leader_epoch + 1, state.isr, controller_epoch)
        return stamp(new, state, live), 0, None
    if state.leader != -1 and state.leader in live:
        return None, ELECTION_NOT_NEEDED, f"leader {state.leader} is live"
    in_isr = sorted((r for r in eligible if r in state.isr), key=lambda r: r in bounced)
    if in_isr:
        isr = [b for b in state.isr if b in live]
        new = L.PartitionState(in_isr[0], state.leader_epoch + 1, isr, controller_epoch)
    elif eligible:
        new = L.PartitionState(eligible[0], state.leader_epoch + 1, [eligible[0]],
                               controller_epoch)
    else:
        return None, ELIGIBLE_LEADERS_NOT_AVAILABLE, "no replica is live"
    return stamp(new, state, live), 0, None


def stamp(new: L.PartitionState, old: L.PartitionState | None,
          epochs: Mapping[int, int]) -> L.PartitionState:
    """``new`` with the broker epoch of each ISR member (``epochs``: live
    broker -> its registration's epoch). A member keeps the epoch recorded
    when it joined, so that a bounce (a live member under another epoch) is
    still seen by whoever reads the state next; a member with none recorded
    (new in the ISR, or written by an older version) and the leader of a new
    election (chosen knowing its current epoch) get their current one."""
    recorded = old.broker_epochs if old is not None else {}
    elected = old is None or (new.leader, new.leader_epoch) != (old.leader, old.leader_epoch)
    out = {}
    for b in new.isr:
        if b in epochs and (b not in recorded or (elected and b == new.leader)):
            out[b] = epochs[b]
        elif b in recorded:
            out[b] = recorded[b]
    return replace(new, broker_epochs=out)


def decide(replicas: list[int], state: L.PartitionState | None, live: set[int],
           gone: set[int], shutting: set[int], unclean: bool,
           controller_epoch: int, offline: set[int] = frozenset(),
           epochs: Mapping[int, int] | None = None) -> L.PartitionState | None:
    """``_decide`` with broker epochs (``epochs``: live broker -> epoch;
    None: not known, no bounce detection): ISR members that bounced since
    they joined (``PartitionState.bounced``) count as departed for this
    partition, and the state returned records its members' epochs
    (``stamp``). A state that lacks the epoch of a live ISR member (written
    by an older version) is rewritten with it."""
    if epochs is None:
        return _decide(replicas, state, live, gone, shutting, unclean, controller_epoch, offline)
    if state is not None:
        gone = gone | state.bounced(epochs)
    new = _decide(replicas, state, live, gone, shutting, unclean, controller_epoch, offline)
    if new is None and state is not None and \
            any(b in epochs and b not in state.broker_epochs for b in state.isr):
        new = replace(state, controller_epoch=controller_epoch)
    return None if new is None else stamp(new, state, epochs)


def _decide(replicas: list[int], state: L.PartitionState | None, live: set[int],
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
