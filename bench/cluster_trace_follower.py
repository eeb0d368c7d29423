#!/usr/bin/env python3
"""Where an RF=3 acks=all follower spends its time: a 3-broker
EmbeddedCluster, one RF=3 topic (min.insync.replicas=2), headrace-loadgen
producing 1 KiB acks=all (the suite's produce case) for 8 s, and
`perf trace -s` (per-thread syscall summary, tracepoints) of one follower
and of the leader for 5 s in the middle of it.

    bench/cluster_trace_follower.py [--build-dir build/bench] [--out DIR]

Writes DIR/trace-<node>-follower.txt and DIR/trace-<node>-leader.txt
(default DIR: the current directory) and prints the load generator's JSON.
The replica fetcher thread is the one named `python3` with most events.
"""
from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

from cluster_bench import BASE_SETTINGS, Bench  # noqa: E402
from headrace import EmbeddedCluster  # noqa: E402
from suite import tools as T  # noqa: E402


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--build-dir", type=Path, default=BENCH.parent / "build" / "bench")
    p.add_argument("--out", type=Path, default=Path("."))
    args = p.parse_args()
    tools = T.Tools.find(args.build_dir)
    args.out.mkdir(parents=True, exist_ok=True)
    settings = dict(BASE_SETTINGS, **{"zookeeper.session.timeout.ms": 6000})
    with EmbeddedCluster(3, settings=settings) as c:
        b = Bench(c, tools)
        leader = b.create("tr", 1, 3, 2)[0]
        follower = next(n for n in c.partition_states("tr")[0].isr if n != leader)
        lg = subprocess.Popen([str(tools.loadgen), "produce", "--bootstrap", c.bootstrap_servers,
                               "--topic", "tr", "--size", "1024", "--acks", "all",
                               "--duration", "8", "--linger-ms", "5", "--batch-size", "1000000",
                               "--json"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                              text=True)
        time.sleep(2)
        procs = []
        for nid, role in ((follower, "follower"), (leader, "leader")):
            out = args.out / f"trace-{nid}-{role}.txt"
            procs.append(subprocess.Popen(["perf", "trace", "-s", "-p", str(c.node(nid).pid),
                                           "-o", str(out)],
                                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        time.sleep(5)
        for pr in procs:
            pr.send_signal(signal.SIGINT)
            pr.wait(30)
        print(lg.communicate()[0].strip())
        print(f"leader {leader}, follower {follower}, load {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
