"""Running a broker from Python: the `headrace broker` command.

The C++ broker (headrace._core.Broker) owns the network threads and the data
path; Python only starts it, waits for a signal and stops it. The data path
never takes the GIL. An HTTP listener (``headrace.http.listen``,
headrace.http_server) serves /metrics, /healthz, /readyz and the web
console (headrace.console) from this process. With ``zookeeper.connect``
set the broker is a member of a cluster: a ClusterMember
(headrace.cluster.member) runs next to it, and on SIGTERM it first hands
its leaderships over (controlled shutdown).
"""
from __future__ import annotations

import resource
import signal
import sys
import threading

from headrace.settings import Settings, settings_for_core

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
    cluster_mode = bool(settings.values.get("zookeeper.connect"))
    if cluster_mode:
        _log_to_stderr()
    broker = Broker(settings_for_core(settings.values))
    stop = threading.Event()

    def _on_signal(signum, frame):  # runs in the main thread
        stop.set()

    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, _on_signal)
    member = None
    joined = threading.Event()
    # Bound before the broker starts: an HTTP address in use fails at once,
    # before any recovery work (/readyz answers 503 until start returns).
    http = _start_http(broker, cluster_mode, lambda: member, joined)
    try:
        broker.start()
    except BaseException:
        if http is not None:
            http.stop()
        raise
    print(f"headrace: listening on {broker.listen_address} "
          f"(advertised {broker.advertised_address}, node {broker.node_id}, "
          f"data {broker.data_dir}, {broker.network_backend})", flush=True)
    if http is not None:
        print(f"headrace: http on {http.address} (/metrics, /healthz, /readyz)", flush=True)
    if cluster_mode:
        from headrace.cluster.member import ClusterMember

        member = ClusterMember(broker, settings.values)
        try:
            member.start(cancel=stop)
        except BaseException:
            member.close(controlled_shutdown=False)
            if http is not None:
                http.stop()
            broker.stop()
            if stop.is_set():  # SIGTERM/SIGINT while joining: a clean exit
                print("headrace: stopped", file=sys.stderr, flush=True)
                return 0
            raise
        joined.set()
        print(f"headrace: joined cluster {member.cluster_id} as broker {member.broker_id} "
              f"(zookeeper {member.connect})", flush=True)
    while not stop.wait(0.5):
        pass
    print("headrace: shutting down", file=sys.stderr, flush=True)
    if member is not None:
        member.close()  # controlled shutdown first, while the broker still serves
    if http is not None:
        http.stop()
    broker.stop()
    print("headrace: stopped", file=sys.stderr, flush=True)
    return 0


def _start_http(broker, cluster_mode: bool, member, joined: threading.Event):
    """The HTTP listener of headrace.http.listen (None when it is ""), with
    /readyz also requiring, in cluster mode, registration as a member and a
    connected ZooKeeper session. Raises HeadraceError (one line) when it
    cannot listen."""
    from headrace.http_server import HttpServer, add_broker_routes

    address = broker.http_listen
    if not address:
        return None

    def membership() -> str:
        if not cluster_mode:
            return ""
        m = member()
        if m is None or not joined.is_set():
            return "not registered as a cluster member yet"
        if m.zk is None or not m.zk.connected:
            return "not connected to ZooKeeper"
        return ""

    from headrace.console import add_console_routes

    server = HttpServer(address)
    add_broker_routes(server, broker, membership)
    add_console_routes(server, broker)  # the web console at / (docs/console.md)
    return server.start()


def _log_to_stderr() -> None:
    """The control plane's log lines (headrace.cluster.*) on stderr, as the
    C++ core's; kazoo's own only from warnings up."""
    import logging
    import time

    handler = logging.StreamHandler(sys.stderr)
    fmt = logging.Formatter("%(asctime)s.%(msecs)03dZ %(levelname)s %(name)s: %(message)s",
                            datefmt="%Y-%m-%dT%H:%M:%S")
    fmt.converter = time.gmtime  # as the C++ core's lines: UTC, ISO 8601
    handler.setFormatter(fmt)
    root = logging.getLogger()
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    logging.getLogger("kazoo").setLevel(logging.WARNING)
