#!/usr/bin/env python3
"""TLS against plaintext on one broker (docs/performance.md "TLS").

Starts `headrace broker` (installed package) with a PLAINTEXT and an SSL
listener (certificates made with the `openssl` CLI in a temp dir), then,
with the native load generator (headrace-loadgen, librdkafka), per repeat
and interleaved between the two listeners:

  fetch    FETCH_MB of 16 KiB records (written once) read back from the page
           cache by one consumer asking up to 16 MiB per fetch;
  produce  1 KiB records, acks=1, linger 5 ms, for --duration seconds;

and the handshake rate: `openssl s_time -new` (a full handshake per
connection, TLS 1.3, P-256 key) for --duration seconds.

Reports MB/s, the broker's CPU seconds per GB (what the broker spends) and
the TLS/plaintext ratios. The broker logs which TLS send path it uses
(kTLS or OpenSSL copy); it is printed with the results.

    bench/tls_bench.py --build-dir build/bench --repeats 3 --json-out r.json
"""
from __future__ import annotations

import argparse
import json
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))
sys.path.insert(0, str(REPO / "tests"))
from suite.broker import SuiteBroker  # noqa: E402
from test_security_tls import free_port, make_ca, make_cert  # noqa: E402  (reused)

BIG_BATCH = ["--batch-size", "1040000", "--linger-ms", "50",
             "--pset", "message.max.bytes=2000000"]
BIG_FETCH = ["--cset", "max.partition.fetch.bytes=16777216", "--cset", "fetch.max.bytes=52428800"]


def make_certs(d: Path) -> None:
    make_ca(d, "ca")
    make_cert(d, "ca", "broker", "/CN=localhost", "IP:127.0.0.1,DNS:localhost")
    (d / "broker-store.pem").write_text((d / "broker.key").read_text() +
                                        (d / "broker.pem").read_text())


def loadgen(exe: Path, mode: str, bootstrap: str, topic: str, pid: int, tls: str | None,
            *args: str) -> dict:
    sec = []
    if tls:
        flag = "--pset" if mode == "produce" else "--cset"
        sec = [flag, "security.protocol=SSL", flag, f"ssl.ca.location={tls}"]
    cmd = [str(exe), mode, "--bootstrap", bootstrap, "--topic", topic, "--broker-pid", str(pid),
           "--json", *sec, *args]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    lines = [l for l in out.stdout.splitlines() if l.startswith("{")]
    if not lines:
        raise SystemExit(f"loadgen failed: {out.stderr[-2000:]}")
    return json.loads(lines[-1])


def handshakes(port: int, ca: Path, seconds: int) -> float:
    out = subprocess.run(["openssl", "s_time", "-connect", f"127.0.0.1:{port}", "-new",
                          "-time", str(seconds), "-CAfile", str(ca)],
                         capture_output=True, text=True, timeout=seconds + 60).stdout
    m = re.search(r"(\d+) connections in ([\d.]+)s; ([\d.]+) connections/user sec", out)
    if not m:
        raise SystemExit(f"s_time output not understood:\n{out}")
    return int(m[1]) / seconds  # per wall-clock second


def create_topic(bootstrap: str, name: str) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for f in admin.create_topics([NewTopic(name, 1, 1)]).values():
        f.result(60)


def mbps(r: dict) -> float:
    flow = r.get("consume") or r.get("produce")
    if flow.get("errors"):
        raise SystemExit(f"loadgen reported errors: {flow}")
    return flow["mb_per_s"]


def cpu_per_gb(r: dict) -> float:
    return r["broker_cpu_s_per_gb"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build-dir", default=str(REPO / "build/bench"))
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--fetch-mb", type=int, default=500)
    ap.add_argument("--duration", type=int, default=8)
    ap.add_argument("--json-out")
    a = ap.parse_args()
    exe = Path(a.build_dir) / "bench" / "headrace-loadgen"
    with tempfile.TemporaryDirectory(prefix="tls-bench-") as tmp:
        tmp = Path(tmp)
        make_certs(tmp)
        plain, tls_port = free_port(), free_port()
        b = SuiteBroker(tmp / "data",
                        "--set", f"ssl.keystore.type=PEM",
                        "--set", f"ssl.keystore.location={tmp / 'broker-store.pem'}")
        b.listen = f"PLAINTEXT://127.0.0.1:{plain},SSL://127.0.0.1:{tls_port}"
        b.start()
        try:
            path = [l for l in b.stderr.splitlines() if "listener SSL" in l]
            print("broker:", path[0].split("] ", 1)[-1] if path else "?")
            listeners = {"plaintext": (f"127.0.0.1:{plain}", None),
                         "tls": (f"127.0.0.1:{tls_port}", str(tmp / "ca.pem"))}
            create_topic(listeners["plaintext"][0], "fetch")
            count = a.fetch_mb * 1_000_000 // 16384
            loadgen(exe, "produce", listeners["plaintext"][0], "fetch", b.pid, None,
                    "--size", "16384", "--count", str(count), "--acks", "1", *BIG_BATCH)
            res: dict[str, dict[str, list]] = {k: {"fetch": [], "produce": []} for k in listeners}
            for i in range(a.repeats):
                for name, (boot, ca) in listeners.items():
                    r = loadgen(exe, "consume", boot, "fetch", b.pid, ca, "--partitions", "1",
                                *BIG_FETCH)
                    res[name]["fetch"].append(r)
                    topic = f"produce-{name}-{i}"
                    create_topic(listeners["plaintext"][0], topic)
                    p = loadgen(exe, "produce", boot, topic, b.pid, ca, "--size", "1024",
                                "--acks", "1", "--duration", str(a.duration))
                    res[name]["produce"].append(p)
                    print(f"  {i} {name}: fetch {mbps(r):.0f} MB/s "
                          f"({cpu_per_gb(r):.2f} CPU s/GB), produce {mbps(p):.0f} MB/s "
                          f"({cpu_per_gb(p):.2f} CPU s/GB)", flush=True)
            hs = [handshakes(tls_port, tmp / "ca.pem", a.duration) for _ in range(a.repeats)]
        finally:
            b.stop()
    med = lambda xs: statistics.median(xs)  # noqa: E731
    rows = {}
    for name in res:
        rows[name] = {k: (med([mbps(r) for r in res[name][k]]),
                          med([cpu_per_gb(r) for r in res[name][k]])) for k in ("fetch", "produce")}
    print("\n| | plaintext MB/s | TLS MB/s | TLS / plaintext | plaintext CPU s/GB | TLS CPU s/GB |")
    print("|---|---|---|---|---|---|")
    for k in ("fetch", "produce"):
        (pm, pc), (tm, tc) = rows["plaintext"][k], rows["tls"][k]
        print(f"| {k} | {pm:,.0f} | {tm:,.0f} | {tm / pm:.2f} | {pc:.2f} | {tc:.2f} |")
    print(f"\nhandshakes/s (openssl s_time -new, one client): {med(hs):,.0f} "
          f"(runs {', '.join(f'{h:,.0f}' for h in hs)})")
    if a.json_out:
        Path(a.json_out).write_text(json.dumps({"runs": res, "handshakes_per_s": hs}, indent=1))


if __name__ == "__main__":
    main()
