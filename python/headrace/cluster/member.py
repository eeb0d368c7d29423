"""``ClusterMember``: a broker process's agent in a ZooKeeper cluster.

It connects to ZooKeeper (kazoo), registers the broker
(``/brokers/ids/<node.id>``, ephemeral), takes part in the controller
election (``Controller``), watches the cluster and pushes the full state down
to the C++ broker (``apply_cluster``), writes the ISR changes the local
leaders propose (``isr_changes``) to the partition state znodes, and answers
the admin requests the data plane hands up (``next_control_request``).
Its parts: the state read (member_state.py), the ISR and offline-replica
reports (member_isr.py), the admin requests (member_requests.py).

Threads (none of them kazoo's: watch callbacks and session events only
queue work):
- ``state``: debounced re-read of the cluster (setting the watches again)
  and ``apply_cluster`` when it changed; re-registration after a session
  expiry.
- ``isr``: every 100 ms, ``isr_changes()`` written with versioned updates.
- ``requests``: ``next_control_request`` in a loop; each request runs on a
  small pool and is always completed.
"""
from __future__ import annotations

import json
import logging
import queue
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Mapping

from kazoo.client import KazooClient, KazooState
from kazoo.exceptions import KazooException, NodeExistsError, NoNodeError

from headrace import logs
from headrace.cluster import topic_admin
from headrace.cluster import zk_layout as L
from headrace.cluster.controller import Controller
from headrace.cluster.member_isr import ZK_DOWN, IsrReports
from headrace.cluster.member_requests import UNKNOWN_SERVER_ERROR, ControlRequests, all_failed
from headrace.cluster.member_state import StateReader
from headrace.cluster.zk_client import bounded_client, stop_client
from headrace.errors import HeadraceError

log = logging.getLogger("headrace.cluster.member")

DEFAULT_SESSION_TIMEOUT_MS = 18000
DEBOUNCE_S = 0.02
# SIGTERM to exit is at most 5 s (docs/cluster.md, "Stopping whatever
# ZooKeeper does"):
# close() takes at most CLOSE_TIMEOUT_S, of which the controlled shutdown
# gets all but CLOSE_RESERVE_S (stopping the threads, deleting the
# registration, closing the session); the rest is the broker's local stop.
CLOSE_TIMEOUT_S = 3.5
CLOSE_RESERVE_S = 1.0
CONTROLLED_SHUTDOWN_TIMEOUT_S = CLOSE_TIMEOUT_S - CLOSE_RESERVE_S
FIRST_STATE_TIMEOUT_S = 10.0


class ClusterError(HeadraceError, RuntimeError):
    """The member cannot join the cluster (ZooKeeper unreachable, broker id
    taken by a live broker, ...)."""


def split_connect(connect: str) -> tuple[str, str]:
    """"h1:2181,h2:2181/kafka" -> ("h1:2181,h2:2181", "/kafka")."""
    connect = connect.strip()
    slash = connect.find("/")
    if slash < 0:
        return connect, ""
    hosts, chroot = connect[:slash], connect[slash:].rstrip("/")
    return hosts, chroot


def _bool(value: Any) -> bool:
    return str(value).strip().lower() in ("true", "1", "yes")


def _split_host_port(address: str) -> tuple[str, int]:
    host, _, port = str(address).rpartition(":")
    return host.strip("[]"), int(port)


class ClusterMember(StateReader, IsrReports, ControlRequests):
    """The control plane of one broker. ``broker``: a started
    ``headrace._core.Broker`` (anything with its cluster methods);
    ``settings``: broker settings (Kafka key names, string values).
    ``start()`` returns once the broker is registered."""

    def __init__(self, broker, settings: Mapping[str, Any] | Any):
        values = dict(settings if isinstance(settings, Mapping) else settings.values)
        self.broker = broker
        if not values.get("zookeeper.connect"):
            raise ClusterError("zookeeper.connect is not set")
        self.connect = str(values["zookeeper.connect"])
        self.session_timeout_ms = int(values.get("zookeeper.session.timeout.ms",
                                                 DEFAULT_SESSION_TIMEOUT_MS))
        # Kafka: when unset, the connection timeout is the session timeout.
        self.connection_timeout_ms = int(values.get("zookeeper.connection.timeout.ms",
                                                    self.session_timeout_ms))
        self.rack = values.get("broker.rack") or None
        self.unclean = _bool(values.get("unclean.leader.election.enable", "false"))
        self.auto_rebalance = _bool(values.get("auto.leader.rebalance.enable", "true"))
        self.imbalance_check_s = float(values.get("leader.imbalance.check.interval.seconds",
                                                  300))
        self.imbalance_pct = float(values.get("leader.imbalance.per.broker.percentage", 10))
        self.defaults = {k: values[k] for k in ("num.partitions", "default.replication.factor")
                         if k in values}
        self.broker_id = int(values.get("node.id", values.get("broker.id",
                                                              getattr(broker, "node_id", 0))))
        # The addresses (_addresses) of the registration written last.
        self._registered: tuple[list[str], str, int] | None = None
        self.zk: KazooClient | None = None
        self.controller: Controller | None = None
        self.cluster_id: str | None = None
        self.state: dict | None = None  # the last state pushed down
        self.state_version = 0  # bumped at every push (tests wait on it)
        self._events: queue.Queue[str] = queue.Queue()
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._pool: ThreadPoolExecutor | None = None
        self._pending_isr: dict[tuple[str, int], dict] = {}
        self._lost = False
        self._cancel = threading.Event()
        self._dirty_lock = threading.Lock()
        self._dirty: set[str] = set()
        self._full = True  # the first read reads everything
        self._cache: dict[str, Any] = {}
        self._czxid: dict[str, int] = {}  # path -> czxid, of the znodes in _cache
        self._visited: set[str] = set()
        self._state_cond = threading.Condition()
        has = lambda name: callable(getattr(broker, name, None))  # noqa: E731
        self._can_apply = has("apply_cluster")
        self._can_isr = has("isr_changes")
        self._can_report_offline = has("offline_replicas")
        self._offline_written: list[tuple[str, int]] | None = []  # None: rewrite
        self._can_serve = has("next_control_request") and has("complete_control_request")
        if not (self._can_apply and self._can_isr and self._can_serve):
            log.warning("broker %d: this build of headrace._core lacks the cluster binding "
                        "(apply_cluster / isr_changes / next_control_request): the broker "
                        "registers in ZooKeeper but serves as a single node", self.broker_id)

    # -- lifecycle ------------------------------------------------------------------
    def start(self, cancel: threading.Event | None = None) -> "ClusterMember":
        """Joins the cluster; returns once the broker is registered. Setting
        ``cancel`` (e.g. on SIGTERM) ends a wait for an older registration
        with ClusterError."""
        self._cancel = cancel or threading.Event()
        hosts, chroot = split_connect(self.connect)
        if chroot:
            self._ensure_chroot(hosts, chroot)
        self.zk = self._client(self.connect)
        # Until joined, SIGTERM (``cancel``) ends any ZooKeeper wait at once.
        self.zk.handler.cancel = self._cancel
        L.ensure_base_paths(self.zk)
        self.cluster_id = self._ensure_cluster_id()
        self._register()
        self.zk.add_listener(self._on_session)
        self.controller = Controller(self.zk, self.broker_id,
                                     unclean_leader_election=self.unclean,
                                     auto_leader_rebalance=self.auto_rebalance,
                                     imbalance_check_interval_s=self.imbalance_check_s,
                                     imbalance_pct=self.imbalance_pct).start()
        self._pool = ThreadPoolExecutor(max_workers=4, thread_name_prefix="control-request")
        for name, target, wanted in (("state", self._state_loop, True),
                                     ("isr", self._isr_loop, self._can_isr),
                                     ("requests", self._request_loop, self._can_serve)):
            if wanted:
                t = threading.Thread(target=target, name=f"cluster-{name}-{self.broker_id}",
                                     daemon=True)
                t.start()
                self._threads.append(t)
        self._events.put("refresh")
        # "Joined" means the data plane has the cluster's state: until the
        # first apply_cluster its Metadata would name no controller.
        deadline = time.monotonic() + FIRST_STATE_TIMEOUT_S
        with self._state_cond:
            while self.state_version == 0 and not self._cancel.is_set() \
                    and time.monotonic() < deadline:
                self._state_cond.wait(0.1)
        if self._cancel.is_set():
            raise ClusterError(f"broker {self.broker_id}: start cancelled")
        if self.state_version == 0:
            log.warning("broker %d: no cluster state applied within %.0f s; going on",
                        self.broker_id, FIRST_STATE_TIMEOUT_S)
        # Joined: from now on SIGTERM means a controlled shutdown, which
        # needs ZooKeeper; close() bounds the waits with its deadline.
        self.zk.handler.cancel = None
        log.info("broker %d: joined cluster %s at %s (%s)", self.broker_id, self.cluster_id,
                 self.connect, f"rack {self.rack}" if self.rack else "no rack")
        return self

    def _client(self, hosts: str) -> KazooClient:
        """A started client (headrace.cluster.zk_client: every call
        bounded). Waits at most zookeeper.connection.timeout.ms for the
        session, less if ``cancel`` (SIGTERM) is set meanwhile."""
        zk = bounded_client(hosts, self.session_timeout_ms / 1000)
        live = zk.start_async()
        deadline = time.monotonic() + self.connection_timeout_ms / 1000
        while not live.wait(0.1):
            if self._cancel.is_set() or time.monotonic() >= deadline:
                break
        if not zk.connected:
            stop_client(zk, 1.0)
            if self._cancel.is_set():
                raise ClusterError(f"broker {self.broker_id}: start cancelled while "
                                   f"connecting to ZooKeeper at {self.connect}")
            raise ClusterError(f"cannot connect to ZooKeeper at {self.connect} within "
                               f"{self.connection_timeout_ms} ms "
                               f"(zookeeper.connection.timeout.ms)")
        return zk

    def _ensure_chroot(self, hosts: str, chroot: str) -> None:
        """Kafka creates the chroot of zookeeper.connect when it is missing."""
        zk = self._client(hosts)
        zk.handler.cancel = self._cancel
        try:
            zk.ensure_path(chroot)
        finally:
            stop_client(zk, 2.0)

    def close(self, controlled_shutdown: bool = True,
              timeout_s: float = CLOSE_TIMEOUT_S) -> None:
        """Leaves the cluster within ``timeout_s``, whatever ZooKeeper does:
        controlled shutdown (leadership moved away) while ZooKeeper answers,
        bounded by ``timeout_s`` less CLOSE_RESERVE_S; then the threads stop,
        the broker's ephemeral znodes are deleted (registration, controller)
        and the session is closed. Every ZooKeeper wait, in this thread and
        the member's others, ends at its deadline (headrace.cluster.zk_client);
        what could not be done then (ZooKeeper unreachable) is left to the
        session's expiry. Idempotent."""
        if self.zk is None:
            return
        start = time.monotonic()
        deadline = start + max(0.0, timeout_s)
        handler = self.zk.handler
        reachable = self.zk.connected
        if controlled_shutdown and reachable:
            cs_deadline = max(start, deadline - CLOSE_RESERVE_S)
            handler.deadline = cs_deadline
            try:
                self.controlled_shutdown(cs_deadline - start)
            except ZK_DOWN as e:
                reachable = False
                log.warning("broker %d: controlled shutdown abandoned, ZooKeeper does not "
                            "answer (%s); stopping without it", self.broker_id, e)
            except Exception as e:  # noqa: BLE001 - shutting down anyway
                log.warning("broker %d: controlled shutdown failed: %s", self.broker_id,
                            f"{type(e).__name__}: {e}".rstrip(": "))
        self._stop.set()
        self._events.put("stop")
        with self._state_cond:
            self._state_cond.notify_all()  # request handlers waiting on the state
        # What is left: most of it for the threads' current calls and the
        # deletes, the last part for closing the session. ZooKeeper not
        # answering: the threads' calls end now (they would wait in vain).
        handler.deadline = max(time.monotonic(), deadline - 0.3) if reachable \
            else time.monotonic()
        if self.controller is not None:
            self.controller.close(timeout_s=max(0.0, handler.deadline - time.monotonic()),
                                  resign=False)
        for t in self._threads:
            t.join(max(0.2 if not reachable else 0.0, handler.deadline - time.monotonic()))
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
        if reachable and self.zk.connected and time.monotonic() < handler.deadline:
            # One transaction: between the two deletes a leader could see this
            # broker registered and no longer shutting down, and write it back
            # into an ISR (KIP-841's check in write_isr_change). The
            # controller's znode goes with them (resigning).
            self._delete_own([L.controlled_shutdown_path(self.broker_id),
                              L.broker_path(self.broker_id), L.CONTROLLER])
        handler.deadline = time.monotonic()  # any wait left ends now
        try:
            self.zk.remove_listener(self._on_session)
        except Exception:  # noqa: BLE001
            pass
        zk, self.zk = self.zk, None
        closed = stop_client(zk, max(0.1, deadline - time.monotonic()) if reachable else 0.3)
        took = time.monotonic() - start
        if closed:
            log.info("broker %d: left the cluster (%.1f s)", self.broker_id, took)
        else:
            log.warning("broker %d: left the cluster without closing its ZooKeeper session "
                        "(ZooKeeper unreachable; the session expires after "
                        "zookeeper.session.timeout.ms=%d, %.1f s)", self.broker_id,
                        self.session_timeout_ms, took)

    def _delete_own(self, paths: list[str]) -> None:
        """Deletes those of ``paths`` that are this session's ephemerals, in
        one transaction."""
        try:
            owned = []
            for path in paths:
                stat = self.zk.exists(path)
                if stat is not None and stat.ephemeralOwner == self.zk.client_id[0]:
                    owned.append((path, stat.version))
            if owned:
                tx = self.zk.transaction()
                for path, version in owned:
                    tx.delete(path, version=version)
                tx.commit()
        except (KazooException, TypeError):  # TypeError: no session (client_id None)
            pass

    def __enter__(self) -> "ClusterMember":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.close()

    # -- cluster id and registration -----------------------------------------------
    def _ensure_cluster_id(self) -> str:
        try:
            data, _ = self.zk.get(L.CLUSTER_ID)
            return L.decode_cluster_id(data)
        except NoNodeError:
            pass
        cid = L.new_uuid_base64()
        try:
            self.zk.create(L.CLUSTER_ID, L.encode_cluster_id(cid), makepath=True)
            log.info("broker %d: created cluster id %s", self.broker_id, cid)
            return cid
        except NodeExistsError:
            data, _ = self.zk.get(L.CLUSTER_ID)
            return L.decode_cluster_id(data)

    def registration(self) -> L.BrokerRegistration:
        # Every listener's endpoint and protocol, as Kafka registers them
        # (brokers without the properties, e.g. test doubles: PLAINTEXT only),
        # as the broker advertises them now (advertised.listeners is dynamic).
        host, port = _split_host_port(self.broker.advertised_address)
        endpoints = str(getattr(self.broker, "advertised_endpoints", ""))
        protocols = str(getattr(self.broker, "listener_protocols", ""))
        endpoints = [e for e in endpoints.split(",") if e]
        protocols = dict(p.split(":", 1) for p in protocols.split(",") if ":" in p)
        return L.BrokerRegistration(self.broker_id, host, port, self.rack,
                                    endpoints=endpoints, protocol_map=protocols)

    def _register(self) -> None:
        """Creates /brokers/ids/<id>. A znode left by an older session of
        this broker id (a restart before ZooKeeper noticed the old process
        died) is waited for until ZooKeeper expires it."""
        path = L.broker_path(self.broker_id)
        deadline = time.monotonic() + self.session_timeout_ms / 1000 * 1.5 + 5
        logged = False
        while not self._stop.is_set():
            if self._cancel.is_set():
                raise ClusterError(f"broker {self.broker_id}: start cancelled while waiting "
                                   f"for {path} to expire")
            reg = self.registration()
            try:
                self.zk.create(path, reg.encode(), ephemeral=True, makepath=True)
                self._registered = _addresses(reg)
                log.info("broker %d: registered at %s as %s:%d", self.broker_id, path,
                         reg.host, reg.port)
                return
            except NodeExistsError:
                pass
            gone = threading.Event()
            stat = self.zk.exists(path, watch=lambda event: gone.set())
            if stat is None:
                continue
            if stat.ephemeralOwner == self.zk.client_id[0]:
                self.zk.set(path, reg.encode())
                self._registered = _addresses(reg)
                return
            if not logged:
                log.warning("broker %d: %s is held by another ZooKeeper session (0x%x): an "
                            "older process of this broker whose session has not expired yet, "
                            "or another live broker with node.id %d. Waiting up to %.0f s for "
                            "it to expire (zookeeper.session.timeout.ms=%d)", self.broker_id,
                            path, stat.ephemeralOwner, self.broker_id,
                            deadline - time.monotonic(), self.session_timeout_ms)
                logs.announce(f"waiting for the ZooKeeper registration of an older "
                              f"broker {self.broker_id} to expire")
                logged = True
            if time.monotonic() > deadline:
                raise ClusterError(
                    f"broker id {self.broker_id} is registered in ZooKeeper by another live "
                    f"session (0x{stat.ephemeralOwner:x}); is another broker running with "
                    f"node.id {self.broker_id}?")
            gone.wait(min(1.0, max(0.0, deadline - time.monotonic())))

    def _update_registration(self) -> None:
        """Rewrites /brokers/ids/<id> when the broker's advertised endpoints
        changed (a dynamic advertised.listeners that the state just applied
        carried), as Kafka re-registers on a listener update."""
        reg = self.registration()
        if _addresses(reg) == self._registered:
            return
        self.zk.set(L.broker_path(self.broker_id), reg.encode())
        self._registered = _addresses(reg)
        log.info("broker %d: re-registered with endpoints %s", self.broker_id,
                 ",".join(reg.endpoints) or f"{reg.host}:{reg.port}")

    # -- session events (kazoo's thread: queue only) ----------------------------------
    def _on_session(self, state) -> None:
        if state == KazooState.LOST:
            self._offline_written = None  # the ephemeral report went with the session
            self._events.put("lost")
        elif state == KazooState.CONNECTED:
            self._events.put("connected")

    def _on_watch(self, event) -> None:
        with self._dirty_lock:
            if getattr(event, "path", None):
                self._dirty.add(event.path)
            else:  # a session event delivered to the watchers: re-read all
                self._full = True
        self._events.put("refresh")

    # -- state: ZooKeeper -> apply_cluster ------------------------------------------------
    def _state_loop(self) -> None:
        retry_at = None
        while not self._stop.is_set():
            timeout = None if retry_at is None else max(0.0, retry_at - time.monotonic())
            try:
                kinds = {self._events.get(timeout=timeout)}
            except queue.Empty:
                kinds = {"refresh"}
            retry_at = None
            time.sleep(DEBOUNCE_S)
            while True:
                try:
                    kinds.add(self._events.get_nowait())
                except queue.Empty:
                    break
            if self._stop.is_set() or "stop" in kinds:
                return
            try:
                if "lost" in kinds:
                    self._lost = True
                    log.warning("broker %d: ZooKeeper session expired; re-registering when "
                                "reconnected", self.broker_id)
                if self._lost and self.zk.connected:
                    self._register()
                    self._lost = False
                    with self._dirty_lock:
                        self._full = True  # the old session's watches are gone
                self.refresh()
            except ZK_DOWN as e:
                log.info("broker %d: ZooKeeper unavailable (%s); retrying", self.broker_id,
                         type(e).__name__)
                retry_at = time.monotonic() + 0.5
            except Exception:  # noqa: BLE001 - keep the member alive
                log.exception("broker %d: cannot read the cluster state; retrying",
                              self.broker_id)
                retry_at = time.monotonic() + 1.0

    def refresh(self) -> None:
        try:
            state = self.read_state()
        except BaseException:
            with self._dirty_lock:
                self._full = True  # what this pass did not re-read may be stale
            raise
        if state == self.state:
            return
        if self._can_apply:
            failures = self.broker.apply_cluster(json.dumps(state, separators=(",", ":")))
            if failures:
                log.warning("broker %d: the data plane could not apply: %s", self.broker_id,
                            str(failures).strip().replace("\n", "; "))
            self._update_registration()
        with self._state_cond:
            self.state = state
            self.state_version += 1
            self._state_cond.notify_all()

    def led_partitions(self, state: dict | None = None) -> list[tuple[str, int]]:
        state = state if state is not None else self.state or {"topics": []}
        return [(t["name"], p["partition"]) for t in state["topics"] for p in t["partitions"]
                if p["leader"] == self.broker_id]

    # -- admin requests -------------------------------------------------------------------
    def _request_loop(self) -> None:
        while not self._stop.is_set():
            try:
                request = self.broker.next_control_request(0.5)
            except Exception:  # noqa: BLE001
                log.exception("broker %d: next_control_request failed", self.broker_id)
                self._stop.wait(1.0)
                continue
            if request is None:
                continue
            request_id, kind, payload_json = request
            self._pool.submit(self._serve, request_id, kind, payload_json)

    def _serve(self, request_id, kind: str, payload_json: str) -> None:
        try:
            payload = json.loads(payload_json or "{}")
        except json.JSONDecodeError:
            payload = {}
        try:
            result = self.handle_request(kind, payload)
        except ZK_DOWN as e:
            result = all_failed(payload, topic_admin.REQUEST_TIMED_OUT,
                                 f"ZooKeeper unavailable: {type(e).__name__}")
        except Exception as e:  # noqa: BLE001 - every request gets an answer
            log.exception("broker %d: %s request failed", self.broker_id, kind)
            result = all_failed(payload, UNKNOWN_SERVER_ERROR, f"{type(e).__name__}: {e}")
        try:
            self.broker.complete_control_request(request_id, json.dumps(result))
        except Exception:  # noqa: BLE001
            log.exception("broker %d: complete_control_request(%s) failed", self.broker_id,
                          request_id)

    # -- controlled shutdown -----------------------------------------------------------------
    def controlled_shutdown(self, timeout_s: float = CONTROLLED_SHUTDOWN_TIMEOUT_S) -> bool:
        """Asks the controller to move this broker's leaderships away
        (``/admin/controlled_shutdown/<id>``, ephemeral) and waits, at most
        ``timeout_s``, until the controller answered and no partition state
        names this broker leader but the ones it could not move. True when
        this broker leads nothing any more."""
        if not self.led_partitions():
            return True
        path = L.controlled_shutdown_path(self.broker_id)
        try:
            self.zk.create(path, L.ControlledShutdown(self.broker_id).encode(), ephemeral=True)
        except NodeExistsError:
            self.zk.set(path, L.ControlledShutdown(self.broker_id).encode())
        log.info("broker %d: controlled shutdown: asking the controller to move %d "
                 "leaderships", self.broker_id, len(self.led_partitions()))
        deadline = time.monotonic() + timeout_s
        remaining: list = []
        while time.monotonic() < deadline:
            data, _ = self.zk.get(path)
            cs = L.ControlledShutdown.decode(self.broker_id, data)
            if cs.done:
                remaining = cs.remaining
                # Done when the moves are in the state the worker pushed down.
                if not set(self.led_partitions()) - set(remaining):
                    break
            with self._state_cond:
                self._state_cond.wait(0.05)
        else:
            log.warning("broker %d: controlled shutdown not finished after %.1f s; still "
                        "leads %s", self.broker_id, timeout_s, self.led_partitions())
            return False
        if remaining:
            log.warning("broker %d: controlled shutdown: no other in-sync replica for %s; "
                        "they stay here", self.broker_id, remaining)
        else:
            log.info("broker %d: controlled shutdown: leads nothing now", self.broker_id)
        return not remaining


def _addresses(reg: L.BrokerRegistration) -> tuple[list[str], str, int]:
    """What other brokers and clients are told to connect to (a registration
    without its timestamp)."""
    return reg.endpoints, reg.host, reg.port


def _int_or_max(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        return 1 << 62

