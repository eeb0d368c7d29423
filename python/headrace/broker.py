"""Running a broker from Python: the `headrace broker` command.

The C++ broker (headrace._core.Broker) owns the network threads and the data
path; Python only starts it, waits for a signal and stops it. The data path
never takes the GIL.
"""
from __future__ import annotations

import resource
import signal
import sys
import threading

from headrace.settings import Settings


def raise_open_files_limit() -> int:
    """Raises this process's RLIMIT_NOFILE soft limit to its hard limit (as
    Kafka's start scripts do: each partition holds a .log file descriptor
    per segment). Returns the soft limit now in force; never fails."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = hard
    if hard == resource.RLIM_INFINITY:
        # The kernel refuses an unlimited soft limit; its ceiling is nr_open.
        try:
            with open("/proc/sys/fs/nr_open") as f:
                target = int(f.read())
        except (OSError, ValueError):
            target = 1 << 20
    if soft != resource.RLIM_INFINITY and soft < target:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            soft = target
        except (ValueError, OSError):
            pass
    return soft


def run_broker(settings: Settings) -> int:
    """Starts a broker with `settings`, serves until SIGTERM/SIGINT, then
    shuts down cleanly (stop accepting, finish in-flight requests, flush
    logs). Returns the process exit code."""
    from headrace._core import Broker

    raise_open_files_limit()
    broker = Broker(settings.values)
    stop = threading.Event()

    def _on_signal(signum, frame):  # runs in the main thread
        stop.set()

    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, _on_signal)
    broker.start()
    print(f"headrace: listening on {broker.listen_address} "
          f"(advertised {broker.advertised_address}, node {broker.node_id}, "
          f"data {broker.data_dir}, {broker.network_backend})", flush=True)
    while not stop.wait(0.5):
        pass
    print("headrace: shutting down", file=sys.stderr, flush=True)
    broker.stop()
    print("headrace: stopped", file=sys.stderr, flush=True)
    return 0
