"""``headrace.EmbeddedCluster``: a ZooKeeper and N broker processes on this
machine, for tests, notebooks and ``headrace cluster up``.

Each broker is a real ``python -m headrace.cli broker --zookeeper ...``
process (node ids 1..N by default, fixed ports chosen free at first start, so a
restarted broker keeps its address), with its own data directory and its
output in ``<data_dir>/broker-N.log``. Failures are injected with signals:
``kill`` (SIGKILL, a crash), ``stop`` (SIGTERM, controlled shutdown),
``pause``/``resume`` (SIGSTOP/SIGCONT: a broker that stops answering, whose
ZooKeeper session expires).
"""
from __future__ import annotations

import atexit
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable, Mapping

from headrace.errors import HeadraceError

START_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 30.0


class BrokerNode:
    """One broker process of an EmbeddedCluster."""

    def __init__(self, node_id: int, data_dir: Path, host: str, port: int,
                 zookeeper_connect: str, settings: Mapping[str, str], detach: bool = False,
                 http_port: int = 0):
        self.node_id = node_id
        self.data_dir = data_dir
        self.host = host
        self.port = port
        self.http_port = http_port  # the console / metrics listener (0: any free port)
        self.zookeeper_connect = zookeeper_connect
        self.settings = dict(settings)
        self.detach = detach
        self.proc: subprocess.Popen | None = None
        self.log_path = data_dir.parent / f"broker-{node_id}.log"

    def command(self) -> list[str]:
        cmd = [sys.executable, "-m", "headrace.cli", "broker", "--data-dir", str(self.data_dir),
               "--listen", f"{self.host}:{self.port}", "--node-id", str(self.node_id),
               "--zookeeper", self.zookeeper_connect,
               # several brokers on one host: one HTTP port each, on loopback
               # (the console asks for a login only with a SASL listener);
               # --set may override
               "--http", f"127.0.0.1:{self.http_port}"]
        for k, v in self.settings.items():
            cmd += ["--set", f"{k}={v}"]
        return cmd

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc is not None else None

    def start(self) -> None:
        if self.running:
            return
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self._log_offset = self.log_path.stat().st_size if self.log_path.exists() else 0
        out = open(self.log_path, "ab")
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        try:
            self.proc = subprocess.Popen(self.command(), stdout=out, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL, env=env,
                                         start_new_session=True)  # Ctrl-C: parent decides
        finally:
            out.close()

    @property
    def http_address(self) -> str | None:
        """Where this start's HTTP listener (console, /metrics) listens, as
        the broker printed it; None before it did (or with it off)."""
        import re

        try:
            with open(self.log_path, "rb") as f:
                f.seek(getattr(self, "_log_offset", 0))
                text = f.read().decode(errors="replace")
        except OSError:
            return None
        found = re.findall(r'http on (\S+) \(|"http":"([^"]+)"', text)
        if not found:
            return None
        return found[-1][0] or found[-1][1]

    @property
    def http_scheme(self) -> str:
        """"https" when this start's console serves HTTPS (the broker has a
        TLS key store: docs/console.md), else "http"."""
        try:
            with open(self.log_path, "rb") as f:
                f.seek(getattr(self, "_log_offset", 0))
                text = f.read().decode(errors="replace")
        except OSError:
            return "http"
        import re

        return "https" if ("(https;" in text or re.search(r'"scheme":\s*"https"', text)) \
            else "http"

    def joined(self) -> bool:
        """The broker printed that it joined the cluster (this start)."""
        try:
            with open(self.log_path, "rb") as f:
                f.seek(self._log_offset)
                text = f.read()
                # The broker's announcement, in either log format.
                return b"headrace: joined cluster" in text or b'"msg":"joined cluster' in text
        except OSError:
            return False

    def log_tail(self, lines: int = 30) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    def signal(self, sig: int) -> None:
        if self.running:
            self.proc.send_signal(sig)

    def wait(self, timeout: float) -> int | None:
        if self.proc is None:
            return None
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            return None


class EmbeddedCluster:
    """A ZooKeeper and ``brokers`` broker processes for the lifetime of a
    ``with`` block.

    ``settings``: broker settings for every broker (Kafka keys, e.g.
    ``{"default.replication.factor": 3}``); ``racks``: {node id: rack}.
    ``data_dir=None`` makes a temporary directory, removed at ``stop_all()``
    / the end of the ``with``; a given one is kept. ``base_port``: brokers
    listen on base_port, base_port+1, ... (default: free ports).
    ``node_settings(node_id, port)``: extra settings of one broker (e.g. its
    own ``listeners``; the first listener must keep ``port``).
    ``before_brokers(zk_connect)``: called once ZooKeeper runs and before
    any broker starts (e.g. to create the brokers' own SCRAM credentials,
    as Kafka's bootstrap with kafka-configs --zookeeper).
    ``first_node_id``: the brokers' node ids are first_node_id ..
    first_node_id + brokers - 1 (default 1; 0 as a single Kafka's
    ``broker.id=0``, which some client test suites assume).
    ``http_base_port``: broker N's HTTP listener (web console, /metrics) is
    on http_base_port + N - first_node_id (default: free ports, chosen at
    start and kept across restarts); ``BrokerNode.http_address`` is where
    it listens.
    """

    def __init__(self, brokers: int = 3, settings: Mapping[str, object] | None = None,
                 data_dir: str | os.PathLike | None = None, host: str = "127.0.0.1",
                 base_port: int | None = None, zookeeper_port: int = 0,
                 racks: Mapping[int, str] | None = None, detach: bool = False,
                 node_settings: Callable[[int, int], Mapping[str, object]] | None = None,
                 before_brokers: Callable[[str], None] | None = None,
                 first_node_id: int = 1, http_base_port: int | None = None):
        if brokers < 1:
            raise HeadraceError("an EmbeddedCluster needs at least one broker")
        if first_node_id < 0:
            raise HeadraceError(f"first_node_id must be >= 0, got {first_node_id}")
        self.first_node_id = first_node_id
        self.http_base_port = http_base_port
        self.num_brokers = brokers
        self.settings = {k: str(v).lower() if isinstance(v, bool) else str(v)
                         for k, v in (settings or {}).items()}
        self._given_dir = Path(data_dir) if data_dir is not None else None
        self.host = host
        self.base_port = base_port
        self.zookeeper_port = zookeeper_port
        self.racks = dict(racks or {})
        self.detach = detach
        self.node_settings = node_settings
        self.before_brokers = before_brokers
        self.dir: Path | None = None
        self.zookeeper = None
        self.nodes: dict[int, BrokerNode] = {}
        self._zk = None

    # -- lifecycle -------------------------------------------------------------------
    def start(self, timeout: float = START_TIMEOUT_S) -> "EmbeddedCluster":
        from headrace.cluster.zookeeper_server import ZooKeeperServer, free_port

        if self.zookeeper is not None:
            raise HeadraceError("EmbeddedCluster already started")
        self.dir = self._given_dir or Path(tempfile.mkdtemp(prefix="headrace-cluster-"))
        self.dir.mkdir(parents=True, exist_ok=True)
        try:
            self.zookeeper = ZooKeeperServer(self.dir / "zookeeper", port=self.zookeeper_port,
                                             host=self.host,
                                             stop_at_exit=not self.detach).start()
            for i in self.node_ids:
                port = (self.base_port + i - self.first_node_id if self.base_port
                        else free_port(self.host))
                settings = dict(self.settings)
                if i in self.racks:
                    settings["broker.rack"] = self.racks[i]
                if self.node_settings is not None:
                    settings.update({k: str(v).lower() if isinstance(v, bool) else str(v)
                                     for k, v in self.node_settings(i, port).items()})
                http_port = (self.http_base_port + i - self.first_node_id
                             if self.http_base_port else free_port("127.0.0.1"))
                self.nodes[i] = BrokerNode(i, self.dir / f"broker-{i}", self.host, port,
                                           self.zookeeper.connect_string, settings, self.detach,
                                           http_port=http_port)
            if self.before_brokers is not None:
                self.before_brokers(self.zookeeper.connect_string)
            for node in self.nodes.values():
                node.start()
            if not self.detach:
                # Brokers run in their own sessions (Ctrl-C is the parent's
                # to handle): never leave them behind this interpreter.
                atexit.register(self._kill_leftovers)
            self.wait_for_brokers(list(self.nodes), timeout)
        except BaseException:
            self.stop_all()
            raise
        return self

    def stop_all(self, timeout: float = STOP_TIMEOUT_S) -> None:
        """SIGTERM to every broker (in parallel), then ZooKeeper. Idempotent."""
        running = [n for n in self.nodes.values() if n.running]
        for n in running:
            n.signal(signal.SIGCONT)
            n.signal(signal.SIGTERM)
        for n in running:
            if n.wait(timeout) is None:
                n.proc.kill()
                n.wait(10)
        if self._zk is not None:
            from headrace.cluster.zk_client import stop_client

            stop_client(self._zk, 2.0)  # bounded: ZooKeeper may be paused or gone
            self._zk = None
        if self.zookeeper is not None:
            self.zookeeper.stop()
            self.zookeeper = None
        if self._given_dir is None and self.dir is not None:
            shutil.rmtree(self.dir, ignore_errors=True)
            self.dir = None

    def _kill_leftovers(self) -> None:
        for n in self.nodes.values():
            if n.running:
                n.proc.kill()

    def __enter__(self) -> "EmbeddedCluster":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop_all()

    # -- addresses -------------------------------------------------------------------
    @property
    def node_ids(self) -> list[int]:
        """The brokers' node ids, in order."""
        return list(range(self.first_node_id, self.first_node_id + self.num_brokers))

    @property
    def bootstrap_servers(self) -> str:
        return ",".join(n.address for n in self.nodes.values())

    @property
    def zookeeper_connect(self) -> str:
        if self.zookeeper is None:
            raise HeadraceError("EmbeddedCluster is not running")
        return self.zookeeper.connect_string

    def node(self, node_id: int) -> BrokerNode:
        try:
            return self.nodes[node_id]
        except KeyError:
            ids = self.node_ids
            raise HeadraceError(f"no broker {node_id} (brokers are {ids[0]}..{ids[-1]})") \
                from None

    # -- failures ---------------------------------------------------------------------
    def kill(self, node_id: int) -> None:
        """SIGKILL: a crash; its ZooKeeper session expires after
        zookeeper.session.timeout.ms."""
        n = self.node(node_id)
        if n.running:
            n.proc.kill()
            n.wait(10)

    def stop(self, node_id: int, timeout: float = STOP_TIMEOUT_S) -> int | None:
        """SIGTERM: controlled shutdown, then a clean stop. Returns the exit code."""
        n = self.node(node_id)
        n.signal(signal.SIGCONT)
        n.signal(signal.SIGTERM)
        code = n.wait(timeout)
        if code is None:
            n.proc.kill()
            n.wait(10)
            raise HeadraceError(f"broker {node_id} ignored SIGTERM for {timeout}s:\n"
                                f"{n.log_tail()}")
        return code

    def restart(self, node_id: int, timeout: float = START_TIMEOUT_S) -> None:
        """Stops the broker if it runs (SIGTERM) and starts it again on the
        same data directory and port; returns once it has joined."""
        n = self.node(node_id)
        if n.running:
            self.stop(node_id)
        n.start()
        self.wait_for_brokers([node_id], timeout)

    def start_node(self, node_id: int, timeout: float = START_TIMEOUT_S) -> None:
        """Starts a stopped or killed broker again."""
        self.node(node_id).start()
        self.wait_for_brokers([node_id], timeout)

    def pause(self, node_id: int) -> None:
        self.node(node_id).signal(signal.SIGSTOP)

    def resume(self, node_id: int) -> None:
        self.node(node_id).signal(signal.SIGCONT)

    # -- ZooKeeper views ----------------------------------------------------------------
    @property
    def zk(self):
        """A kazoo client on the cluster's ZooKeeper (read-only use)."""
        if self._zk is None:
            from headrace.cluster.zk_client import bounded_client

            # Every call bounded (10 s): a paused ZooKeeper does not hang the caller.
            self._zk = bounded_client(self.zookeeper_connect, 10)
            self._zk.start(10)
        return self._zk

    def live_brokers(self) -> list[int]:
        from headrace.cluster import zk_layout as L

        try:
            return sorted(int(c) for c in self.zk.get_children(L.BROKER_IDS))
        except Exception:  # noqa: BLE001 - not created yet
            return []

    def controller_id(self) -> int:
        from kazoo.exceptions import NoNodeError

        from headrace.cluster import zk_layout as L

        try:
            data, _ = self.zk.get(L.CONTROLLER)
        except NoNodeError:
            return -1
        return L.decode_controller(data)

    def partition_states(self, topic: str) -> dict:
        """{partition: PartitionState or None} of ``topic`` in ZooKeeper."""
        from kazoo.exceptions import NoNodeError

        from headrace.cluster import zk_layout as L

        try:
            data, _ = self.zk.get(L.topic_path(topic))
        except NoNodeError:
            return {}
        out = {}
        for p in L.TopicAssignment.decode(topic, data).partitions:
            try:
                sdata, _ = self.zk.get(L.partition_state_path(topic, p))
                out[p] = L.PartitionState.decode(sdata)
            except NoNodeError:
                out[p] = None
        return out

    def wait_for_brokers(self, node_ids: list[int], timeout: float = START_TIMEOUT_S) -> None:
        """Until each broker printed that it joined and is registered, and a
        controller is elected."""
        deadline = time.monotonic() + timeout
        while True:
            for i in node_ids:
                n = self.nodes[i]
                if not n.running:
                    raise HeadraceError(f"broker {i} exited with code {n.proc.returncode}:\n"
                                        f"{n.log_tail()}")
            live = set(self.live_brokers())
            if all(self.nodes[i].joined() and i in live for i in node_ids) \
                    and self.controller_id() != -1:
                return
            if time.monotonic() > deadline:
                missing = [i for i in node_ids if i not in live]
                tail = "\n".join(f"--- broker {i}:\n{self.nodes[i].log_tail()}" for i in missing)
                raise HeadraceError(f"brokers {missing} did not join within {timeout}s\n{tail}")
            time.sleep(0.05)

    def wait_for_leaders(self, topic: str, timeout: float = 30.0) -> dict[int, int]:
        """Until every partition of ``topic`` has a live leader in ZooKeeper
        and every live broker's Metadata names those leaders (a broker
        learns them from ZooKeeper a moment later, and answers leader -1 /
        LEADER_NOT_AVAILABLE meanwhile); returns {partition: leader}. A broker
        that does not answer a plaintext Metadata request on its first
        listener (TLS, SASL), or does not authorize describing the topic, is
        not waited for."""
        deadline = time.monotonic() + timeout
        unaskable: set[int] = set()
        views: dict[int, object] = {}
        while True:
            states = self.partition_states(topic)
            live = set(self.live_brokers())
            if states and all(s is not None and s.leader in live for s in states.values()):
                leaders = {p: s.leader for p, s in sorted(states.items())}
                views = {n: self._metadata_leaders(n, topic, unaskable)
                         for n in sorted(live - unaskable)
                         if n in self.nodes and self.nodes[n].running}
                if all(v == leaders for n, v in views.items() if n not in unaskable):
                    return leaders
            if time.monotonic() > deadline:
                raise HeadraceError(f"topic {topic!r}: no live leader for every partition "
                                    f"within {timeout}s: {states}; brokers' Metadata: {views}")
            time.sleep(0.05)

    def _metadata_leaders(self, node_id: int, topic: str, unaskable: set[int]):
        """What broker ``node_id``'s Metadata says of ``topic``: {partition:
        leader} or the topic's error code; adds the broker to ``unaskable``
        when it cannot be asked (no plaintext answer, not authorized)."""
        from confluent_kafka import KafkaError

        from headrace.admin_wire import Connection, WireError, partition_leaders

        n = self.nodes[node_id]
        try:
            conn = Connection(n.host, n.port, timeout=2.0)
            try:
                code, leaders = partition_leaders(conn, topic)
            finally:
                conn.close()
        except WireError as e:
            unaskable.add(node_id)
            return str(e)
        if code == KafkaError.TOPIC_AUTHORIZATION_FAILED:
            unaskable.add(node_id)
        return leaders if code == 0 else code

    def __repr__(self) -> str:
        state = self.bootstrap_servers if self.zookeeper else "stopped"
        return f"EmbeddedCluster({self.num_brokers} brokers, {state})"
