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

import logging
import resource
import threading
import time

from headrace import logs
from headrace.stop_signals import stop_event_on_signals
from headrace.settings import Settings, SettingsError, settings_for_core

log = logging.getLogger("headrace")

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

    try:
        fmt = logs.resolve(None, settings.values)
    except ValueError as e:
        raise SettingsError(str(e)) from None
    logs.configure(fmt)
    for warning in settings.warnings:
        log.warning(warning)
    for key, warning in zip(settings.unknown, settings.unknown_warnings()):
        logs.event(log, warning, logging.WARNING, event="unknown_setting", setting=key,
                   source=settings.unknown[key])
    if settings.unimplemented:
        logs.event(log, f"ignoring {len(settings.unimplemented)} Kafka setting(s) headrace does "
                        f"not implement: {', '.join(sorted(settings.unimplemented))}",
                   logging.WARNING, event="unimplemented_settings",
                   settings=sorted(settings.unimplemented))
    raise_open_files_limit()
    cluster_mode = bool(settings.values.get("zookeeper.connect"))
    # PKCS12 key / trust stores reach the core (PEM only) as inline PEM; a
    # JKS store is refused here, naming the conversion.
    from headrace.keystores import convert_stores

    core_values, notes = convert_stores(settings.values)
    _log_startup_summary(settings)
    for note in notes:
        log.info(note)
    broker = Broker(settings_for_core(core_values))
    stop = stop_event_on_signals()
    member = None
    joined = threading.Event()
    # Bound before the broker starts: an HTTP address in use fails at once,
    # before any recovery work (/readyz answers 503 until start returns).
    http = _start_http(broker, cluster_mode, lambda: member, joined, core_values)
    try:
        broker.start()
    except BaseException:
        if http is not None:
            http.stop()
        raise
    logs.announce(f"listening on {broker.listen_address} "
                  f"(advertised {broker.advertised_address}, node {broker.node_id}, "
                  f"data {broker.data_dir}, {broker.network_backend})",
                  listener=broker.listen_address, advertised=broker.advertised_address,
                  node=broker.node_id, data_dir=broker.data_dir,
                  backend=broker.network_backend)
    if http is not None:
        scheme = "https" if http.ssl_context is not None else "http"
        logs.announce(f"http on {http.address} ({scheme}; /metrics, /healthz, /readyz, "
                      f"console /, schema registry /subjects)", http=http.address,
                      scheme=scheme)
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
                log.info("stopped")
                return 0
            raise
        joined.set()
        logs.announce(f"joined cluster {member.cluster_id} as broker {member.broker_id} "
                      f"(zookeeper {member.connect})", cluster_id=member.cluster_id,
                      node=member.broker_id, zookeeper=member.connect)
    while not stop.wait(0.2):
        pass
    began = time.monotonic()
    log.info("shutting down")
    if member is not None:
        # Controlled shutdown first, while the broker still serves; bounded
        # whatever ZooKeeper does (headrace.cluster.member.CLOSE_TIMEOUT_S),
        # leaving the rest of the 5 s to the local stop.
        member.close()
    if http is not None:
        http.stop()
    broker.stop()  # stops accepting, finishes in-flight requests, flushes the logs
    logs.event(log, "stopped", event="stopped", seconds=round(time.monotonic() - began, 3))
    return 0


def _start_http(broker, cluster_mode: bool, member, joined: threading.Event,
                values=None):
    """The HTTP listener of headrace.http.listen (None when it is ""), with
    /readyz also requiring, in cluster mode, registration as a member and a
    connected ZooKeeper session, and the web console (HTTPS and a login as
    ``values``, the broker's settings, say: headrace.console.auth). Raises
    HeadraceError (one line) when it cannot listen."""
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

    def zookeeper() -> str:
        """Why this broker has no ZooKeeper session ("" if it has one)."""
        m = member()
        if not cluster_mode or m is None or not joined.is_set():
            return ""
        if m.zk is None or not m.zk.connected:
            return f"broker {broker.node_id} has no ZooKeeper session (ZooKeeper down, " \
                   f"paused or unreachable): the cluster's metadata may be stale"
        return ""

    from headrace.console import add_console_routes
    from headrace.console.auth import ConsoleAuth, is_loopback

    auth = ConsoleAuth(values if values is not None else {},
                       lambda: broker.advertised_endpoints, authorize=broker.authorize)
    server = HttpServer(address, ssl_context=auth.https)
    add_broker_routes(server, broker, membership)
    add_console_routes(server, broker, auth, zookeeper)  # the web console at / (docs/console.md)
    from headrace.registry import add_registry_routes

    def member_zk():
        m = member()
        return m.zk if m is not None and joined.is_set() else None

    # The schema registry's REST API (docs/schema-registry.md).
    add_registry_routes(server, broker, auth, member_zk, values if values is not None else {})
    if auth.password_login:
        log.info("web console: login with the SASL users of listener %s (mechanisms %s)%s",
                 auth.listener, ",".join(auth.mechanisms()),
                 "; HTTPS with the broker's key store" if auth.https else "")
    if auth.cert_listener is not None:
        log.info("web console: login with a client certificate that listener %s's trust "
                 "store verifies; reads as that principal through the authorizer",
                 auth.cert_listener)
    if not auth.login_required and not is_loopback(address):
        log.warning("*** WEB CONSOLE WITHOUT LOGIN ON A NETWORK ADDRESS: headrace.http.listen=%s "
                    "is not loopback and the broker has no SASL listener, so anyone who reaches "
                    "%s reads every topic's records that an unauthenticated Kafka client may "
                    "read. Add a SASL listener (the console then asks for its users), bind to "
                    "127.0.0.1, or set headrace.http.listen=\"\" (docs/console.md) ***",
                    address, address)
    return server.start()


_SECRET_WORDS = ("password", "secret", "jaas", "credential", "key")


def _shown(name: str, value: str) -> str:
    """A setting's value for the log: secrets (passwords, keys, JAAS) hidden."""
    lowered = name.lower()
    if value and any(w in lowered for w in _SECRET_WORDS) and not lowered.endswith(
            (".type", ".algorithm", ".location")):
        return "[hidden]"
    return value


def _log_startup_summary(settings: Settings) -> None:
    """One INFO line before the core starts: listeners, data dirs, node id and
    every setting that differs from its default, with where it was set."""
    from headrace.settings import effective

    rows = effective(settings)
    by_name = {r.name: r for r in rows}
    changed = {r.name: _shown(r.name, r.value) for r in rows
               if r.source != "default" and r.value != r.default}
    sources = sorted({r.source for r in rows if r.name in changed})
    listeners = by_name["listeners"].value if "listeners" in by_name else ""
    dirs = by_name["log.dirs"].value if "log.dirs" in by_name else ""
    node = by_name["node.id"].value if "node.id" in by_name else ""
    text = ", ".join(f"{k}={v}" for k, v in sorted(changed.items())) or "none"
    logs.event(log, f"starting node {node}: listeners {listeners}, log.dirs {dirs}; "
                    f"{len(changed)} non-default settings ({'; '.join(sources) or 'none'}): "
                    f"{text}",
               event="startup", node=node, listeners=listeners, log_dirs=dirs,
               settings=changed, sources=sources)
