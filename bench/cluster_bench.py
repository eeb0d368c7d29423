#!/usr/bin/env python3
"""Replication figures of issue 14 on a 3-broker EmbeddedCluster (a
ZooKeeper and three `headrace broker --zookeeper` processes on loopback).

    bench/cluster_bench.py [--only produce,catchup,failover,interbroker] [--repeats 3]
                           [--build-dir build/bench] [--session-timeouts 6000,18000]
                           [--catchup-mb 500] [--json-out F]

- produce: headrace-loadgen, one producer, one partition, the single-node
  suite's produce settings (1 KiB, linger.ms=5, batch.size=1000000, 8 s),
  interleaved per repeat: RF=1 acks=1, RF=1 acks=all, RF=3 acks=all with
  min.insync.replicas=2; then paced latency runs (1 KiB, linger.ms=0,
  20,000 msgs/s) RF=1 acks=all vs RF=3 acks=all.
- catchup: a follower is SIGSTOPped, N MB of 16 KiB records in ~1 MiB
  batches (the fetch scenario's data) are produced (acks=1), the follower
  leaves the ISR, then SIGCONT: time until its segment files hold as many
  bytes as the leader's (replicas are byte-identical: same batches at the
  same offsets) and until ZooKeeper's ISR holds it again.
- failover: a confluent-kafka producer (acks=all, idempotent) sends
  continuously to 3 RF=3 partitions; the leader of partition 0 is SIGKILLed
  (or SIGTERMed: controlled shutdown); the outage = the longest gap between
  consecutive acknowledgements of partition 0 around the signal.

- interbroker (only when asked): the produce scenario's RF=3 acks=all case
  on two clusters side by side, brokers replicating over PLAINTEXT vs over
  an SSL listener, alternating back to back; MB/s, paired ratios, the
  leader's and the followers' CPU s/GB (docs/performance.md "Inter-broker
  TLS").

Never pass/fail; prints a JSON summary per scenario (and --json-out keeps
every raw result). Each line of progress carries the load average.
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import sys
import threading
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
sys.path.insert(0, str(BENCH))

from confluent_kafka import Producer  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

from headrace import EmbeddedCluster  # noqa: E402
from suite import tools as T  # noqa: E402
from suite.scenarios import BIG_BATCH  # noqa: E402

BASE_SETTINGS = {
    "replica.lag.time.max.ms": 4000,   # as tests/test_cluster_replication.py
    "num.partitions": 1,
    "auto.leader.rebalance.enable": "false",  # no leader moves of its own mid-run
}
PRODUCE_ARGS = ["--linger-ms", "5", "--batch-size", "1000000"]  # the suite's produce case


def load() -> str:
    return "%.2f %.2f %.2f" % os.getloadavg()


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')} load {load()}] {msg}", file=sys.stderr, flush=True)


def med(xs):
    return statistics.median(xs) if xs else None


class Bench:
    def __init__(self, cluster: EmbeddedCluster, tools: T.Tools):
        self.c = cluster
        self.tools = tools
        self.admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})

    def create(self, topic: str, partitions: int, rf: int, min_isr: int = 1) -> dict[int, int]:
        fs = self.admin.create_topics(
            [NewTopic(topic, partitions, rf, config={"min.insync.replicas": str(min_isr)})],
            operation_timeout=30)
        fs[topic].result(30)
        leaders = self.c.wait_for_leaders(topic, 30)
        self.wait_isr(topic, rf)
        return leaders

    def delete(self, topic: str, timeout: float = 120.0) -> None:
        """Deletes `topic` and waits until no broker holds its directories
        (a broker removes them on a background thread after answering:
        unlinking GBs of page cache would otherwise run inside the next
        case and be counted against it)."""
        try:
            self.admin.delete_topics([topic], operation_timeout=30)[topic].result(30)
        except Exception as e:  # noqa: BLE001
            log(f"delete {topic}: {e}")
            return
        deadline = time.monotonic() + timeout
        while any(d.name.startswith(f"{topic}-")
                  for n in self.c.nodes.values() if n.data_dir.exists()
                  for d in n.data_dir.iterdir()):
            if time.monotonic() > deadline:
                log(f"delete {topic}: directories still there after {timeout:.0f} s")
                return
            time.sleep(0.05)

    def wait_isr(self, topic: str, rf: int, timeout: float = 120.0) -> None:
        deadline = time.monotonic() + timeout
        while True:
            states = self.c.partition_states(topic)
            if states and all(s is not None and len(s.isr) == rf for s in states.values()):
                return
            if time.monotonic() > deadline:
                raise RuntimeError(f"ISR of {topic} not complete: {states}")
            time.sleep(0.05)

    def loadgen(self, mode: str, topic: str, leader: int, *args: str) -> dict:
        r = T.loadgen(self.tools, mode, self.c.bootstrap_servers, topic,
                      self.c.node(leader).pid, *args)
        flow = r.get("produce", {})
        lat = flow.get("latency_us", {})
        log(f"  {topic} (leader {leader}): {flow.get('msgs_per_s', 0):,.0f} msgs/s "
            f"{flow.get('mb_per_s', 0):,.1f} MB/s p50 {lat.get('p50', 0):,.0f} "
            f"p99 {lat.get('p99', 0):,.0f} us, leader {r['broker_cpu_s_per_gb']:.2f} CPU s/GB, "
            f"errors {flow.get('errors')}")
        r["load"] = load()
        r["leader"] = leader
        return r


# -- (a) produce RF=3 vs RF=1 ------------------------------------------------------------
PRODUCE_CASES = [  # name, rf, min.insync, acks
    ("rf1_acks1", 1, 1, "1"),
    ("rf1_acksall", 1, 1, "all"),
    ("rf3_acksall", 3, 2, "all"),
]
LATENCY_CASES = [("lat_rf1_acksall", 1, 1, "all"), ("lat_rf3_acksall", 3, 2, "all")]
EXTRA_CASES = [("rf3_acks1", 3, 2, "1")]  # diagnosis only (--cases)
SYNC_EVENTS = "syscalls:sys_enter_fdatasync,syscalls:sys_enter_fsync,syscalls:sys_enter_msync"


class SyncCounter:
    """perf stat of the fsync-family syscalls of every broker while the body
    runs (tracepoints: no ptrace stops, negligible overhead)."""

    def __init__(self, cluster, enabled: bool, tag: str):
        self.c, self.enabled, self.tag = cluster, enabled, tag
        self.procs, self.counts = {}, {}

    def __enter__(self):
        if self.enabled:
            import subprocess
            for nid, n in self.c.nodes.items():
                out = f"/tmp/headrace-syncs-{os.getpid()}-{self.tag}-{nid}.csv"
                self.procs[nid] = (subprocess.Popen(
                    ["perf", "stat", "-x,", "-e", SYNC_EVENTS, "-p", str(n.pid), "-o", out],
                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL), out)
            time.sleep(0.3)
        return self

    def __exit__(self, *exc):
        for nid, (proc, out) in self.procs.items():
            proc.send_signal(signal.SIGINT)
            proc.wait(30)
            counts = {}
            for line in Path(out).read_text().splitlines():
                f = line.split(",")
                if len(f) > 2 and f[2].startswith("syscalls:"):
                    counts[f[2].split("sys_enter_")[1]] = int(f[0]) if f[0].isdigit() else f[0]
            self.counts[nid] = counts
            os.unlink(out)


def produce(b: Bench, repeats: int, duration: float, rate: int, cases: set[str] | None = None,
            count_syncs: bool = False) -> dict:
    tput = [c for c in PRODUCE_CASES + EXTRA_CASES
            if (c[0] in cases if cases else c in PRODUCE_CASES)]
    lat = [c for c in LATENCY_CASES if not cases or c[0] in cases]
    out: dict = {n: [] for n, *_ in tput + lat}
    for i in range(repeats):
        for name, rf, min_isr, acks in tput:
            topic = f"{name}-{i}"
            leader = b.create(topic, 1, rf, min_isr)[0]
            os.sync()
            with SyncCounter(b.c, count_syncs, topic) as sc:
                r = b.loadgen("produce", topic, leader, "--size", "1024", "--acks", acks,
                              "--duration", str(duration), *PRODUCE_ARGS)
            if count_syncs:
                r["sync_calls"] = {str(k): v for k, v in sc.counts.items()}
                log(f"    fsync-family calls per broker (leader {leader}): {sc.counts}")
            out[name].append(r)
            b.delete(topic)
        for name, rf, min_isr, acks in lat:
            topic = f"{name}-{i}"
            leader = b.create(topic, 1, rf, min_isr)[0]
            os.sync()
            out[name].append(b.loadgen("produce", topic, leader, "--size", "1024", "--acks", acks,
                                       "--linger-ms", "0", "--rate", str(rate),
                                       "--duration", str(duration)))
            b.delete(topic)
    return out


def summarize_produce(res: dict) -> dict:
    s = {}
    for name, runs in res.items():
        s[name] = {"mb_per_s": [round(r["produce"]["mb_per_s"], 1) for r in runs],
                   "p50_us": [round(r["produce"]["latency_us"]["p50"]) for r in runs],
                   "p99_us": [round(r["produce"]["latency_us"]["p99"]) for r in runs],
                   "leader_cpu_s_per_gb": [round(r["broker_cpu_s_per_gb"], 2) for r in runs],
                   "errors": [r["produce"].get("errors") for r in runs],
                   "load": [r["load"] for r in runs]}
        s[name]["median_mb_per_s"] = med(s[name]["mb_per_s"])
    for base in ("rf1_acksall", "rf1_acks1"):
        if s.get("rf3_acksall", {}).get("median_mb_per_s") and s.get(base, {}).get("median_mb_per_s"):
            s[f"ratio_rf3_acksall_vs_{base}"] = round(
                s["rf3_acksall"]["median_mb_per_s"] / s[base]["median_mb_per_s"], 3)
            s[f"paired_ratios_rf3_acksall_vs_{base}"] = [
                round(a / c, 3) for a, c in zip(s["rf3_acksall"]["mb_per_s"], s[base]["mb_per_s"])]
    return s


# -- (b) follower catch-up --------------------------------------------------------------
def log_bytes(node, topic: str, partition: int = 0) -> int:
    d = Path(node.data_dir) / f"{topic}-{partition}"
    total = 0
    for f in d.glob("*.log"):
        try:
            total += f.stat().st_size
        except FileNotFoundError:
            pass
    return total


def catchup(b: Bench, repeats: int, mb: int) -> list[dict]:
    runs = []
    count = mb * 1_000_000 // 16384
    for i in range(repeats):
        topic = f"catchup-{i}"
        leader = b.create(topic, 1, 3, 2)[0]
        follower = next(n for n in b.c.partition_states(topic)[0].isr if n != leader)
        fnode, lnode = b.c.node(follower), b.c.node(leader)
        os.sync()
        b.c.pause(follower)
        t_stop = time.monotonic()
        try:
            prod = b.loadgen("produce", topic, leader, "--size", "16384", "--count", str(count),
                             "--acks", "1", *BIG_BATCH)
            # Until the leader (lag time) or the controller (session expiry)
            # took the follower out of the ISR.
            while follower in b.c.partition_states(topic)[0].isr:
                if time.monotonic() - t_stop > 60:
                    raise RuntimeError("follower never left the ISR")
                time.sleep(0.05)
            t_out = time.monotonic() - t_stop
            os.sync()  # the copy should not pay for the leader's writeback
            lead_bytes, f_bytes0 = log_bytes(lnode, topic), log_bytes(fnode, topic)
            session_expired = follower not in b.c.live_brokers()
            t0 = time.monotonic()
        finally:
            b.c.resume(follower)
        t_bytes = t_isr = None
        cpu0 = _cpu(fnode.pid)
        while t_bytes is None or t_isr is None:
            now = time.monotonic() - t0
            if t_bytes is None and log_bytes(fnode, topic) >= lead_bytes:
                t_bytes = now
                cpu_follower = _cpu(fnode.pid) - cpu0
            if t_isr is None and follower in (b.c.partition_states(topic)[0].isr or []):
                t_isr = now
            if now > 300:
                raise RuntimeError(f"follower {follower} did not catch up in 300 s")
            time.sleep(0.005)
        copied = lead_bytes - f_bytes0
        r = {"leader": leader, "follower": follower, "produced_mb": count * 16384 / 1e6,
             "produce_mb_per_s": prod["produce"]["mb_per_s"], "copied_bytes": copied, "caught_up_s": t_bytes,
             "isr_rejoined_s": t_isr, "mb_per_s": copied / 1e6 / t_bytes,
             "follower_cpu_s_per_gb": cpu_follower / (copied / 1e9),
             "left_isr_after_s": t_out, "session_expired": session_expired, "load": load()}
        log(f"  catch-up {copied / 1e6:,.0f} MB in {t_bytes:.2f} s = {r['mb_per_s']:,.0f} MB/s "
            f"(ISR again after {t_isr:.2f} s; follower {r['follower_cpu_s_per_gb']:.2f} CPU s/GB;"
            f" session expired while stopped: {session_expired})")
        runs.append(r)
        b.delete(topic)
    return runs


def _cpu(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


# -- (d) inter-broker TLS vs plaintext ---------------------------------------------------
def _make_certs(d: Path) -> None:
    """A CA and a broker certificate for 127.0.0.1 (openssl CLI), the
    broker's key and chain in one PEM keystore."""
    import subprocess

    def run(*a):
        subprocess.run(["openssl", *a], cwd=d, check=True, capture_output=True)
    run("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
        "-keyout", "ca.key", "-out", "ca.pem", "-days", "2", "-subj", "/CN=bench-ca")
    run("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
        "-keyout", "broker.key", "-out", "broker.csr", "-subj", "/CN=broker")
    (d / "broker.ext").write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    run("x509", "-req", "-in", "broker.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
        "-CAcreateserial", "-out", "broker.pem", "-days", "2", "-extfile", "broker.ext")
    (d / "store.pem").write_text((d / "broker.key").read_text() + (d / "broker.pem").read_text())


def interbroker(tools, repeats: int, duration: float, extra: dict, keep, rate: int = 0) -> dict:
    """RF=3 acks=all (min.insync 2) produce, the same load as `produce`, on
    two clusters running side by side: one whose brokers replicate over a
    PLAINTEXT listener, one over an SSL listener (clients use a PLAINTEXT
    listener on both). Runs alternate per repeat (plaintext first on even
    repeats), so each pair is back to back under the same load. Also the
    followers' CPU per GB (decrypting). `rate` > 0: paced at that many
    msgs/s instead (equal work per run: the CPU s/GB compare best)."""
    import tempfile

    from headrace.cluster.zookeeper_server import free_port

    certs = Path(tempfile.mkdtemp(prefix="headrace-ib-certs-"))
    _make_certs(certs)
    base = dict(BASE_SETTINGS, **{"zookeeper.session.timeout.ms": 6000}, **extra)
    tls = dict(base, **{
        "listener.security.protocol.map": "CLIENT:PLAINTEXT,INTERNAL:SSL",
        "inter.broker.listener.name": "INTERNAL",
        "ssl.keystore.type": "PEM", "ssl.keystore.location": str(certs / "store.pem"),
        "ssl.truststore.type": "PEM", "ssl.truststore.location": str(certs / "ca.pem")})

    def listeners(node_id: int, port: int) -> dict:  # clients on the node's port
        return {"listeners": f"CLIENT://127.0.0.1:{port},INTERNAL://127.0.0.1:{free_port()}"}

    out: dict = {"plaintext": [], "tls": []}
    with EmbeddedCluster(3, settings=base, data_dir=keep and f"{keep}/ib-plain") as pc, \
            EmbeddedCluster(3, settings=tls, data_dir=keep and f"{keep}/ib-tls",
                            node_settings=listeners) as tc:
        benches = {"plaintext": Bench(pc, tools), "tls": Bench(tc, tools)}
        for i in range(repeats):
            order = ["plaintext", "tls"] if i % 2 == 0 else ["tls", "plaintext"]
            for name in order:
                b = benches[name]
                topic = f"ib-{name}-{i}"
                leader = b.create(topic, 1, 3, 2)[0]
                os.sync()
                before = {nid: _cpu(n.pid) for nid, n in b.c.nodes.items()}
                pace = ["--rate", str(rate)] if rate > 0 else []
                r = b.loadgen("produce", topic, leader, "--size", "1024", "--acks", "all",
                              "--duration", str(duration), *PRODUCE_ARGS, *pace)
                gb = r["produce"]["bytes"] / 1e9
                followers = sum(_cpu(n.pid) - before[nid] for nid, n in b.c.nodes.items()
                                if nid != leader)
                r["followers_cpu_s_per_gb"] = followers / 2 / gb if gb else None
                log(f"    {name}: followers {r['followers_cpu_s_per_gb']:.2f} CPU s/GB each")
                out[name].append(r)
                b.delete(topic)
    return out


def summarize_interbroker(res: dict) -> dict:
    s = {}
    for name, runs in res.items():
        s[name] = {"mb_per_s": [round(r["produce"]["mb_per_s"], 1) for r in runs],
                   "p99_us": [round(r["produce"]["latency_us"]["p99"]) for r in runs],
                   "leader_cpu_s_per_gb": [round(r["broker_cpu_s_per_gb"], 2) for r in runs],
                   "follower_cpu_s_per_gb": [round(r["followers_cpu_s_per_gb"] or 0, 2)
                                             for r in runs],
                   "load": [r["load"] for r in runs]}
        s[name]["median_mb_per_s"] = med(s[name]["mb_per_s"])
        s[name]["median_leader_cpu_s_per_gb"] = med(s[name]["leader_cpu_s_per_gb"])
        s[name]["median_follower_cpu_s_per_gb"] = med(s[name]["follower_cpu_s_per_gb"])
    s["paired_ratios_tls_vs_plaintext"] = [
        round(t / p, 3) for t, p in zip(s["tls"]["mb_per_s"], s["plaintext"]["mb_per_s"])]
    s["median_ratio"] = med(s["paired_ratios_tls_vs_plaintext"])
    return s


# -- (c) failover -----------------------------------------------------------------------
class AckRecorder:
    """A confluent-kafka producer (acks=all, idempotent) sending `rate`
    msgs/s round robin over `partitions`, recording when each ack and each
    error arrives (monotonic seconds). `client_defaults`: librdkafka's own
    retry backoff (retry.backoff.ms 100 growing to retry.backoff.max.ms
    1000) instead of a fixed 50 ms, as most users run it."""

    def __init__(self, bootstrap: str, topic: str, partitions: int, rate: int,
                 client_defaults: bool = False):
        self.topic, self.partitions, self.rate = topic, partitions, rate
        conf = {"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True,
                "linger.ms": 2, "message.timeout.ms": 120000}
        if not client_defaults:
            conf["retry.backoff.ms"] = 50
        self.p = Producer(conf)
        self.acks: dict[int, list[float]] = {p: [] for p in range(partitions)}
        self.errors: list[tuple[float, int, str]] = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _report(self, err, msg):
        t = time.monotonic()
        if err is None:
            self.acks[msg.partition()].append(t)
        else:
            self.errors.append((t, msg.partition(), str(err)))

    def _run(self):
        i, t_next = 0, time.monotonic()
        step = 10 / self.rate  # bursts of 10
        while not self.stop.is_set():
            for _ in range(10):
                self.p.produce(self.topic, value=b"f-%010d" % i, partition=i % self.partitions,
                               on_delivery=self._report)
                i += 1
            t_next += step
            while True:
                self.p.poll(0)
                d = t_next - time.monotonic()
                if d <= 0:
                    break
                time.sleep(min(d, 0.002))
        self.p.flush(120)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join(150)


def outage(acks: list[float], t_sig: float, window_before: float = 1.0) -> dict:
    """The longest gap between consecutive acks from t_sig - 1 s on, and when
    the first ack after that gap came (relative to the signal)."""
    xs = sorted(t for t in acks if t >= t_sig - window_before)
    best, at = 0.0, None
    for a, c in zip(xs, xs[1:]):
        if c - a > best:
            best, at = c - a, (a, c)
    return {"gap_s": best, "gap_from_signal_s": at[0] - t_sig if at else None,
            "recovered_after_signal_s": at[1] - t_sig if at else None}


def failover(b: Bench, repeats: int, session_ms: int, rate: int,
             kinds: tuple[str, ...] = ("term", "kill"), client_defaults: bool = False) -> dict:
    """Each repeat on a fresh RF=3 topic of 3 partitions (min.insync=2) with
    a fresh producer: after a controlled shutdown and restart, the old
    topics' ISRs were seen not to take the restarted broker back (see
    docs/cluster.md, "Failover time"), which a next repeat on the same
    topic would turn into NOT_ENOUGH_REPLICAS."""
    out = {"session_timeout_ms": session_ms, "kill": [], "term": []}
    for kind in kinds:
        for i in range(repeats):
            topic = f"failover-{kind}-{i}"
            b.create(topic, 3, 3, 2)
            with AckRecorder(b.c.bootstrap_servers, topic, 3, rate, client_defaults) as rec:
                time.sleep(3)
                leader = b.c.partition_states(topic)[0].leader
                controller = b.c.controller_id()
                n_err = len(rec.errors)
                t_sig = time.monotonic()
                if kind == "kill":
                    b.c.kill(leader)
                else:
                    b.c.node(leader).signal(signal.SIGTERM)
                # Until partition 0 has been acknowledged for 2 s again.
                deadline = t_sig + session_ms / 1000 * 3 + 30
                while True:
                    a = rec.acks[0]
                    if a and a[-1] > t_sig + 0.5:
                        o = outage(a, t_sig)
                        if o["recovered_after_signal_s"] is not None and \
                                a[-1] - (t_sig + o["recovered_after_signal_s"]) > 2:
                            break
                    if time.monotonic() > deadline:
                        break
                    time.sleep(0.1)
                o = outage(rec.acks[0], t_sig)
                if kind == "term":
                    o["exit_s"] = None
                    if b.c.node(leader).wait(60) is not None:
                        o["exit_s"] = time.monotonic() - t_sig  # upper bound (polled late)
                new_leader = b.c.partition_states(topic)[0].leader
                o.update({"old_leader": leader, "new_leader": new_leader, "controller": controller,
                          "errors": len(rec.errors) - n_err, "load": load(),
                          "error_samples": sorted({e[2] for e in rec.errors[n_err:]})[:3]})
                log(f"  {kind} leader {leader} (session {session_ms} ms): partition 0 gap "
                    f"{o['gap_s']:.3f} s (from {o['gap_from_signal_s']:+.3f} s), acked again "
                    f"{o['recovered_after_signal_s']:.3f} s after the signal, controller was {controller}, new leader "
                    f"{new_leader}, {o['errors']} delivery errors")
                t_restart = time.monotonic()
                b.c.start_node(leader, timeout=session_ms / 1000 * 2 + 60)
                o["restart_joined_s"] = time.monotonic() - t_restart
                try:  # does the restarted broker get back into this topic's ISRs?
                    b.wait_isr(topic, 3, timeout=20)
                    o["isr_full_after_restart_s"] = time.monotonic() - t_restart
                except RuntimeError:
                    o["isr_full_after_restart_s"] = None
                    o["isr_after_restart"] = {p: s.isr for p, s in
                                              b.c.partition_states(topic).items()}
                    log(f"  ISR of {topic} not full 20 s after the restart: "
                        f"{o['isr_after_restart']}")
                out[kind].append(o)
            b.delete(topic)
    return out


def summarize_failover(res: dict) -> dict:
    s = {"session_timeout_ms": res["session_timeout_ms"]}
    for kind in ("kill", "term"):
        if not res[kind]:
            continue
        gaps = [r["gap_s"] for r in res[kind]]
        s[kind] = {"gaps_s": [round(g, 3) for g in gaps], "median_s": med(gaps),
                   "worst_s": max(gaps) if gaps else None,
                   "errors": [r["errors"] for r in res[kind]],
                   "load": [r["load"] for r in res[kind]]}
    return s


def _dir(args, name: str):
    return str(args.keep_dir / name) if args.keep_dir else None


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--only", default="produce,catchup,failover",
                   help="scenarios: produce, catchup, failover, and interbroker (RF=3 acks=all "
                        "with replication over TLS vs plaintext; not in the default set)")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--build-dir", type=Path, default=REPO / "build" / "bench")
    p.add_argument("--duration", type=float, default=8.0, help="produce run seconds")
    p.add_argument("--latency-rate", type=int, default=20000)
    p.add_argument("--catchup-mb", type=int, default=500)
    p.add_argument("--session-timeouts", default="6000,18000",
                   help="zookeeper.session.timeout.ms values for the failover runs")
    p.add_argument("--failover-kinds", default="term,kill",
                   help="signals for the failover runs: term (controlled shutdown), kill")
    p.add_argument("--failover-rate", type=int, default=2000, help="msgs/s of the producer")
    p.add_argument("--client-defaults", action="store_true",
                   help="failover producer with librdkafka's default retry backoff")
    p.add_argument("--interbroker-rate", type=int, default=0,
                   help="interbroker: pace the producer at N msgs/s (0 = as fast as it goes)")
    p.add_argument("--json-out", type=Path)
    p.add_argument("--cases", help="produce cases to run (default rf1_acks1,rf1_acksall,"
                   "rf3_acksall,lat_rf1_acksall,lat_rf3_acksall; also rf3_acks1)")
    p.add_argument("--broker-set", action="append", default=[], metavar="K=V",
                   help="extra broker setting for every cluster (diagnosis), repeatable")
    p.add_argument("--count-syncs", action="store_true",
                   help="perf stat the fsync-family syscalls of each broker per produce run")
    p.add_argument("--keep-dir", type=Path,
                   help="cluster data dirs (and broker logs) go here and are kept")
    args = p.parse_args(argv)
    only = {x.strip() for x in args.only.split(",")}
    # The failover runs use only Python clients: no bench build needed.
    tools = T.Tools.find(args.build_dir) if only - {"failover"} else None
    extra = dict(kv.split("=", 1) for kv in args.broker_set)
    results: dict = {"meta": {"date": time.strftime("%Y-%m-%d %H:%M"), "load_before": load(),
                              "repeats": args.repeats, "cores": os.cpu_count(),
                              "broker_set": extra}}

    def save():
        if args.json_out:
            args.json_out.write_text(json.dumps(results, indent=1))

    if only & {"produce", "catchup"}:
        settings = dict(BASE_SETTINGS, **{"zookeeper.session.timeout.ms": 6000}, **extra)
        with EmbeddedCluster(3, settings=settings, data_dir=_dir(args, "produce")) as c:
            b = Bench(c, tools)
            log(f"cluster {c.bootstrap_servers}, pids "
                f"{[n.pid for n in c.nodes.values()]}")
            if "produce" in only:
                cases = {x.strip() for x in args.cases.split(",")} if args.cases else None
                results["produce_raw"] = produce(b, args.repeats, args.duration,
                                                 args.latency_rate, cases, args.count_syncs)
                results["produce"] = summarize_produce(results["produce_raw"])
                print(json.dumps({"produce": results["produce"]}, indent=1), flush=True)
                save()
            if "catchup" in only:
                results["catchup"] = catchup(b, args.repeats, args.catchup_mb)
                rates = [r["mb_per_s"] for r in results["catchup"]]
                print(json.dumps({"catchup_mb_per_s": rates, "median": med(rates),
                                  "worst": min(rates)}), flush=True)
                save()
    if "interbroker" in only:
        raw = interbroker(tools, args.repeats, args.duration, extra, args.keep_dir,
                          args.interbroker_rate)
        results["interbroker_raw"] = raw
        results["interbroker"] = summarize_interbroker(raw)
        print(json.dumps({"interbroker": results["interbroker"]}, indent=1), flush=True)
        save()
    if "failover" in only:
        results["failover"] = []
        for st in [int(x) for x in args.session_timeouts.split(",") if x]:
            settings = dict(BASE_SETTINGS, **{"zookeeper.session.timeout.ms": st}, **extra)
            with EmbeddedCluster(3, settings=settings, data_dir=_dir(args, f"failover-{st}")) as c:
                log(f"failover cluster, session timeout {st} ms")
                raw = failover(Bench(c, tools), args.repeats, st, args.failover_rate,
                               tuple(k for k in args.failover_kinds.split(",") if k),
                               args.client_defaults)
                results["failover"].append({"raw": raw, "summary": summarize_failover(raw)})
                print(json.dumps(results["failover"][-1]["summary"]), flush=True)
                save()
    results["meta"]["load_after"] = load()
    save()
    return 0


if __name__ == "__main__":
    sys.exit(main())
