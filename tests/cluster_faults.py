"""A Jepsen-style fault runner for a headrace cluster (issue 14, "How to show it").

Not a test file: tests/test_cluster_faults.py drives it. The pieces:

- ``NetnsCluster``: an ``EmbeddedCluster`` whose brokers each run in their
  own **network namespace**. A bridge in the root namespace (``hrbN``,
  address ``10.77.S.254``) joins one veth pair per broker; broker N lives in
  namespace ``hrf<pid>-N`` with address ``10.77.S.N`` and listens there.
  ZooKeeper listens on the bridge address in the root namespace, and so do
  the clients (producers, the checker, the test's kazoo client). Broker to
  broker traffic is bridged (layer 2), so no forwarding sysctl is touched.
- ``Network``: sets that up, and makes **partitions** with nftables rules in
  the isolated broker's own namespace (its own ruleset: nothing in the host's
  firewall changes), removed on heal; ``down()`` deletes the namespaces and
  the bridge (which takes every rule with it). Three kinds:
  ``isolate``   the broker can reach neither the other brokers nor
                ZooKeeper; clients still reach it (the case of a deposed
                leader that still gets produce requests);
  ``clients``   clients cannot reach the broker; ZooKeeper and the other
                brokers can;
  ``link_down`` its veth is down: cut off from everything.
  Packets are dropped (not rejected): the peers see timeouts, as in a real
  partition.

  Why namespaces rather than nftables on 127.0.0.1: with every broker on
  127.0.0.1, telling broker 2's outgoing connections from broker 3's needs
  the socket's cgroup (``socket cgroupv2``), which a socket takes when it is
  created, so the broker would have to start inside its cgroup, and the
  rules would go into the host's own ruleset. A namespace per broker gives
  each broker a real address, the partition rules are plain address/port
  matches in a ruleset that is only the broker's, and healing everything is
  ``ip netns del`` (done in a ``finally`` and at interpreter exit).
- ``Nemesis``: from a seeded RNG, one fault at a time, each for a random
  short time, then heal and wait until every broker is registered again and
  every watched partition has a live leader: SIGKILL + restart (a random
  broker, the leader of a watched partition, or the controller),
  SIGSTOP/SIGCONT pauses shorter and longer than
  ``zookeeper.session.timeout.ms`` (a long one expires the broker's
  session), SIGTERM (controlled shutdown) + restart, and the partitions
  above (short and longer than the session timeout).
- ``Workload``: idempotent acks=all confluent-kafka producers writing unique
  sequenced values (``b"<worker>-<seq>"``, round robin over the partitions)
  the whole time, recording every acknowledgement with its offset.
- ``check()``: once the faults are healed, waits for full ISRs, reads every
  partition back from offset 0 and counts per partition: acknowledged,
  lost (an acknowledged value not stored: this covers a deposed, stalled
  leader that acknowledged a write later truncated), duplicated, reordered
  (per worker, stored sequence numbers must increase), acknowledged at
  another offset than the stored one, and byte-identical replica segments.

``run_faults(...)`` ties it together and returns the history: a JSON-able
dict with the fault timeline (seconds since the start) and the counts.
Needs root (``ip netns``, nftables' ``nft``).
"""
from __future__ import annotations

import atexit
import hashlib
import json
import os
import random
import signal
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import Mapping

from headrace import EmbeddedCluster
from headrace.embedded_cluster import START_TIMEOUT_S, BrokerNode


def _sh(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    r = subprocess.run(list(args), capture_output=True, text=True)
    if check and r.returncode != 0:
        raise RuntimeError(f"{' '.join(args)}: {r.stderr.strip()}")
    return r


# -- the network ---------------------------------------------------------------------------
class Network:
    """A bridge and one namespace per broker; partitions as nftables rules."""

    TABLE = "headrace_fault"

    def __init__(self, brokers: int):
        self.brokers = brokers
        tag = os.getpid() % 100000
        self.bridge = f"hrb{tag}"
        self.ns_names = {i: f"hrf{tag}-{i}" for i in range(1, brokers + 1)}
        self.veths = {i: f"hrv{tag}x{i}" for i in range(1, brokers + 1)}
        self.subnet = self._free_subnet()
        self.gateway = f"{self.subnet}.254"
        self.is_up = False
        self.isolated: dict[int, str] = {}

    @staticmethod
    def _free_subnet() -> str:
        used = _sh("ip", "-o", "-4", "addr").stdout
        for s in [(os.getpid() + k) % 250 + 1 for k in range(250)]:
            if f" 10.77.{s}." not in used:
                return f"10.77.{s}"
        raise RuntimeError("no free 10.77.x.0/24 subnet")

    def addr(self, node_id: int) -> str:
        return f"{self.subnet}.{node_id}"

    def up(self) -> None:
        self.down()  # leftovers of an earlier run with the same pid
        atexit.register(self.down)
        self.is_up = True
        _sh("ip", "link", "add", self.bridge, "type", "bridge")
        _sh("ip", "addr", "add", f"{self.gateway}/24", "dev", self.bridge)
        _sh("ip", "link", "set", self.bridge, "up")
        for i, ns in self.ns_names.items():
            _sh("ip", "netns", "add", ns)
            _sh("ip", "link", "add", self.veths[i], "type", "veth", "peer", "name", "eth0",
                "netns", ns)
            _sh("ip", "link", "set", self.veths[i], "master", self.bridge, "up")
            _sh("ip", "-n", ns, "addr", "add", f"{self.addr(i)}/24", "dev", "eth0")
            _sh("ip", "-n", ns, "link", "set", "eth0", "up")
            _sh("ip", "-n", ns, "link", "set", "lo", "up")

    def down(self) -> None:
        """Removes every namespace (and so every rule) and the bridge. Idempotent."""
        for ns in self.ns_names.values():
            _sh("ip", "netns", "del", ns, check=False)
        for v in self.veths.values():
            _sh("ip", "link", "del", v, check=False)
        _sh("ip", "link", "del", self.bridge, check=False)
        self.is_up = False
        self.isolated.clear()

    def _nft(self, node_id: int, script: str) -> None:
        r = subprocess.run(["ip", "netns", "exec", self.ns_names[node_id], "nft", "-f", "-"],
                           input=script, capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError(f"nft in {self.ns_names[node_id]}: {r.stderr.strip()}\n{script}")

    def partition(self, node_id: int, kind: str, broker_port: int, zk_port: int) -> None:
        ns = self.ns_names[node_id]
        others = ", ".join(self.addr(i) for i in self.ns_names if i != node_id)
        gw = self.gateway
        if kind == "link_down":
            _sh("ip", "-n", ns, "link", "set", "eth0", "down")
        elif kind == "isolate":   # from the other brokers and ZooKeeper; clients still reach it
            self._nft(node_id, f"""table inet {self.TABLE} {{
  chain hr_in {{ type filter hook input priority 0; policy accept;
    ip saddr {{ {others} }} drop
    ip saddr {gw} tcp sport {zk_port} drop
  }}
  chain hr_out {{ type filter hook output priority 0; policy accept;
    ip daddr {{ {others} }} drop
    ip daddr {gw} tcp dport {zk_port} drop
  }}
}}
""")
        elif kind == "clients":   # from the clients (root namespace) only
            self._nft(node_id, f"""table inet {self.TABLE} {{
  chain hr_in {{ type filter hook input priority 0; policy accept;
    ip saddr {gw} tcp dport {broker_port} drop
  }}
  chain hr_out {{ type filter hook output priority 0; policy accept;
    ip daddr {gw} tcp sport {broker_port} drop
  }}
}}
""")
        else:
            raise ValueError(kind)
        self.isolated[node_id] = kind

    def heal(self, node_id: int | None = None) -> None:
        for i in ([node_id] if node_id is not None else list(self.ns_names)):
            ns = self.ns_names[i]
            _sh("ip", "netns", "exec", ns, "nft", "delete", "table", "inet", self.TABLE,
                check=False)
            _sh("ip", "-n", ns, "link", "set", "eth0", "up", check=False)
            self.isolated.pop(i, None)

    def rules(self, node_id: int) -> str:
        return _sh("ip", "netns", "exec", self.ns_names[node_id], "nft", "list", "ruleset",
                   check=False).stdout


class NetnsBrokerNode(BrokerNode):
    """A broker started with ``ip netns exec NS``. ``ip netns exec`` execs
    the command, so the process (its pid, signals) is the broker itself."""

    def __init__(self, *args, netns: str, **kwargs):
        super().__init__(*args, **kwargs)
        self.netns = netns

    def command(self) -> list[str]:
        return ["ip", "netns", "exec", self.netns] + super().command()


class NetnsCluster(EmbeddedCluster):
    """EmbeddedCluster with one network namespace per broker (see the module
    docstring). ``stop_all()`` also removes the namespaces and the bridge."""

    def __init__(self, brokers: int = 3, settings: Mapping[str, object] | None = None,
                 data_dir: str | os.PathLike | None = None, broker_port: int = 9092,
                 disjoint_producer_ids: bool = False):
        super().__init__(brokers, settings, data_dir)
        # Diagnostic only (not used by the tests): start broker N's
        # producer id allocator at N * 10**12, so brokers never hand out the
        # same producer id (they do otherwise: docs/cluster.md, "Fault runner").
        self.disjoint_producer_ids = disjoint_producer_ids
        self.net = Network(brokers)
        self.broker_port = broker_port

    def start(self, timeout: float = START_TIMEOUT_S) -> "NetnsCluster":
        from headrace.cluster.zookeeper_server import ZooKeeperServer

        self.dir = self._given_dir or Path(tempfile.mkdtemp(prefix="headrace-faults-"))
        self.dir.mkdir(parents=True, exist_ok=True)
        try:
            self.net.up()
            self.host = self.net.gateway
            self.zookeeper = ZooKeeperServer(self.dir / "zookeeper", host=self.net.gateway).start()
            for i in range(1, self.num_brokers + 1):
                self.nodes[i] = NetnsBrokerNode(
                    i, self.dir / f"broker-{i}", self.net.addr(i), self.broker_port,
                    self.zookeeper.connect_string, dict(self.settings),
                    netns=self.net.ns_names[i])
            for node in self.nodes.values():
                block = node.data_dir / "producer_id_block"
                if self.disjoint_producer_ids and not block.exists():
                    node.data_dir.mkdir(parents=True, exist_ok=True)
                    block.write_text(f"{node.node_id * 10**12}\n")
                node.start()
            atexit.register(self._kill_leftovers)
            self.wait_for_brokers(list(self.nodes), timeout)
        except BaseException:
            self.stop_all()
            raise
        return self

    def stop_all(self, timeout: float = 30.0) -> None:
        try:
            self.net.heal()
            super().stop_all(timeout)
        finally:
            self.net.down()


# -- the workload ----------------------------------------------------------------------------
class Workload:
    """``workers`` acks=all producers writing ``b"<w>-<seq>"``: idempotent, or
    with ``idempotent=False`` plain ones (librdkafka's retries on, so any
    error that makes one resend a stored batch shows as a duplicate or a
    reordering)."""

    def __init__(self, cluster: EmbeddedCluster, topic: str, partitions: int = 3,
                 workers: int = 2, rate_per_worker: float = 400.0, idempotent: bool = True):
        self.cluster, self.topic, self.partitions = cluster, topic, partitions
        self.workers, self.rate = workers, rate_per_worker
        self.idempotent = idempotent
        # partition: [(offset, value, seconds since start)]
        self.acked: dict[int, list[tuple[int, bytes, float]]] = {p: [] for p in range(partitions)}
        self.error_list: list[str] = []
        self.sent_by = [0] * workers
        self.undelivered_by = [0] * workers
        self.fatal: list[dict] = []
        self.pid_log: list[tuple] = []
        self.stop_event = threading.Event()
        self.threads: list[threading.Thread] = []
        self.t0 = time.monotonic()

    def start(self) -> "Workload":
        for w in range(self.workers):
            t = threading.Thread(target=self._run, args=(w,), name=f"producer-{w}", daemon=True)
            t.start()
            self.threads.append(t)
        return self

    def _producer(self, w: int, gen: int, on_error):
        import logging

        import confluent_kafka as ck

        workload = self

        class PidLog(logging.Handler):  # librdkafka's "eos" debug lines name the PID
            def emit(self, record):
                text = record.getMessage()
                if "PID{Id:" in text and ("cquired" in text or "ssigned" in text):
                    workload.pid_log.append((round(time.monotonic() - workload.t0, 3),
                                             f"worker {w} gen {gen}", text[-160:]))

        logger = logging.getLogger(f"cluster_faults.producer-{w}-{gen}")
        logger.propagate = False
        logger.setLevel(logging.DEBUG)
        logger.addHandler(PidLog())
        return ck.Producer({"bootstrap.servers": self.cluster.bootstrap_servers, "acks": "all",
                            "enable.idempotence": self.idempotent, "linger.ms": 5,
                            "message.timeout.ms": 120000, "retry.backoff.ms": 100,
                            "socket.timeout.ms": 10000, "debug": "eos", "error_cb": on_error}, logger=logger)

    def _run(self, w: int) -> None:
        # No locks in the callbacks: confluent-kafka may call them with an
        # exception pending (a fatal error), and a lock taken then is never
        # released. list.append is atomic under the GIL.
        acked = self.acked
        errors = self.error_list

        def report(err, msg):
            if err is None:
                acked[msg.partition()].append(
                    (msg.offset(), msg.value(), time.monotonic() - self.t0))
            else:
                errors.append(err.name() if hasattr(err, "name") else str(err))

        fatal: list = []

        def on_error(err):
            if err.fatal():
                fatal.append(str(err))

        gen = 0
        p = self._producer(w, gen, on_error)
        i = 0
        period = 1.0 / self.rate
        next_t = time.monotonic()
        while not self.stop_event.is_set():
            try:
                p.produce(self.topic, value=b"%d-%09d" % (w, i), partition=i % self.partitions,
                          on_delivery=report)
                i += 1
                self.sent_by[w] += 1
                p.poll(0)
            except BufferError:
                p.poll(0.1)
                continue
            except Exception as e:  # noqa: BLE001 - KafkaException _FATAL, or from a callback
                fatal.append(repr(e))
            if fatal:
                # A fatal idempotence error: the producer is unusable. Recorded
                # (a correct broker never causes one), then a new producer (a
                # new producer id) goes on with the same worker's sequence.
                self.fatal.append({"t": round(time.monotonic() - self.t0, 3), "worker": w,
                                   "generation": gen, "errors": list(fatal)[:3]})
                try:
                    p.flush(5)
                except Exception:  # noqa: BLE001
                    pass
                fatal.clear()
                gen += 1
                p = self._producer(w, gen, on_error)
                continue
            next_t += period
            delay = next_t - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            elif delay < -1:
                next_t = time.monotonic()
        try:
            left = p.flush(150)
        except Exception as e:  # noqa: BLE001
            self.fatal.append({"t": round(time.monotonic() - self.t0, 3), "worker": w,
                               "generation": gen, "errors": [repr(e)], "at": "final flush"})
            left = len(p)
        self.undelivered_by[w] = left

    def stop(self) -> None:
        self.stop_event.set()
        for t in self.threads:
            t.join(200)

    def acked_count(self) -> int:
        return sum(len(v) for v in list(self.acked.values()))

    @property
    def sent(self) -> int:
        return sum(self.sent_by)

    @property
    def undelivered(self) -> int:
        return sum(self.undelivered_by)

    @property
    def errors(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for e in list(self.error_list):
            out[e] = out.get(e, 0) + 1
        return out


# -- the nemesis -----------------------------------------------------------------------------
FAULT_KINDS = ("kill", "kill_leader", "kill_controller", "kill_controller_cut_tail",
               "pause_short", "pause_long", "pause_past_lag",
               "pause_leader_long", "stop", "stop_leader", "partition_short", "partition_long",
               "partition_leader_long", "partition_clients", "partition_link_down")


class Nemesis:
    def __init__(self, cluster: NetnsCluster, topic: str, partitions: int, seed: int,
                 session_timeout_s: float, log=print, lag_time_s: float = 4.0):
        self.cluster, self.topic, self.partitions = cluster, topic, partitions
        self.rng = random.Random(seed)
        self.session_s = session_timeout_s
        self.lag_s = lag_time_s
        self.events: list[dict] = []
        self.t0 = time.monotonic()
        self.log = log
        self.active: tuple[str, int] | None = None  # what heal_all() must undo

    def now(self) -> float:
        return round(time.monotonic() - self.t0, 3)

    def _leader_of(self, p: int) -> int:
        s = self.cluster.partition_states(self.topic).get(p)
        return s.leader if s is not None else -1

    def _states(self) -> dict:
        """{partition: [leader, leader epoch, isr]} in ZooKeeper."""
        try:
            return {p: None if s is None else [s.leader, s.leader_epoch, list(s.isr)]
                    for p, s in self.cluster.partition_states(self.topic).items()}
        except Exception as e:  # noqa: BLE001
            return {"error": repr(e)}

    def _target(self, role: str) -> tuple[int, str]:
        ids = sorted(self.cluster.nodes)
        if role == "leader":
            p = self.rng.randrange(self.partitions)
            leader = self._leader_of(p)
            if leader in self.cluster.nodes:
                return leader, f"leader of {self.topic}-{p}"
        if role == "controller":
            c = self.cluster.controller_id()
            if c in self.cluster.nodes:
                return c, "controller"
        n = self.rng.choice(ids)
        roles = [f"leader of {self.topic}-{p}" for p in range(self.partitions)
                 if self._leader_of(p) == n]
        if self.cluster.controller_id() == n:
            roles.append("controller")
        return n, ", ".join(roles) or "follower"

    def _short(self) -> float:
        return round(self.rng.uniform(0.5, 0.6 * self.session_s), 2)

    def _long(self) -> float:
        return round(self.rng.uniform(1.3 * self.session_s, 2.0 * self.session_s), 2)

    def _past_lag(self) -> float:
        """Longer than replica.lag.time.max.ms (the broker leaves the ISRs it
        follows in) and, when the lag time is short enough, within half the
        session timeout: ZooKeeper counts the session from its last contact,
        which kazoo's pings (every third of the timeout) may have made well
        before the pause, so only that much is sure not to expire it (no
        leadership moves). With the runner's defaults (lag 4 s, session 6 s)
        the pause may expire the session too."""
        lo = self.lag_s + 0.8
        return round(self.rng.uniform(lo, max(lo, 0.5 * self.session_s)), 2)

    def inject(self, kind: str) -> dict:
        c = self.cluster
        role = "leader" if "leader" in kind else "controller" if "controller" in kind else "any"
        node, roles = self._target(role)
        ev = {"kind": kind, "node": node, "roles": roles, "start": self.now(),
              "states_before": self._states()}
        self.events.append(ev)
        if kind.startswith("kill"):
            ev["down_s"] = d = self._short()
            self.active = ("kill", node)
            c.kill(node)
            if kind.endswith("cut_tail"):
                ev["cut_bytes"] = self.cut_tails(node)
            time.sleep(d)
            ev["restart"] = self.now()
            c.node(node).start()
        elif kind == "pause_past_lag":
            ev["duration_s"] = d = self._past_lag()
            self.active = ("pause", node)
            c.pause(node)
            time.sleep(d)
            ev["states_paused"] = self._states()  # its followed ISRs shrunk
            c.resume(node)
        elif kind.startswith("pause"):
            ev["duration_s"] = d = self._long() if kind.endswith("long") else self._short()
            self.active = ("pause", node)
            c.pause(node)
            time.sleep(d)
            c.resume(node)
        elif kind.startswith("stop"):
            ev["down_s"] = d = self._short()
            self.active = ("kill", node)
            ev["exit_code"] = c.stop(node)
            time.sleep(d)
            ev["restart"] = self.now()
            c.node(node).start()
        elif kind.startswith("partition"):
            how = {"partition_clients": "clients", "partition_link_down": "link_down"}.get(
                kind, "isolate")
            ev["partition"] = how
            if kind.endswith("long"):
                d = self._long()
            elif kind.endswith("short"):
                d = self._short()
            else:  # clients, link_down: either
                d = self._long() if self.rng.random() < 0.5 else self._short()
            ev["duration_s"] = d
            self.active = ("partition", node)
            c.net.partition(node, how, c.broker_port, c.zookeeper.port)
            time.sleep(d)
            c.net.heal(node)
        else:
            raise ValueError(kind)
        self.active = None
        ev["healed"] = self.now()
        ev["recovered"] = self.wait_recovered(node)
        ev["recovered_at"] = self.now()
        ev["states_after"] = self._states()
        self.log(f"[{ev['start']:7.2f}s] {kind:22s} broker {node} ({roles}) "
                 f"healed {ev['healed']:.2f}s recovered {ev['recovered_at']:.2f}s "
                 f"{'' if ev['recovered'] is True else ev['recovered']}")
        return ev

    def cut_tails(self, node: int) -> dict[int, int]:
        """The power-loss model: while broker ``node`` is down, cuts up to
        64 KiB off the end of each watched partition's last segment (the
        writes a power loss takes when they were not fsynced, as with
        headrace.acks.all.fsync=false); recovery truncates a torn batch.
        Returns {partition: bytes cut}."""
        cut = {}
        for p in range(self.partitions):
            segs = sorted((self.cluster.node(node).data_dir / f"{self.topic}-{p}").glob("*.log"))
            if not segs:
                continue
            size = segs[-1].stat().st_size
            n = min(size, self.rng.randint(1, 64 * 1024))
            os.truncate(segs[-1], size - n)
            cut[p] = n
        return cut

    def wait_recovered(self, node: int, timeout: float = 90.0):
        """Until the broker runs, is registered and every partition has a
        live leader. True, or a description of what was missing."""
        c = self.cluster
        deadline = time.monotonic() + timeout
        while True:
            n = c.node(node)
            if not n.running:
                return f"broker {node} exited ({n.proc.returncode if n.proc else None})"
            live = set(c.live_brokers())
            states = c.partition_states(self.topic)
            if set(c.nodes) <= live and (n.joined() if n.proc else True) and states and \
                    all(s is not None and s.leader in live for s in states.values()) and \
                    c.controller_id() in live:
                return True
            if time.monotonic() > deadline:
                return f"not recovered in {timeout}s: live {sorted(live)}, states {states}"
            time.sleep(0.1)

    def heal_all(self) -> None:
        """Undoes whatever a fault interrupted by an exception left."""
        c = self.cluster
        try:
            c.net.heal()
        except Exception:  # noqa: BLE001
            pass
        for n in c.nodes.values():
            if n.proc is not None:
                n.signal(signal.SIGCONT)
        if self.active is not None and self.active[0] == "kill":
            n = c.node(self.active[1])
            if not n.running:
                n.start()
        self.active = None

    def run(self, duration_s: float, kinds=FAULT_KINDS, gap=(1.0, 3.0)) -> None:
        deadline = time.monotonic() + duration_s
        bag: list[str] = []  # every kind once per round, in a random order
        try:
            while time.monotonic() < deadline:
                time.sleep(self.rng.uniform(*gap))
                if not bag:
                    bag = list(kinds)
                    self.rng.shuffle(bag)
                self.inject(bag.pop())
        finally:
            self.heal_all()


# -- the checker ------------------------------------------------------------------------------
def read_all(cluster, topic: str, partitions: int) -> dict[int, list[tuple[int, bytes]]]:
    import confluent_kafka as ck

    # Leaders known to every broker: a consumer whose first Metadata says
    # LEADER_NOT_AVAILABLE keeps failing get_watermark_offsets (librdkafka).
    cluster.wait_for_leaders(topic)

    c = ck.Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": f"check-{topic}",
                     "enable.auto.commit": False, "auto.offset.reset": "earliest",
                     "enable.partition.eof": False})
    out: dict[int, list[tuple[int, bytes]]] = {p: [] for p in range(partitions)}
    try:
        highs = {p: c.get_watermark_offsets(ck.TopicPartition(topic, p), timeout=30)[1]
                 for p in range(partitions)}
        c.assign([ck.TopicPartition(topic, p, 0) for p in range(partitions)])
        remaining = {p: h for p, h in highs.items() if h > 0}
        deadline = time.monotonic() + 180
        while remaining:
            if time.monotonic() > deadline:
                raise AssertionError(f"read stalled before the high watermarks {highs}: "
                                     f"{ {p: len(v) for p, v in out.items()} }")
            for msg in c.consume(1000, 1.0):
                if msg.error():
                    continue
                p = msg.partition()
                if msg.offset() < highs[p]:
                    out[p].append((msg.offset(), msg.value()))
                    if msg.offset() == highs[p] - 1:
                        remaining.pop(p, None)
    finally:
        c.close()
    return out


def segment_digests(cluster, topic: str, partition: int) -> dict[int, str]:
    out = {}
    for node_id, node in cluster.nodes.items():
        d = Path(node.data_dir) / f"{topic}-{partition}"
        if not d.exists():
            continue
        h = hashlib.sha256()
        for f in sorted(d.glob("*.log")):
            h.update(f.name.encode())
            h.update(f.read_bytes())
        out[node_id] = h.hexdigest()
    return out


def wait_full_isr(cluster, topic: str, rf: int, timeout: float = 90.0):
    deadline = time.monotonic() + timeout
    while True:
        states = cluster.partition_states(topic)
        if states and all(s is not None and len(s.isr) == rf for s in states.values()):
            return True
        if time.monotonic() > deadline:
            return f"ISR not complete after {timeout}s: {states}"
        time.sleep(0.2)


def wait_identical(cluster, topic: str, partition: int, rf: int, timeout: float = 60.0):
    deadline = time.monotonic() + timeout
    while True:
        digests = segment_digests(cluster, topic, partition)
        if len(digests) == rf and len(set(digests.values())) == 1:
            return True, digests
        if time.monotonic() > deadline:
            return False, digests
        time.sleep(0.25)


def check(cluster, workload: Workload, topic: str, partitions: int, rf: int) -> dict:
    counts: dict = {"isr": wait_full_isr(cluster, topic, rf)}
    stored = read_all(cluster, topic, partitions)
    per: dict = {}
    bad: dict = {}
    for p in range(partitions):
        acked = workload.acked.get(p, [])
        have = stored.get(p, [])
        at = {o: v for o, v in have}
        seen: dict[bytes, int] = {}
        dup = 0
        for o, v in have:
            if v in seen:
                dup += 1
                bad.setdefault("duplicated", []).append((p, v.decode(), seen[v], o))
            seen.setdefault(v, o)
        lost = moved = no_offset = 0
        for o, v, t in acked:
            if v not in seen:
                lost += 1
                bad.setdefault("lost", []).append((p, o, v.decode(), round(t, 3)))
            elif o is None or o < 0:
                no_offset += 1  # acknowledged without an offset (a duplicate batch)
            elif at.get(o) != v:
                moved += 1
                bad.setdefault("moved", []).append((p, o, seen[v], v.decode(), round(t, 3)))
        last: dict[bytes, int] = {}
        reordered = 0
        for o, v in have:
            w, s = v.split(b"-")
            s = int(s)
            if w in last and s <= last[w]:
                reordered += 1
                bad.setdefault("reordered", []).append((p, o, v.decode()))
            last[w] = s
        acked_values = {v for _, v, _ in acked}
        identical, digests = wait_identical(cluster, topic, p, rf)
        per[p] = {"acknowledged": len(acked), "stored": len(have), "lost": lost,
                  "duplicated": dup, "reordered": reordered, "acked_offset_moved": moved,
                  "acked_without_offset": no_offset,
                  "stored_unacknowledged": sum(1 for _, v in have if v not in acked_values),
                  "replicas_identical": identical,
                  "replica_digests": {str(k): v[:16] for k, v in digests.items()}}
    total = {k: sum(per[p][k] for p in per) for k in
             ("acknowledged", "stored", "lost", "duplicated", "reordered", "acked_offset_moved",
              "acked_without_offset", "stored_unacknowledged")}
    total["replicas_identical"] = all(per[p]["replicas_identical"] for p in per)
    # Liveness per worker: when its records stopped being acknowledged, and
    # its longest stretch without an acknowledgement (not asserted).
    times: dict[str, list[float]] = {}
    for p in range(partitions):
        for _, v, t in workload.acked.get(p, []):
            times.setdefault(v.split(b"-")[0].decode(), []).append(t)
    liveness = {}
    for w, ts in sorted(times.items()):
        ts.sort()
        gap = max(((b - a, a) for a, b in zip(ts, ts[1:])), default=(0.0, 0.0))
        liveness[w] = {"acknowledged": len(ts), "first_ack_s": round(ts[0], 1),
                       "last_ack_s": round(ts[-1], 1), "longest_gap_s": round(gap[0], 1),
                       "longest_gap_from_s": round(gap[1], 1)}
    counts["liveness"] = liveness
    counts.update(total=total, partitions=per,
                  examples={k: v[:20] for k, v in bad.items()})
    return counts


# -- everything together -------------------------------------------------------------------
DEFAULT_SETTINGS = {
    "zookeeper.session.timeout.ms": 6000,
    "replica.lag.time.max.ms": 4000,
    "num.partitions": 3,
}


def run_faults(data_dir: str | os.PathLike, seed: int, fault_seconds: float,
               kinds=FAULT_KINDS, partitions: int = 3, rf: int = 3,
               settings: Mapping[str, object] | None = None, workers: int = 2,
               rate_per_worker: float = 300.0, log=print,
               disjoint_producer_ids: bool = False, idempotent: bool = True) -> dict:
    """Starts a NetnsCluster, an RF=``rf`` min.insync.replicas=2 topic, the
    workload, ``fault_seconds`` of faults, heals, checks. Returns the history;
    also written to ``<data_dir>/history.json``."""
    from confluent_kafka.admin import AdminClient, NewTopic

    settings = dict(DEFAULT_SETTINGS, **(settings or {}))
    session_s = int(settings["zookeeper.session.timeout.ms"]) / 1000
    topic = "jepsen"
    history: dict = {"seed": seed, "settings": {k: str(v) for k, v in settings.items()},
                     "topic": topic, "partitions": partitions, "replication_factor": rf,
                     "min_insync_replicas": 2, "fault_seconds": fault_seconds,
                     "data_dir": str(data_dir),
                     "disjoint_producer_ids": disjoint_producer_ids,
                     "idempotent_producers": idempotent}
    t_start = time.monotonic()
    cluster = NetnsCluster(3, settings, data_dir, disjoint_producer_ids=disjoint_producer_ids)
    cluster.start()
    try:
        history["network"] = {"bridge": cluster.net.bridge, "gateway": cluster.net.gateway,
                              "brokers": {i: f"{n.address} in {cluster.net.ns_names[i]}"
                                          for i, n in cluster.nodes.items()},
                              "zookeeper": cluster.zookeeper_connect}
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
        fs = admin.create_topics([NewTopic(topic, partitions, rf,
                                           config={"min.insync.replicas": "2"})],
                                 operation_timeout=30)
        fs[topic].result(30)
        cluster.wait_for_leaders(topic, timeout=30)
        assert wait_full_isr(cluster, topic, rf, 60) is True
        workload = Workload(cluster, topic, partitions, workers, rate_per_worker,
                            idempotent=idempotent).start()
        nemesis = Nemesis(cluster, topic, partitions, seed, session_s, log=log,
                          lag_time_s=int(settings["replica.lag.time.max.ms"]) / 1000)
        nemesis.t0 = workload.t0
        try:
            time.sleep(2)
            nemesis.run(fault_seconds, kinds)
            time.sleep(3)  # the workload goes on a little on the healed cluster
        finally:
            nemesis.heal_all()
            workload.stop()
        history["faults"] = nemesis.events
        history["workload"] = {"workers": workers, "sent": workload.sent,
                               "acknowledged": workload.acked_count(),
                               "delivery_errors": dict(workload.errors),
                               "undelivered_at_close": workload.undelivered,
                               "producer_fatal_errors": workload.fatal,
                               "producer_ids": workload.pid_log[:200]}
        history["check"] = check(cluster, workload, topic, partitions, rf)
        history["unrecovered_faults"] = [e for e in nemesis.events if e.get("recovered") is not True]
        del admin  # before the namespaces go (it would reconnect to addresses routed elsewhere)
    finally:
        history["wall_s"] = round(time.monotonic() - t_start, 1)
        try:
            Path(data_dir, "history.json").write_text(json.dumps(history, indent=1, default=str))
        except OSError:
            pass
        cluster.stop_all()
    return history


def summary(history: dict) -> str:
    faults = history.get("faults", [])
    kinds: dict[str, int] = {}
    for e in faults:
        kinds[e["kind"]] = kinds.get(e["kind"], 0) + 1
    tot = history.get("check", {}).get("total", {})
    return (f"seed {history['seed']}: {len(faults)} faults {kinds} in {history['wall_s']} s; "
            f"sent {history.get('workload', {}).get('sent')}, acknowledged {tot.get('acknowledged')}, "
            f"lost {tot.get('lost')}, duplicated {tot.get('duplicated')}, "
            f"reordered {tot.get('reordered')}, acked offset moved {tot.get('acked_offset_moved')}, "
            f"acked without offset {tot.get('acked_without_offset')}, "
            f"stored unacknowledged {tot.get('stored_unacknowledged')}, "
            f"replicas identical {tot.get('replicas_identical')}, "
            f"producer fatal errors {len(history.get('workload', {}).get('producer_fatal_errors', []))}, "
            f"delivery errors {history.get('workload', {}).get('delivery_errors')}")


if __name__ == "__main__":  # python tests/cluster_faults.py SEED SECONDS [DIR]
    import sys

    seed = int(sys.argv[1]) if len(sys.argv) > 1 else 1
    secs = float(sys.argv[2]) if len(sys.argv) > 2 else 60
    d = sys.argv[3] if len(sys.argv) > 3 else tempfile.mkdtemp(prefix="headrace-faults-")
    h = run_faults(d, seed, secs)
    print(summary(h))
    print(json.dumps(h.get("check", {}).get("examples", {}), default=str)[:4000])
    print("history:", Path(d, "history.json"))
