"""Partition reassignment (KIP-455), decided by the controller
(docs/cluster.md, "Partition reassignment").

A reassignment moves a partition from its original replicas (ORS) to target
replicas (TRS) without losing a committed record:

1. Start: the topic znode's replicas become RS = TRS followed by ORS - TRS,
   with ``adding_replicas`` = TRS - ORS and ``removing_replicas`` = ORS - TRS;
   the partition's leader epoch is bumped (leader and ISR unchanged), so the
   leader learns the new replica set and the new replicas start fetching.
2. The leader adds each new replica to the ISR once it has caught up (the
   normal ISR expansion; the controller watches the state znode meanwhile).
3. Completion, once TRS is inside the ISR: the replicas become TRS, the ISR
   loses the removed replicas, the leader moves to the first live ISR member
   of TRS if it is being removed, and the leader epoch is bumped (fencing the
   removed replicas). The removed brokers then delete their copies.

A new target for a partition that is already moving replaces the target
(ORS stays the original). Cancel (target None) goes back to ORS: the added
replicas leave the replica set and the ISR. Each step is one fenced
ZooKeeper transaction over the topic znode and the state znodes it changes,
each conditional on the version read, so a step either happens whole or not
at all and a controller failover simply continues from what ZooKeeper holds.
"""
from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Mapping

from kazoo.exceptions import BadVersionError, NoNodeError

from headrace.cluster import zk_layout as L
from headrace.cluster.fence import MAX_CAS_RETRIES
from headrace.cluster.leadership import stamp

log = logging.getLogger("headrace.cluster.reassignment")

# Kafka's error codes of AlterPartitionReassignments results.
NONE, UNKNOWN_TOPIC_OR_PARTITION, INVALID_REPLICA_ASSIGNMENT = 0, 3, 39
NO_REASSIGNMENT_IN_PROGRESS = 85


def original_replicas(a: L.TopicAssignment, p: int) -> list[int]:
    adding = set(a.adding.get(p, ()))
    return [b for b in a.partitions[p] if b not in adding]


def _leader_among(candidates: list[int], state: L.PartitionState, isr: list[int],
                  live: Mapping[int, int]) -> int:
    """The current leader if it is a candidate and live, else the first
    candidate that is live and in ``isr``; -1 if none."""
    if state.leader in candidates and state.leader in live:
        return state.leader
    return next((b for b in candidates if b in isr and b in live), -1)


def plan_alter(a: L.TopicAssignment, p: int, target: list[int] | None,
               state: L.PartitionState | None, live: Mapping[int, int], controller_epoch: int
               ) -> tuple[int, str | None, L.PartitionState | None]:
    """Applies one request for partition ``p`` to ``a`` (in place) and
    returns (error code, message, the partition's new state or None when it
    does not change). ``a`` is left untouched on an error."""
    if p not in a.partitions:
        return UNKNOWN_TOPIC_OR_PARTITION, "unknown topic or partition", None
    ors = original_replicas(a, p)
    if target is None:
        if not a.reassigning(p):
            return NO_REASSIGNMENT_IN_PROGRESS, "no reassignment is in progress", None
        rs = ors
    else:
        if not target:
            return INVALID_REPLICA_ASSIGNMENT, "the replica list is empty", None
        if len(set(target)) != len(target):
            return INVALID_REPLICA_ASSIGNMENT, f"duplicate replicas in {target}", None
        unknown = sorted(set(target) - set(live))
        if unknown:
            return INVALID_REPLICA_ASSIGNMENT, \
                f"brokers {unknown} are not registered (live brokers: {sorted(live)})", None
        rs = list(target) + [b for b in ors if b not in target]
    adding = [b for b in rs if b not in ors]
    removing = [b for b in ors if target is not None and b not in target]
    old_rs = a.partitions[p]
    a.partitions[p], a.adding[p], a.removing[p] = rs, adding, removing
    if state is None or set(rs) == set(old_rs):
        return NONE, None, None  # only the order changed (or no state yet)
    # Replicas that were being added and are no longer wanted leave the ISR.
    isr = [b for b in state.isr if b in rs] or [b for b in rs if b in live][:1]
    leader = _leader_among(rs, state, isr, live)
    return NONE, None, L.PartitionState(leader, state.leader_epoch + 1, isr, controller_epoch)


def plan_completion(a: L.TopicAssignment, p: int, state: L.PartitionState | None,
                    live: Mapping[int, int], controller_epoch: int) -> L.PartitionState | None:
    """Finishes partition ``p``'s reassignment when its target replicas are
    all in the ISR and one of them can lead: updates ``a`` in place and
    returns the new state; None (``a`` untouched) while it must wait."""
    if state is None or not a.reassigning(p):
        return None
    trs = a.target(p)
    if not set(trs) <= set(state.isr):
        return None
    isr = [b for b in state.isr if b in trs]
    leader = _leader_among(trs, state, isr, live)
    if leader == -1:
        return None
    a.partitions[p], a.adding[p], a.removing[p] = trs, [], []
    return L.PartitionState(leader, state.leader_epoch + 1, isr, controller_epoch)


@dataclass
class _Topic:
    assignment: L.TopicAssignment
    version: int
    states: dict[int, tuple[L.PartitionState | None, int]]  # partition -> (state, version)


class Reassigner:
    """The controller's reassignment duties, run on its thread with its
    fence. ``on_watch`` re-queues a reconcile pass (set on the state znodes
    of moving partitions, so ISR growth wakes the controller)."""

    def __init__(self, zk, broker_id: int, on_watch):
        self.zk = zk
        self.broker_id = broker_id
        self.on_watch = on_watch

    def _read(self, topic: str, watch_moving: bool = False) -> _Topic | None:
        try:
            data, stat = self.zk.get(L.topic_path(topic))
            a = L.TopicAssignment.decode(topic, data)
        except (NoNodeError, L.LayoutError):
            return None
        reads = {p: self.zk.get_async(L.partition_state_path(topic, p),
                                      watch=self.on_watch if watch_moving and a.reassigning(p)
                                      else None)
                 for p in a.partitions}
        states = {}
        for p, r in reads.items():
            try:
                sdata, sstat = r.get()
                states[p] = (L.PartitionState.decode(sdata), sstat.version)
            except (NoNodeError, L.LayoutError):
                states[p] = (None, -1)
        return _Topic(a, stat.version, states)

    def _commit(self, fence, topic: str, t: _Topic, changed: dict[int, L.PartitionState],
                live: Mapping[int, int]) -> None:
        def build(tx):
            tx.set_data(L.topic_path(topic), t.assignment.encode(), version=t.version)
            for p, st in changed.items():
                st = stamp(st, t.states[p][0], live)
                tx.set_data(L.partition_state_path(topic, p), st.encode(),
                            version=t.states[p][1])
        fence.commit(build)

    def process_requests(self, fence, live: Mapping[int, int]) -> None:
        for child in self.zk.get_children(L.ADMIN_REASSIGNMENTS, watch=self.on_watch):
            path = f"{L.ADMIN_REASSIGNMENTS}/{child}"
            try:
                data, stat = self.zk.get(path)
                req = L.AlterReassignments.decode(data, path)
            except NoNodeError:
                continue
            except L.LayoutError as e:
                log.warning("controller %d: %s", self.broker_id, e)
                continue
            if req.done:
                continue
            req.results = self._alter(fence, req.partitions, live)
            req.done = True
            try:
                fence.commit(lambda tx: tx.set_data(path, req.encode(), version=stat.version))
            except (BadVersionError, NoNodeError):
                continue
            log.info("controller %d: reassignment request: %s", self.broker_id,
                     [(t, p, c) for t, p, c, _ in req.results])

    def _alter(self, fence, partitions, live: Mapping[int, int]) -> list:
        by_topic: dict[str, list[tuple[int, list[int] | None]]] = {}
        for topic, p, target in partitions:
            by_topic.setdefault(topic, []).append((p, target))
        results = []
        for topic, wanted in by_topic.items():
            for _ in range(MAX_CAS_RETRIES):
                t = self._read(topic)
                if t is None:
                    results += [(topic, p, UNKNOWN_TOPIC_OR_PARTITION,
                                 "unknown topic or partition") for p, _ in wanted]
                    break
                answers, changed = [], {}
                for p, target in wanted:
                    state = t.states.get(p, (None, -1))[0]
                    code, message, new = plan_alter(t.assignment, p, target,
                                                    changed.get(p, state), live, fence.epoch)
                    answers.append((topic, p, code, message))
                    if new is not None:
                        changed[p] = new
                if all(c != NONE for _, _, c, _ in answers):
                    results += answers
                    break
                try:
                    self._commit(fence, topic, t, changed, live)
                    results += answers
                    for p, st in changed.items():
                        log.info("controller %d: %s-%d: reassigning to %s (adding %s, "
                                 "removing %s), leader epoch %d", self.broker_id, topic, p,
                                 t.assignment.target(p), t.assignment.adding.get(p, []),
                                 t.assignment.removing.get(p, []), st.leader_epoch)
                    break
                except (BadVersionError, NoNodeError):
                    continue  # a leader's ISR change or another write came first: redo
            else:
                results += [(topic, p, 7, "conflicting writes; try again") for p, _ in wanted]
        return results

    def advance(self, fence, topic: str, live: Mapping[int, int]) -> None:
        """Completes every partition of ``topic`` whose target replicas have
        all joined the ISR; watches the others' state znodes."""
        for _ in range(MAX_CAS_RETRIES):
            t = self._read(topic, watch_moving=True)
            if t is None:
                return
            changed = {}
            for p in t.assignment.partitions:
                new = plan_completion(t.assignment, p, t.states[p][0], live, fence.epoch)
                if new is not None:
                    changed[p] = new
            if not changed:
                return
            try:
                self._commit(fence, topic, t, changed, live)
            except (BadVersionError, NoNodeError):
                continue
            for p, st in changed.items():
                log.info("controller %d: %s-%d: reassignment complete, replicas %s, leader %d "
                         "(epoch %d), isr %s", self.broker_id, topic, p, t.assignment.partitions[p],
                         st.leader, st.leader_epoch, st.isr)
            return


# -- the member's side: any broker takes the request and hands it on -------------------
def alter_request(zk, payload, stop) -> dict:
    """AlterPartitionReassignments (control request "alter_reassignments"):
    a sequential ephemeral /admin/reassignments znode the controller answers
    in place. {"partitions": [{"topic", "partition", "replicas": [..] | null}],
    "timeout_ms"} -> {"partitions": [{"topic", "partition", "error_code",
    "error_message"}]}; REQUEST_TIMED_OUT for every partition when the
    controller does not answer within timeout_ms."""
    req = L.AlterReassignments([(str(x["topic"]), int(x["partition"]),
                                 None if x.get("replicas") is None else
                                 [int(b) for b in x["replicas"]])
                                for x in payload.get("partitions") or []])
    answer = req
    if req.partitions:
        path = zk.create(f"{L.ADMIN_REASSIGNMENTS}/request-", req.encode(), ephemeral=True,
                         sequence=True)
        deadline = time.monotonic() + max(1, int(payload.get("timeout_ms") or 60000)) / 1000
        try:
            while time.monotonic() < deadline and not stop.is_set():
                answer = L.AlterReassignments.decode(zk.get(path)[0], path)
                if answer.done:
                    break
                time.sleep(0.05)
        finally:
            try:
                zk.delete(path)
            except NoNodeError:
                pass
    if answer.done:
        results = answer.results
    else:
        results = [(t, p, 7, "the controller did not answer in time")
                   for t, p, _ in req.partitions]
    return {"partitions": [{"topic": t, "partition": p, "error_code": c, "error_message": m}
                           for t, p, c, m in results]}


def list_ongoing(zk, payload) -> dict:
    """ListPartitionReassignments (control request "list_reassignments"):
    the partitions with a reassignment in progress, read from the topic
    znodes; {"partitions": null | [{"topic", "partition"}]} -> {"partitions":
    [{"topic", "partition", "replicas", "adding_replicas",
    "removing_replicas"}]}. Unknown topics and partitions are left out, as
    Kafka does."""
    wanted = payload.get("partitions")
    topics = sorted({str(x["topic"]) for x in wanted}) if wanted is not None \
        else zk.get_children(L.TOPICS)
    keys = None if wanted is None else {(str(x["topic"]), int(x["partition"])) for x in wanted}
    out = []
    for topic in sorted(topics):
        try:
            a = L.TopicAssignment.decode(topic, zk.get(L.topic_path(topic))[0])
        except (NoNodeError, L.LayoutError):
            continue
        for p in sorted(a.partitions):
            if a.reassigning(p) and (keys is None or (topic, p) in keys):
                out.append({"topic": topic, "partition": p, "replicas": a.partitions[p],
                            "adding_replicas": a.adding.get(p, []),
                            "removing_replicas": a.removing.get(p, [])})
    return {"partitions": out}
