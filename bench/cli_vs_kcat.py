"""Produce and consume N short lines with `headrace` and with kcat against
one broker, and print the wall times and ratios.

    python bench/cli_vs_kcat.py --brokers HOST:PORT [--lines 1000000]

Without --brokers a broker is started in a temporary directory (and stopped).
Each tool produces the same file into its own fresh topic (1 partition,
acks=all) and then consumes that topic from the beginning to the end
(kcat -e; headrace consume stops at the end by default), output to
/dev/null. The figures are the wall time of the whole command, start-up
included, and its CPU time (user + sys, all threads): on a loaded machine
the wall time mostly measures the wait for a core, the CPU time does not.
A bench, not a test: it asserts only that every line arrived.
"""
from __future__ import annotations

import argparse
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
import uuid


def _cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def _run(argv: list[str], stdin=None) -> tuple[float, float, int]:
    """(wall s, cpu s, lines on stdout) of one command."""
    c0, t0 = _cpu(), time.monotonic()
    r = subprocess.run(argv, stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    took, cpu = time.monotonic() - t0, _cpu() - c0
    if r.returncode != 0:
        sys.exit(f"{argv[0]} failed ({r.returncode}): {r.stderr.decode()[-500:]}")
    return took, cpu, r.stdout.count(b"\n")


def _line(what: str, k: tuple, h: tuple) -> str:
    return (f"  {what:8s} kcat {k[0]:5.2f}s wall {k[1]:5.2f}s cpu   headrace {h[0]:5.2f}s wall "
            f"{h[1]:5.2f}s cpu   ratio wall {h[0] / k[0]:4.2f} cpu {h[1] / k[1]:4.2f}")


def _start_broker(data: str) -> tuple[subprocess.Popen, str]:
    p = subprocess.Popen([sys.executable, "-m", "headrace.cli", "broker", "--data-dir", data,
                          "--listen", "127.0.0.1:0"], stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, text=True)
    for line in p.stdout:
        m = re.search(r"\bheadrace: listening on (\S+) ", line)
        if m:
            return p, m.group(1)
    sys.exit("broker did not start")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--brokers")
    ap.add_argument("--lines", type=int, default=1_000_000)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--headrace", default=shutil.which("headrace") or "headrace")
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="cli-vs-kcat-")
    broker = None
    try:
        brokers = args.brokers
        if not brokers:
            broker, brokers = _start_broker(os.path.join(tmp, "data"))
        src = os.path.join(tmp, "lines.txt")
        with open(src, "w") as f:
            f.writelines(f"line-{i:08d}\n" for i in range(args.lines))
        hr = [args.headrace]
        for r in range(args.rounds):
            tk, th = f"bench-kcat-{uuid.uuid4().hex[:8]}", f"bench-hr-{uuid.uuid4().hex[:8]}"
            for t in (tk, th):
                subprocess.run(hr + ["topic", "create", t, "--brokers", brokers], check=True,
                               stdout=subprocess.DEVNULL)
            with open(src, "rb") as f:
                kp = _run(["kcat", "-b", brokers, "-P", "-t", tk, "-X", "acks=all"], stdin=f)
            with open(src, "rb") as f:
                hp = _run(hr + ["produce", th, "--brokers", brokers], stdin=f)
            kc = _run(["kcat", "-b", brokers, "-C", "-t", tk, "-e", "-q", "-o", "beginning"])
            hc = _run(hr + ["consume", th, "--brokers", brokers])
            if kc[2] != args.lines or hc[2] != args.lines:
                sys.exit(f"lines consumed: kcat {kc[2]}, headrace {hc[2]}, "
                         f"expected {args.lines}")
            load = os.getloadavg()[0]
            print(f"round {r + 1}: {args.lines} lines (load average {load:.1f})", flush=True)
            print(_line("produce", kp, hp))
            print(_line("consume", kc, hc), flush=True)
            for t in (tk, th):
                subprocess.run(hr + ["topic", "delete", t, "--brokers", brokers],
                               stdout=subprocess.DEVNULL)
    finally:
        if broker is not None:
            broker.terminate()
            broker.wait(30)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
