"""The controller: one broker of the cluster, elected through ZooKeeper,
decides partition leadership and ISR membership (docs/cluster.md).

Election: whoever creates the ephemeral ``/controller`` znode wins. The
create and the increment of ``/controller_epoch`` are one ZooKeeper
transaction (the increment conditional on the epoch znode's version), so a
controller always holds a fresh epoch. Losers watch ``/controller`` and try
again when it goes away.

Fencing: every state write of the controller is a transaction that starts
with ``check('/controller_epoch', version)``, the version its own increment
produced. Once another controller has incremented the epoch, every write of
the old one fails (ControllerFenced) and it steps down. The fenced writes
are headrace.cluster.fence's.

Work: one thread. Watches (kazoo's callback thread) and session events only
queue a wake-up; the thread then re-reads what it needs and reconciles the
whole cluster (see ``_reconcile``), so a missed or merged event cannot lose
work: the next pass sees the current state. What a partition's leader and
ISR should be is decided by headrace.cluster.leadership (pure functions);
reassignments are headrace.cluster.reassignment's, topic deletion
headrace.cluster.topic_deletion's. This module holds the election, the
reconcile loop and the admin requests it carries out (preferred-leader
rebalance, ElectLeaders, controlled shutdown).
"""
from __future__ import annotations

import logging
import queue
import threading
import time
from dataclasses import dataclass

from kazoo.client import KazooClient, KazooState
from kazoo.exceptions import (BadVersionError, ConnectionLoss, KazooException, NoNodeError,
                              NodeExistsError, OperationTimeoutError, SessionExpiredError)
from kazoo.handlers.threading import KazooTimeoutError

from headrace.cluster import zk_layout as L
from headrace.cluster.fence import MAX_CAS_RETRIES, ControllerFenced, Fence
from headrace.cluster.leadership import (ELECTION_NOT_NEEDED, UNKNOWN_TOPIC_OR_PARTITION, decide,
                                          elect, stamp)
from headrace.cluster.reassignment import Reassigner
from headrace.cluster.topic_deletion import delete_topic

log = logging.getLogger("headrace.cluster.controller")

_RETRY_DELAY_S = 0.25


@dataclass
class _Partition:
    topic: str
    partition: int
    replicas: list[int]
    state: L.PartitionState | None
    version: int  # znode version of the state (-1: no state znode)
    unclean: bool | None = None  # the topic's unclean.leader.election.enable, if set


class Controller:
    """Takes part in the election on ``zk`` (a started KazooClient) as
    ``broker_id``; when elected, runs the controller's duties until
    ``close()``. ``unclean_leader_election``: a partition without a live ISR
    member may elect any live replica (data loss), Kafka's
    ``unclean.leader.election.enable``."""

    def __init__(self, zk: KazooClient, broker_id: int, unclean_leader_election: bool = False,
                 debounce_s: float = 0.02, auto_leader_rebalance: bool = True,
                 imbalance_check_interval_s: float = 300.0, imbalance_pct: float = 10.0):
        self.zk = zk
        self.broker_id = int(broker_id)
        self.unclean_leader_election = unclean_leader_election
        self.debounce_s = debounce_s
        self.auto_leader_rebalance = auto_leader_rebalance
        self.imbalance_check_interval_s = imbalance_check_interval_s
        self.imbalance_pct = imbalance_pct
        self.fence: Fence | None = None
        self._events: queue.Queue[str] = queue.Queue()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._live_prev: dict[int, int] | None = None  # broker id -> czxid of its registration
        # (topic, partition) -> brokers whose replica is offline (failed log dir)
        self._offline: dict[tuple[str, int], set[int]] = {}
        self.elected = threading.Event()  # set while this controller is active
        self.passes = 0  # reconcile passes done (tests wait on it)
        self.reassigner = Reassigner(zk, self.broker_id, self._on_watch)
        self._moving: set[str] = set()  # topics with a reassignment in progress (this pass)

    # -- lifecycle --------------------------------------------------------------
    def start(self) -> "Controller":
        L.ensure_base_paths(self.zk)
        self.zk.add_listener(self._on_session)
        self._thread = threading.Thread(target=self._run, name=f"controller-{self.broker_id}",
                                        daemon=True)
        self._thread.start()
        self._events.put("elect")
        return self

    def close(self, timeout_s: float = 10.0, resign: bool = True) -> None:
        """Stops, waiting at most ``timeout_s`` for the thread (a ZooKeeper
        call it is in ends at its client's deadline, see
        headrace.cluster.zk_client); resigns (deletes /controller) if it is
        the controller and ``resign`` (ClusterMember deletes it itself, in
        the transaction that deletes its registration)."""
        self._stop.set()
        self._events.put("stop")
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(max(0.0, timeout_s))
        try:
            self.zk.remove_listener(self._on_session)
        except Exception:  # noqa: BLE001
            pass
        if self.active and resign:
            self._delete_own_controller_znode()
        self._step_down("closed")

    @property
    def active(self) -> bool:
        return self.fence is not None

    @property
    def epoch(self) -> int:
        return self.fence.epoch if self.fence else -1

    def wake(self) -> None:
        self._events.put("reconcile")

    # -- kazoo callbacks: queue only ----------------------------------------------
    def _on_session(self, state) -> None:
        if state == KazooState.LOST:
            self._events.put("lost")
        elif state == KazooState.CONNECTED:
            self._events.put("elect")

    def _on_controller_watch(self, event) -> None:
        self._events.put("elect")

    def _on_watch(self, event) -> None:
        self._events.put("reconcile")

    # -- the thread ---------------------------------------------------------------
    def _run(self) -> None:
        retry_at = None
        rebalance_at = time.monotonic() + self.imbalance_check_interval_s
        while not self._stop.is_set():
            due = [t for t in (retry_at, rebalance_at if self.auto_leader_rebalance else None)
                   if t is not None]
            timeout = max(0.0, min(due) - time.monotonic()) if due else None
            try:
                kinds = {self._events.get(timeout=timeout)}
            except queue.Empty:
                kinds = set()
            now = time.monotonic()
            if retry_at is not None and now >= retry_at:
                kinds |= {"elect", "reconcile"}
                retry_at = None
            if now >= rebalance_at:
                kinds.add("rebalance")
                rebalance_at = now + self.imbalance_check_interval_s
            time.sleep(self.debounce_s)
            while True:
                try:
                    kinds.add(self._events.get_nowait())
                except queue.Empty:
                    break
            if self._stop.is_set() or "stop" in kinds:
                return
            try:
                if "lost" in kinds:
                    self._step_down("session lost")
                if "elect" in kinds or not self.active:
                    if self._elect():
                        kinds.add("reconcile")
                if self.active and "reconcile" in kinds:
                    self._reconcile()
                if self.active and "rebalance" in kinds and self.auto_leader_rebalance:
                    self._rebalance_leaders()
            except ControllerFenced as e:
                log.warning("controller %d: fenced (%s); stepping down", self.broker_id, e)
                self._step_down("fenced")
                retry_at = time.monotonic() + _RETRY_DELAY_S
            except (ConnectionLoss, SessionExpiredError, OperationTimeoutError,
                    KazooTimeoutError) as e:
                log.info("controller %d: ZooKeeper unavailable (%s); retrying",
                         self.broker_id, type(e).__name__)
                retry_at = time.monotonic() + _RETRY_DELAY_S
            except Exception:  # noqa: BLE001 - keep the controller alive, retry
                log.exception("controller %d: unexpected error; retrying", self.broker_id)
                retry_at = time.monotonic() + 1.0

    def _step_down(self, why: str) -> None:
        if self.fence is not None:
            log.info("controller %d: no longer controller (epoch %d): %s",
                     self.broker_id, self.fence.epoch, why)
        self.fence = None
        self._live_prev = None
        self.elected.clear()

    def _delete_own_controller_znode(self) -> None:
        try:
            data, stat = self.zk.get(L.CONTROLLER)
            if stat.ephemeralOwner == self.zk.client_id[0]:
                self.zk.delete(L.CONTROLLER, version=stat.version)
        except (KazooException, TypeError):
            pass

    # -- election -----------------------------------------------------------------
    def _elect(self) -> bool:
        """Tries to become controller; True when it just did."""
        if self.active:
            stat = self.zk.exists(L.CONTROLLER, watch=self._on_controller_watch)
            if stat is not None and stat.ephemeralOwner == self.zk.client_id[0]:
                return False
            self._step_down("/controller is gone or another's")
        for _ in range(MAX_CAS_RETRIES):
            stat = self.zk.exists(L.CONTROLLER, watch=self._on_controller_watch)
            if stat is not None:
                if stat.ephemeralOwner == self.zk.client_id[0]:
                    # Ours from an attempt whose answer got lost: take it over
                    # afresh (new epoch) after deleting it.
                    self._delete_own_controller_znode()
                    continue
                return False
            try:
                self.zk.create(L.CONTROLLER_EPOCH, L.encode_controller_epoch(0))
            except NodeExistsError:
                pass
            data, estat = self.zk.get(L.CONTROLLER_EPOCH)
            epoch = L.decode_controller_epoch(data) + 1
            tx = self.zk.transaction()
            tx.create(L.CONTROLLER, L.encode_controller(self.broker_id), ephemeral=True)
            tx.set_data(L.CONTROLLER_EPOCH, L.encode_controller_epoch(epoch),
                        version=estat.version)
            results = tx.commit()
            if not any(isinstance(r, Exception) for r in results):
                self.fence = Fence(self.zk, epoch, results[1].version)
                self._live_prev = None
                self.elected.set()
                log.info("controller %d: elected, controller epoch %d", self.broker_id, epoch)
                # The watch above fired on our own create; set it again.
                self.zk.exists(L.CONTROLLER, watch=self._on_controller_watch)
                return True
            if isinstance(results[0], NodeExistsError):
                continue  # someone else won; the loop sets the watch and returns
            # BadVersion on the epoch: raced with another candidate; re-read.
        return False

    # -- reconciliation -------------------------------------------------------------
    def _reconcile(self) -> None:
        fence = self.fence
        assert fence is not None
        zk, w = self.zk, self._on_watch
        live = self._live_brokers()
        gone: set[int] = set()
        if self._live_prev is not None:
            # Departed, or re-registered under a new session (a bounce).
            gone = {b for b, czxid in self._live_prev.items() if live.get(b) != czxid}
        shutting = self._shutting_down(set(live))
        self._offline = self._offline_replicas(set(live))

        for topic in zk.get_children(L.ADMIN_DELETE_TOPICS, watch=w):
            delete_topic(zk, fence, topic, self.broker_id)
        self.reassigner.process_requests(fence, live)
        self._moving = set()

        # Every partition's write is sent at once (pipelined); a write that
        # loses a race (a leader's ISR change came first) is redone alone.
        sent = []
        for topic in zk.get_children(L.TOPICS, watch=w):
            parts = self._read_topic(topic)
            if any(p.state is None for p in parts):
                zk.ensure_path(L.partitions_path(topic))
            for part in parts:
                desired = decide(part.replicas, part.state, set(live), gone, set(shutting),
                                 self._unclean(part), fence.epoch,
                                 self._offline.get((part.topic, part.partition), set()), live)
                if desired is not None:
                    sent.append((part, desired, self._send(fence, part, desired)))
        for part, desired, pending in sent:
            try:
                fence.check(pending.get())
                self._log_change(part, desired)
            except (BadVersionError, NodeExistsError, NoNodeError):
                self._reread(part)
                self._reconcile_partition(fence, part, live, gone, shutting)

        for topic in sorted(self._moving):
            self.reassigner.advance(fence, topic, live)

        for broker_id, (cs, version) in shutting.items():
            if not cs.done:
                self._finish_controlled_shutdown(fence, broker_id, version)
        for child in zk.get_children(L.ADMIN_ELECT_LEADERS, watch=w):
            self._elect_leaders(fence, f"{L.ADMIN_ELECT_LEADERS}/{child}", live,
                                set(shutting))
        self._live_prev = live
        self.passes += 1

    def _live_brokers(self) -> dict[int, int]:
        ids = []
        for child in self.zk.get_children(L.BROKER_IDS, watch=self._on_watch):
            try:
                ids.append(int(child))
            except ValueError:
                continue
        stats = {b: self.zk.exists_async(L.broker_path(b)) for b in ids}
        live = {}
        for b, a in stats.items():
            stat = a.get()
            if stat is not None:
                live[b] = stat.czxid
        return live

    def _offline_replicas(self, live: set[int]) -> dict[tuple[str, int], set[int]]:
        """{(topic, partition): brokers whose replica of it is offline} from
        /admin/offline_replicas/<id> (a failed log directory), live brokers only."""
        out: dict[tuple[str, int], set[int]] = {}
        for child in self.zk.get_children(L.ADMIN_OFFLINE_REPLICAS, watch=self._on_watch):
            try:
                b = int(child)
                data, _ = self.zk.get(L.offline_replicas_path(b), watch=self._on_watch)
            except (ValueError, NoNodeError):
                continue
            if b not in live:
                continue
            for tp in L.decode_offline_replicas(b, data):
                out.setdefault(tp, set()).add(b)
        return out

    def _shutting_down(self, live: set[int]) -> dict[int, tuple[L.ControlledShutdown, int]]:
        out = {}
        for child in self.zk.get_children(L.ADMIN_CONTROLLED_SHUTDOWN, watch=self._on_watch):
            try:
                b = int(child)
                data, stat = self.zk.get(L.controlled_shutdown_path(b))
            except (ValueError, NoNodeError):
                continue
            if b in live:
                out[b] = (L.ControlledShutdown.decode(b, data), stat.version)
        return out

    def _read_topic(self, topic: str) -> list[_Partition]:
        try:
            data, stat = self.zk.get(L.topic_path(topic), watch=self._on_watch)
        except NoNodeError:
            return []
        try:
            assignment = L.TopicAssignment.decode(topic, data)
        except L.LayoutError as e:
            log.warning("controller %d: %s", self.broker_id, e)
            return []
        if not assignment.topic_id and self.fence is not None:
            self._assign_topic_id(topic, assignment, stat.version)
        if any(assignment.reassigning(p) for p in assignment.partitions):
            self._moving.add(topic)
        config_read = self.zk.get_async(L.topic_config_path(topic), watch=self._on_watch)
        reads = {p: self.zk.get_async(L.partition_state_path(topic, p))
                 for p in assignment.partitions}
        unclean = None
        try:
            value = L.decode_topic_config(config_read.get()[0], topic).get(
                "unclean.leader.election.enable")
            if value is not None:
                unclean = value.strip().lower() == "true"
        except (NoNodeError, L.LayoutError):
            pass
        out = []
        for p, replicas in sorted(assignment.partitions.items()):
            state, version = self._state_from(reads[p], topic, p)
            out.append(_Partition(topic, p, replicas, state, version, unclean))
        return out

    def _assign_topic_id(self, topic: str, assignment: L.TopicAssignment,
                         version: int) -> None:
        """A topic written without an id (by an older tool) gets one, as
        Kafka's controller does (KIP-516)."""
        assignment.topic_id = L.new_uuid_base64()
        path = L.topic_path(topic)
        try:
            self.fence.commit(lambda tx: tx.set_data(path, assignment.encode(),
                                                     version=version))
            log.info("controller %d: topic %s had no id; now %s", self.broker_id, topic,
                     assignment.topic_id)
        except (BadVersionError, NoNodeError):
            pass  # changed meanwhile; its watch brings us back

    def _unclean(self, part: _Partition) -> bool:
        """The topic's override, else the broker setting (Kafka's rule)."""
        return self.unclean_leader_election if part.unclean is None else part.unclean

    def _state_from(self, async_result, topic, p):
        try:
            data, stat = async_result.get()
        except NoNodeError:
            return None, -1
        try:
            return L.PartitionState.decode(data, L.partition_state_path(topic, p)), stat.version
        except L.LayoutError as e:
            log.warning("controller %d: %s; rewriting it", self.broker_id, e)
            return L.PartitionState(-1, -1, [], 0), stat.version

    def _reread(self, part: _Partition) -> None:
        state, version = self._state_from(
            self.zk.get_async(L.partition_state_path(part.topic, part.partition)),
            part.topic, part.partition)
        part.state, part.version = state, version

    def _send(self, fence: Fence, part: _Partition, desired: L.PartitionState):
        path = L.partition_state_path(part.topic, part.partition)
        if part.state is None:
            parent = L.partition_path(part.topic, part.partition)
            return fence.commit_async(lambda tx: (tx.create(parent, b""),
                                                  tx.create(path, desired.encode())))
        return fence.commit_async(lambda tx: tx.set_data(path, desired.encode(),
                                                         version=part.version))

    def _reconcile_partition(self, fence: Fence, part: _Partition, live: dict[int, int],
                             gone: set[int], shutting: dict) -> None:
        for _ in range(MAX_CAS_RETRIES):
            desired = decide(part.replicas, part.state, set(live), gone, set(shutting),
                             self._unclean(part), fence.epoch,
                             self._offline.get((part.topic, part.partition), set()), live)
            if desired is None:
                return
            path = L.partition_state_path(part.topic, part.partition)
            try:
                if part.state is None:
                    self.zk.ensure_path(L.partition_path(part.topic, part.partition))
                    fence.commit(lambda tx: tx.create(path, desired.encode()))
                else:
                    fence.commit(lambda tx: tx.set_data(path, desired.encode(),
                                                        version=part.version))
                self._log_change(part, desired)
                return
            except (BadVersionError, NodeExistsError):
                self._reread(part)  # someone (a leader's ISR change) wrote first
            except NoNodeError:
                return  # the topic is being deleted
        log.warning("controller %d: %s-%d: gave up after %d conflicting writes; next pass",
                    self.broker_id, part.topic, part.partition, MAX_CAS_RETRIES)
        self._events.put("reconcile")

    def _log_change(self, part: _Partition, new: L.PartitionState) -> None:
        old = part.state
        fields = {"event": "leader_isr_changed", "controller": self.broker_id,
                  "topic": part.topic, "partition": part.partition, "leader": new.leader,
                  "leader_epoch": new.leader_epoch, "isr": list(new.isr)}
        if old is None:
            log.info("controller %d: %s-%d: new, leader %d, isr %s", self.broker_id,
                     part.topic, part.partition, new.leader, new.isr,
                     extra={"fields": dict(fields, event="partition_created")})
        elif old.leader != new.leader:
            log.info("controller %d: %s-%d: leader %d -> %d (epoch %d), isr %s",
                     self.broker_id, part.topic, part.partition, old.leader, new.leader,
                     new.leader_epoch, new.isr,
                     extra={"fields": dict(fields, previous_leader=old.leader)})
        else:
            log.info("controller %d: %s-%d: isr %s -> %s", self.broker_id, part.topic,
                     part.partition, old.isr, new.isr,
                     extra={"fields": dict(fields, previous_isr=list(old.isr))})

    # -- preferred leaders (auto.leader.rebalance.enable) -----------------------------
    def _rebalance_leaders(self) -> None:
        """Kafka's auto leader rebalance: for each broker whose share of
        partitions it is the preferred replica of (first in the assignment)
        but does not lead is over ``imbalance_pct``, give it those partitions
        back where it is live and in the ISR (leader epoch + 1)."""
        fence = self.fence
        live = self._live_brokers()
        shutting = set(self._shutting_down(set(live)))
        parts = [part for topic in self.zk.get_children(L.TOPICS)
                 for part in self._read_topic(topic) if part.state is not None]
        by_preferred: dict[int, list[_Partition]] = {}
        for part in parts:
            if part.replicas:
                by_preferred.setdefault(part.replicas[0], []).append(part)
        sent = []
        for broker, mine in sorted(by_preferred.items()):
            not_led = [p for p in mine if p.state.leader != broker]
            if not mine or 100.0 * len(not_led) / len(mine) <= self.imbalance_pct:
                continue
            if broker not in live or broker in shutting:
                continue
            for part in not_led:
                if broker not in part.state.isr or broker in part.state.bounced(live):
                    continue
                desired = stamp(L.PartitionState(broker, part.state.leader_epoch + 1,
                                                 part.state.isr, fence.epoch), part.state, live)
                sent.append((part, desired, self._send(fence, part, desired)))
        for part, desired, pending in sent:
            try:
                fence.check(pending.get())
                log.info("controller %d: %s-%d: preferred leader %d back (epoch %d)",
                         self.broker_id, part.topic, part.partition, desired.leader,
                         desired.leader_epoch)
            except (BadVersionError, NoNodeError):
                pass  # changed meanwhile: the next check looks again

    # -- ElectLeaders ------------------------------------------------------------------
    def _elect_leaders(self, fence: Fence, path: str, live: dict[int, int],
                       shutting: set[int]) -> None:
        """Carries out one /admin/elect_leaders request and writes its
        results into it (the member that asked reads them and deletes it)."""
        try:
            data, stat = self.zk.get(path)
        except NoNodeError:
            return
        req = L.ElectLeaders.decode(data, path)
        if req.done:
            return
        wanted = None if req.partitions is None else set(req.partitions)
        found: set[tuple[str, int]] = set()
        results = []
        for topic in self.zk.get_children(L.TOPICS):
            if wanted is not None and not any(t == topic for t, _ in wanted):
                continue
            for part in self._read_topic(topic):
                key = (topic, part.partition)
                if part.state is None or (wanted is not None and key not in wanted):
                    continue
                found.add(key)
                for _ in range(MAX_CAS_RETRIES):
                    desired, code, message = elect(req.election_type, part.replicas, part.state,
                                                   live, shutting, fence.epoch)
                    if desired is None:
                        break
                    try:
                        self.fence.commit(lambda tx: tx.set_data(
                            L.partition_state_path(topic, part.partition), desired.encode(),
                            version=part.version))
                        self._log_change(part, desired)
                        break
                    except BadVersionError:
                        self._reread(part)
                if wanted is None and code == ELECTION_NOT_NEEDED:
                    continue  # "all partitions": only those an election concerned
                results.append((topic, part.partition, code, message))
        for t, p in sorted((wanted or set()) - found):
            results.append((t, p, UNKNOWN_TOPIC_OR_PARTITION, "unknown topic or partition"))
        req.done, req.results = True, results
        try:
            fence.commit(lambda tx: tx.set_data(path, req.encode(), version=stat.version))
        except (BadVersionError, NoNodeError):
            return
        log.info("controller %d: %s election: %s", self.broker_id,
                 "unclean" if req.election_type == L.UNCLEAN_ELECTION else "preferred",
                 [(t, p, c) for t, p, c, _ in results])

    # -- controlled shutdown ------------------------------------------------------------
    def _finish_controlled_shutdown(self, fence: Fence, broker_id: int, version: int) -> None:
        remaining = []
        for topic in self.zk.get_children(L.TOPICS):
            for part in self._read_topic(topic):
                if part.state is not None and part.state.leader == broker_id:
                    remaining.append((topic, part.partition))
        cs = L.ControlledShutdown(broker_id=broker_id, done=True, remaining=remaining)
        path = L.controlled_shutdown_path(broker_id)
        try:
            fence.commit(lambda tx: tx.set_data(path, cs.encode(), version=version))
        except (BadVersionError, NoNodeError):
            return
        log.info("controller %d: controlled shutdown of broker %d: %s", self.broker_id,
                 broker_id, f"still leads {remaining}" if remaining else "leads nothing")
