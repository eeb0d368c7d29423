"""``headrace cluster up|down|restart-broker|stop-broker|info|log-dirs|...``:
a local cluster (a ZooKeeper and N broker processes, headrace.EmbeddedCluster)
and a look at any cluster, through its brokers (DescribeCluster, Metadata,
DescribeLogDirs) or its ZooKeeper.

A `cluster up` directory's ``cluster.json`` is the local cluster's state:
ZooKeeper's address and pid, and per broker its address, HTTP (console)
address, pid, log and command line. `restart-broker` / `stop-broker` act on
one broker through it (a foreground `cluster up` sees the new pid there and
keeps watching), `down` on all.

One command group in one module (~730 lines), as every group of the CLI
package has; its halves, the local cluster's lifecycle and `info`, are the
natural split when it grows further."""
from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
import time
from pathlib import Path

from headrace.cli.common import CliError, add_client_flags, admin_for, parse_pairs
from headrace.cli.output import add_format_flag, emit
from headrace import logs
from headrace.errors import HeadraceError
from headrace.stop_signals import stop_event_on_signals

STATE_FILE = "cluster.json"


def _quiet_kazoo() -> None:
    """kazoo logs a warning for every connection it closes; not for a CLI."""
    import logging

    logging.getLogger("kazoo").setLevel(logging.ERROR)


def add_cluster_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("cluster", help="run a local cluster (ZooKeeper + brokers); inspect one",
                       description="A local cluster of brokers coordinated by ZooKeeper.")
    csub = p.add_subparsers(dest="cluster_command", metavar="SUBCOMMAND")
    csub.required = True

    up = csub.add_parser("up", help="start ZooKeeper and N brokers (foreground unless --detach)")
    up.add_argument("--brokers", type=int, default=3, metavar="N",
                    help="number of brokers, node ids 1..N (default 3; see --first-node-id)")
    up.add_argument("--first-node-id", type=int, default=1, metavar="ID",
                    help="node id of the first broker: ids ID..ID+N-1 (default 1)")
    up.add_argument("--data-dir", required=True, metavar="DIR",
                    help="ZooKeeper's and every broker's data, logs, cluster.json")
    up.add_argument("--base-port", type=int, default=9092, metavar="PORT",
                    help="broker N listens on PORT+N-1 (default 9092); 0: free ports")
    up.add_argument("--zookeeper-port", type=int, default=2181, metavar="PORT",
                    help="ZooKeeper's client port (default 2181); 0: a free port")
    up.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    up.add_argument("--rack", action="append", default=[], metavar="ID=RACK",
                    help="broker.rack of broker ID (repeatable)")
    up.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="a broker setting for every broker (repeatable)")
    up.add_argument("--detach", action="store_true",
                    help="leave the cluster running and return; stop it with `cluster down`")
    up.add_argument("--http-base-port", type=int, default=0, metavar="PORT",
                    help="broker N's HTTP listener (web console, /metrics) on "
                         "127.0.0.1:PORT+N-1 (default 0: free ports, printed and kept in "
                         "cluster.json)")
    up.add_argument("--timeout", type=float, default=60.0, metavar="S",
                    help="seconds to wait for every broker to join (default 60)")
    up.set_defaults(func=_cmd_up, own_signals=True)

    for name, func, what in (("restart-broker", _cmd_restart_broker,
                              "stop one broker of a `cluster up` (SIGTERM: controlled "
                              "shutdown) if it runs, and start it again; returns once it "
                              "has joined"),
                             ("stop-broker", _cmd_stop_broker,
                              "stop one broker of a `cluster up` (SIGTERM: controlled "
                              "shutdown); the others keep running")):
        one = csub.add_parser(name, help=what, description=what[0].upper() + what[1:] + ".")
        one.add_argument("node_id", type=int, metavar="N", help="the broker's node id")
        one.add_argument("--data-dir", required=True, metavar="DIR",
                         help="the `cluster up` directory (its cluster.json)")
        one.add_argument("--timeout", type=float, default=60.0, metavar="S",
                         help="seconds to wait for the broker to stop (SIGKILL after it) "
                              "and, restarting, to join (default 60)")
        one.set_defaults(func=func)

    down = csub.add_parser("down", help="stop a cluster started with `cluster up --detach`")
    down.add_argument("--data-dir", required=True, metavar="DIR")
    down.add_argument("--timeout", type=float, default=30.0, metavar="S")
    down.set_defaults(func=_cmd_down)

    info = csub.add_parser("info", help="cluster id, controller, brokers (id, host, port, "
                                       "rack) and topic counts, from the bootstrap brokers "
                                       "(or from ZooKeeper with --zookeeper/--data-dir)")
    add_client_flags(info)
    info.add_argument("--zookeeper", metavar="HOST:PORT[/CHROOT]",
                      help="read the cluster's registrations from this ZooKeeper instead")
    info.add_argument("--data-dir", metavar="DIR",
                      help="read them from the ZooKeeper of this `cluster up` directory")
    add_format_flag(info)
    info.set_defaults(func=_cmd_info)

    dirs = csub.add_parser("log-dirs", help="every broker's log directories: volume size, "
                                           "free bytes, bytes per partition (DescribeLogDirs)")
    add_client_flags(dirs)
    dirs.add_argument("--topic", action="append", metavar="TOPIC",
                      help="only partitions of TOPIC (repeatable; default all)")
    add_format_flag(dirs)
    dirs.set_defaults(func=_cmd_log_dirs)

    move = csub.add_parser("reassign",
                           help="move partitions to other brokers (AlterPartitionReassignments); "
                                "returns once started, see `cluster reassignments`")
    add_client_flags(move)
    move.add_argument("topic")
    move.add_argument("--partition", type=int, action="append", metavar="P", required=True,
                      help="a partition (repeatable)")
    target = move.add_mutually_exclusive_group(required=True)
    target.add_argument("--replicas", metavar="ID,ID,...",
                        help="the target replicas, preferred leader first")
    target.add_argument("--cancel", action="store_true",
                        help="cancel the partitions' reassignments in progress")
    move.add_argument("--throttle", type=int, metavar="BYTES_PER_SEC",
                      help="copy the new replicas at most this fast: sets the replication "
                           "throttles (KIP-73) on the brokers and the topic; remove them with "
                           "`cluster reassignments --clear-throttle` once done")
    add_format_flag(move)
    move.set_defaults(func=_cmd_reassign)

    moving = csub.add_parser("reassignments",
                             help="the reassignments in progress (ListPartitionReassignments)")
    add_client_flags(moving)
    moving.add_argument("--clear-throttle", action="store_true",
                        help="when none is in progress, remove the replication throttles "
                             "`reassign --throttle` set (every broker's rates, every topic's "
                             "throttled-replica lists)")
    add_format_flag(moving)
    moving.set_defaults(func=_cmd_reassignments)

    elect = csub.add_parser("elect-leaders",
                            help="elect the preferred replica (or, --unclean, any live "
                                 "replica of leaderless partitions) as leader")
    add_client_flags(elect)
    elect.add_argument("topic")
    elect.add_argument("--partition", type=int, action="append", metavar="P",
                       help="a partition (repeatable; default all)")
    elect.add_argument("--unclean", action="store_true",
                       help="unclean election: may lose records the new leader lacks")
    add_format_flag(elect)
    elect.set_defaults(func=_cmd_elect_leaders)


def _cmd_up(args: argparse.Namespace) -> int:
    from headrace.embedded_cluster import EmbeddedCluster

    _quiet_kazoo()
    if args.brokers < 1:
        raise CliError("--brokers must be at least 1")
    if args.first_node_id < 0:
        raise CliError("--first-node-id must be at least 0")
    racks = {}
    for item in args.rack:
        node, sep, rack = item.partition("=")
        if not sep or not node.strip().isdigit() or not rack:
            raise CliError(f"--rack expects ID=RACK, got {item!r}")
        racks[int(node)] = rack
    data_dir = Path(args.data_dir).resolve()
    state_file = data_dir / STATE_FILE
    if state_file.exists() and _running_pids(json.loads(state_file.read_text())):
        raise CliError(f"a cluster from {data_dir} is still running (`headrace cluster down "
                       f"--data-dir {args.data_dir}`)")
    stop = stop_event_on_signals()
    cluster = EmbeddedCluster(brokers=args.brokers, settings=parse_pairs(args.set, "--set"),
                              data_dir=data_dir, host=args.host,
                              base_port=args.base_port or None,
                              zookeeper_port=args.zookeeper_port, racks=racks,
                              detach=args.detach, first_node_id=args.first_node_id,
                              http_base_port=args.http_base_port or None)
    try:
        cluster.start(timeout=args.timeout)
    except HeadraceError as e:  # its message ends with log tails: one line here
        first = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise CliError(f"{first} (logs in {data_dir})") from None
    env = {k: os.environ[k] for k in ("PYTHONPATH",) if k in os.environ}
    state = {"zookeeper": {"connect": cluster.zookeeper_connect,
                           "pid": cluster.zookeeper.proc.pid},
             "brokers": {str(i): {"address": n.address, "http": n.http_address, "pid": n.pid,
                                  "log": str(n.log_path), "command": n.command(), "env": env}
                         for i, n in cluster.nodes.items()}}
    _write_state(state_file, state)
    logs.announce(f"cluster up: {args.brokers} brokers, bootstrap {cluster.bootstrap_servers}, "
                  f"zookeeper {cluster.zookeeper_connect}, controller {cluster.controller_id()} "
                  f"(data {data_dir})")
    for i, n in cluster.nodes.items():
        console = f"console {n.http_scheme}://{n.http_address}/" if n.http_address \
            else "no HTTP listener"
        logs.announce(f"broker {i}: {n.address}, {console} (log {n.log_path})", node=i,
                      address=n.address, http=n.http_address)
    if args.detach:
        return 0
    try:
        _watch(cluster, state_file, stop, args.data_dir)
    finally:
        logs.announce("cluster stopping")
        _stop_foreground(cluster, state_file)
        state_file.unlink(missing_ok=True)
        logs.announce("cluster stopped")
    return 0


def _watch(cluster, state_file: Path, stop: threading.Event, data_dir: str) -> None:
    """Until SIGTERM/SIGINT: reports a broker that exits (the others keep
    running) and one started again by `restart-broker` (a new pid in
    cluster.json)."""
    reported: dict[str, int] = {}  # broker id -> the pid reported dead
    while not stop.wait(0.5):
        try:
            brokers = json.loads(state_file.read_text()).get("brokers", {})
        except (OSError, ValueError):
            continue
        for i, n in cluster.nodes.items():
            b = brokers.get(str(i), {})
            pid = b.get("pid")
            if n.proc is not None and n.proc.pid == pid:
                n.proc.poll()  # reaps our own child once it exited
            if pid and _alive(pid):
                if reported.pop(str(i), None) is not None:
                    logs.announce(f"broker {i} is running again (pid {pid}), console "
                                  f"http://{b.get('http')}/", node=i, pid=pid)
                continue
            if reported.get(str(i)) == pid:
                continue
            reported[str(i)] = pid
            code = n.proc.returncode if n.proc is not None and n.proc.pid == pid else None
            how = "" if code is None else \
                f" (killed by signal {-code})" if code < 0 else f" (exit code {code})"
            logs.announce(f"broker {i} exited{how}; the other brokers keep running. "
                          f"`headrace cluster restart-broker {i} --data-dir {data_dir}` "
                          f"starts it again; its log: {b.get('log')}", node=i, exit_code=code)


def _stop_foreground(cluster, state_file: Path) -> None:
    """Stops every broker (those `restart-broker` started too, by their pid
    in cluster.json), then ZooKeeper."""
    try:
        brokers = json.loads(state_file.read_text()).get("brokers", {})
    except (OSError, ValueError):
        brokers = {}
    own = {n.pid for n in cluster.nodes.values()}
    others = [b["pid"] for b in brokers.values() if b.get("pid") and b["pid"] not in own]
    for p in _terminate(others, "headrace.cli", 30):
        os.kill(p, signal.SIGKILL)
    cluster.stop_all()


def _write_state(state_file: Path, state: dict) -> None:
    """cluster.json, replaced atomically (a reader never sees half of it)."""
    tmp = state_file.with_name(state_file.name + f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(state, indent=2) + "\n")
    os.replace(tmp, state_file)


def _load_broker(args: argparse.Namespace) -> tuple[Path, dict, dict]:
    state_file = Path(args.data_dir) / STATE_FILE
    try:
        state = json.loads(state_file.read_text())
    except FileNotFoundError:
        raise CliError(f"no cluster in {args.data_dir} ({STATE_FILE} missing: start one with "
                       f"`headrace cluster up`)") from None
    except ValueError as e:
        raise CliError(f"{state_file}: {e}") from None
    b = state.get("brokers", {}).get(str(args.node_id))
    if b is None:
        ids = ", ".join(sorted(state.get("brokers", {}), key=int))
        raise CliError(f"no broker {args.node_id} in {state_file} (brokers: {ids})")
    if not b.get("command"):
        raise CliError(f"{state_file} has no command line for broker {args.node_id} (written "
                       f"by an older headrace: `cluster down` and `cluster up` again)")
    return state_file, state, b


def _stop_pid(pid: int | None, timeout: float) -> tuple[bool, float]:
    """SIGTERM (and SIGCONT) to a broker pid, waiting up to ``timeout``;
    SIGKILL after. (whether it was running, seconds it took)."""
    began = time.monotonic()
    if not pid or not _alive(pid) or not _is_ours(pid, "headrace.cli"):
        return False, 0.0
    left = _terminate([pid], "headrace.cli", timeout)
    for p in left:
        os.kill(p, signal.SIGKILL)
        logs.announce(f"pid {p} ignored SIGTERM for {timeout:g} s: killed")
    return True, time.monotonic() - began


def _cmd_stop_broker(args: argparse.Namespace) -> int:
    _, _, b = _load_broker(args)
    was, took = _stop_pid(b.get("pid"), args.timeout)
    if was:
        print(f"headrace: broker {args.node_id} stopped in {took:.1f} s; "
              f"`headrace cluster restart-broker {args.node_id} --data-dir {args.data_dir}` "
              f"starts it again")
    else:
        print(f"headrace: broker {args.node_id} was not running")
    return 0


def _cmd_restart_broker(args: argparse.Namespace) -> int:
    import subprocess

    from headrace.embedded_cluster import BrokerNode

    state_file, _, b = _load_broker(args)
    was, took = _stop_pid(b.get("pid"), args.timeout)
    log_path = Path(b["log"])
    offset = log_path.stat().st_size if log_path.exists() else 0
    env = dict(os.environ, PYTHONUNBUFFERED="1", **(b.get("env") or {}))
    with open(log_path, "ab") as out:
        proc = subprocess.Popen(b["command"], stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, env=env, start_new_session=True)
    # The new pid, in the file a foreground `cluster up` watches (re-read:
    # another command may have changed it meanwhile).
    state = json.loads(state_file.read_text())
    state["brokers"][str(args.node_id)]["pid"] = proc.pid
    _write_state(state_file, state)
    node = BrokerNode(args.node_id, Path(), "", 0, "", {})
    node.log_path, node._log_offset, node.proc = log_path, offset, proc
    deadline = time.monotonic() + args.timeout
    while not node.joined():
        if proc.poll() is not None:
            raise CliError(f"broker {args.node_id} exited with code {proc.returncode} "
                           f"(log {log_path}): {node.log_tail(1)}")
        if time.monotonic() > deadline:
            raise CliError(f"broker {args.node_id} did not join within {args.timeout:g} s "
                           f"(log {log_path}); it keeps trying (pid {proc.pid})")
        time.sleep(0.1)
    state = json.loads(state_file.read_text())
    state["brokers"][str(args.node_id)]["http"] = node.http_address
    _write_state(state_file, state)
    stopped = f"stopped in {took:.1f} s, " if was else ""
    print(f"headrace: broker {args.node_id} {stopped}started again (pid {proc.pid}), "
          f"joined; console {node.http_scheme}://{node.http_address}/")
    return 0


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie (our own child, not reaped) is not running
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _is_ours(pid: int, marker: str) -> bool:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return marker.encode() in f.read()
    except OSError:
        return False


def _running_pids(state: dict) -> list[int]:
    pids = [b["pid"] for b in state.get("brokers", {}).values() if b.get("pid")]
    pids.append(state.get("zookeeper", {}).get("pid"))
    return [p for p in pids if p and _alive(p)]


def _terminate(pids: list[int], marker: str, timeout: float) -> list[int]:
    """SIGTERM to those of ``pids`` that are ours; waits; returns the ones left."""
    mine = [p for p in pids if p and _alive(p) and _is_ours(p, marker)]
    for p in mine:
        os.kill(p, signal.SIGCONT)
        os.kill(p, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and any(_alive(p) for p in mine):
        time.sleep(0.1)
    return [p for p in mine if _alive(p)]


def _cmd_down(args: argparse.Namespace) -> int:
    state_file = Path(args.data_dir) / STATE_FILE
    try:
        state = json.loads(state_file.read_text())
    except FileNotFoundError:
        raise CliError(f"no cluster state in {args.data_dir} ({STATE_FILE} missing)") from None
    brokers = [b["pid"] for b in state.get("brokers", {}).values()]
    left = _terminate(brokers, "headrace.cli", args.timeout)
    for p in left:
        os.kill(p, signal.SIGKILL)
    zk_left = _terminate([state.get("zookeeper", {}).get("pid")], "zookeeper", 10)
    for p in zk_left:
        os.kill(p, signal.SIGKILL)
    state_file.unlink(missing_ok=True)
    print(f"headrace: cluster stopped ({len(brokers)} brokers"
          f"{', some killed after the timeout' if left else ''})")
    return 0


def _cmd_info(args: argparse.Namespace) -> int:
    doc = _info_via_zookeeper(args) if args.zookeeper or args.data_dir else \
        _info_from_brokers(args)
    return emit(args, doc, lambda: _info_table(doc))


def _info_table(doc: dict) -> None:
    from headrace.cli.cluster_health import health_lines

    print(f"cluster id   {doc['cluster_id']}")
    controller = "none" if doc["controller"] == -1 else str(doc["controller"])
    if doc.get("controller_epoch") is not None:
        controller += f" (epoch {doc['controller_epoch']})"
    if any(b["id"] == doc["controller"] for b in doc.get("down_brokers", [])):
        controller += " DOWN (a new one is elected once ZooKeeper expires its session)"
    print(f"controller   {controller}")
    down = doc.get("down_brokers", [])
    print(f"brokers      {len(doc['brokers'])}" +
          (f" ({len(down)} down: {', '.join(str(b['id']) for b in down)})" if down else ""))
    for b in doc["brokers"]:
        state = "" if b.get("status", "up") == "up" else f"  DOWN ({b.get('error')})"
        print(f"  {b['id']:<5} {b['host']}:{b['port']}  rack {b['rack'] or '-'}{state}")
    zk = doc.get("zookeeper")
    if zk:
        print(f"zookeeper    {zk['connect']} "
              f"{'up' if zk['status'] == 'up' else 'DOWN (' + str(zk.get('error')) + ')'}"
              f"{'; the brokers were asked instead' if doc.get('source') == 'brokers' else ''}")
    print(f"topics       {doc['topics']} ({doc['partitions']} partitions, "
          f"{doc['offline_partitions']} offline, {doc['under_replicated_partitions']} "
          f"under-replicated)")
    for line in health_lines(doc):
        print(line)


def _info_via_zookeeper(args: argparse.Namespace) -> dict:
    """`cluster info --zookeeper|--data-dir`: from ZooKeeper's registrations
    and partition states; when ZooKeeper does not answer (ruok) or stops
    answering, from the brokers (the `cluster up` directory's, else
    --brokers), marked so."""
    from kazoo.exceptions import KazooException
    from kazoo.handlers.threading import KazooTimeoutError

    from headrace.cli.cluster_health import zookeeper_status

    state = None
    if args.data_dir:
        try:
            state = json.loads((Path(args.data_dir) / STATE_FILE).read_text())
        except (OSError, ValueError):
            if args.zookeeper is None:
                raise CliError(f"no running cluster in {args.data_dir}") from None
    connect = args.zookeeper or (state or {}).get("zookeeper", {}).get("connect")
    if not connect:
        raise CliError(f"no ZooKeeper address in {Path(args.data_dir) / STATE_FILE}")
    why = zookeeper_status(connect)
    doc = None
    if why is None:
        try:
            doc = _info_from_zookeeper(args, connect)
        except (KazooException, KazooTimeoutError) as e:
            why = f"stopped answering ({type(e).__name__})"
    if doc is None:
        if state and state.get("brokers"):
            args.brokers = ",".join(b["address"] for b in state["brokers"].values())
        try:
            doc = _info_from_brokers(args)
        except HeadraceError as e:
            raise CliError(f"ZooKeeper at {connect}: {why}; and from the brokers: {e}") \
                from None
        doc["source"] = "brokers"
    doc["zookeeper"] = {"connect": connect, "status": "down" if why else "up", "error": why}
    # A broker of the `cluster up` directory that is neither listed nor
    # already named down (stopped, and no partition on it).
    named = {b["id"] for b in doc["brokers"]} | {b["id"] for b in doc["down_brokers"]}
    for bid, b in sorted(((int(k), v) for k, v in (state or {}).get("brokers", {}).items())):
        if bid not in named:
            running = b.get("pid") and _alive(b["pid"])
            doc["down_brokers"].append({"id": bid, "error": "not registered" + (
                "" if running else f" (its process, pid {b.get('pid')}, is not running)")})
    doc["down_brokers"].sort(key=lambda b: b["id"])
    return doc


def _info_from_zookeeper(args: argparse.Namespace, connect: str) -> dict:
    import time as _time

    from kazoo.exceptions import NoNodeError

    from headrace.cli.cluster_health import annotate, probe_brokers
    from headrace.cli.common import client_settings
    from headrace.cluster import zk_layout as L
    from headrace.cluster.zk_client import ZooKeeperWaitTimeout, bounded_client, stop_client

    _quiet_kazoo()
    budget = min(args.timeout, 3.0)  # then the brokers are asked instead
    zk = bounded_client(connect, budget)
    live = zk.start_async()
    if not live.wait(budget) or not zk.connected:
        stop_client(zk, 0.5)
        raise ZooKeeperWaitTimeout(f"no session within {budget:g} s")
    zk.handler.deadline = _time.monotonic() + budget
    partitions = []
    try:
        try:
            cluster_id = L.decode_cluster_id(zk.get(L.CLUSTER_ID)[0])
        except NoNodeError:
            raise CliError(f"no headrace/Kafka cluster at {connect} (no {L.CLUSTER_ID})") \
                from None
        try:
            controller = L.decode_controller(zk.get(L.CONTROLLER)[0])
        except NoNodeError:
            controller = -1
        try:
            epoch = L.decode_controller_epoch(zk.get(L.CONTROLLER_EPOCH)[0])
        except NoNodeError:
            epoch = 0
        ids = sorted(int(c) for c in zk.get_children(L.BROKER_IDS) if c.isdigit())
        brokers = []
        for b in ids:
            try:
                reg = L.BrokerRegistration.decode(b, zk.get(L.broker_path(b))[0])
            except NoNodeError:
                continue
            brokers.append({"id": b, "host": reg.host, "port": reg.port,
                            "rack": reg.rack or None})
        topics = sorted(zk.get_children(L.TOPICS))
        for t in topics:
            try:
                a = L.TopicAssignment.decode(t, zk.get(L.topic_path(t))[0])
            except NoNodeError:
                continue
            for p, replicas in sorted(a.partitions.items()):
                try:
                    st = L.PartitionState.decode(zk.get(L.partition_state_path(t, p))[0])
                    partitions.append((t, p, st.leader, list(replicas), list(st.isr)))
                except NoNodeError:
                    partitions.append((t, p, -1, list(replicas), []))
    finally:
        stop_client(zk, 0.5)
    doc = {"cluster_id": cluster_id, "controller": controller, "controller_epoch": epoch,
           "brokers": brokers, "topics": len(topics)}
    down = probe_brokers({b["id"]: (b["host"], b["port"]) for b in brokers},
                         client_settings(args))
    return annotate(doc, partitions, down)


def _info_from_brokers(args: argparse.Namespace) -> dict:
    from headrace.cli.cluster_health import annotate, probe_brokers
    from headrace.cli.common import client_settings

    from headrace.admin import Admin

    settings = client_settings(args)
    md = admin_for(args).metadata()
    addresses = {b.id: (b.host, b.port) for b in md.brokers.values()}
    down = probe_brokers(addresses, settings)
    # DescribeCluster (racks) goes to any broker librdkafka knows, a dead one
    # included (it then waits the whole timeout): only the live ones here,
    # briefly; without an answer Metadata's brokers are shown (no racks).
    live = ",".join(f"{h}:{p}" for b, (h, p) in sorted(addresses.items()) if not down.get(b))
    doc, partitions = _cluster_doc(Admin(live or args.brokers, timeout=min(args.timeout, 2.5),
                                         settings=settings), md)
    return annotate(doc, partitions, down)


def cluster_info(admin) -> dict:
    """The --format json document of `cluster info` from the brokers:
    DescribeCluster (racks, controller) and Metadata (partition counts).
    Also the web console's (headrace.console.data). Without the health
    probes of `cluster info` (headrace.cli.cluster_health)."""
    return _cluster_doc(admin)[0]


def _cluster_doc(admin, md=None, describe: bool = True
                 ) -> tuple[dict, list[tuple[str, int, int, list[int], list[int]]]]:
    """cluster_info's document and every partition as (topic, partition,
    leader, replicas, isr); ``md``: Metadata already fetched; ``describe``
    False: no DescribeCluster (it may wait its whole timeout on a dead
    broker), the brokers as Metadata lists them (no racks)."""
    from headrace.admin import AdminError

    md = md if md is not None else admin.metadata()
    try:
        if not describe:
            raise AdminError("DescribeCluster not asked")
        doc = admin.describe_cluster()
    except AdminError:  # a cluster without DescribeCluster: Metadata has no racks
        doc = {"cluster_id": md.cluster_id, "controller": md.controller_id,
               "brokers": [{"id": b.id, "host": b.host, "port": b.port, "rack": None}
                           for b in sorted(md.brokers.values(), key=lambda b: b.id)]}
    doc["controller_epoch"] = None
    total = offline = under = 0
    partitions = []
    for t in md.topics.values():
        for p in t.partitions.values():
            total += 1
            partitions.append((t.topic, p.id, p.leader, list(p.replicas), list(p.isrs)))
            if p.leader == -1:
                offline += 1
            elif len(p.isrs) < len(p.replicas):
                under += 1
    doc.update({"topics": len(md.topics), "partitions": total, "offline_partitions": offline,
                "under_replicated_partitions": under})
    return doc, sorted(partitions)


def _cmd_log_dirs(args: argparse.Namespace) -> int:
    dirs = admin_for(args).log_dirs(args.topic)
    doc = {"log_dirs": [{"broker": d.broker, "path": d.path, "total_bytes": d.total_bytes,
                         "usable_bytes": d.usable_bytes,
                         "partitions": [{"topic": t, "partition": p, "size_bytes": size}
                                        for (t, p), size in sorted(d.sizes.items())]}
                        for d in sorted(dirs, key=lambda d: (d.broker, d.path))]}

    def table():
        print("BROKER\tPATH\tTOTAL_BYTES\tUSABLE_BYTES\tTOPIC\tPARTITION\tSIZE")
        for d in doc["log_dirs"]:
            head = f"{d['broker']}\t{d['path']}\t{d['total_bytes']}\t{d['usable_bytes']}"
            if not d["partitions"]:
                print(f"{head}\t-\t-\t-")
            for p in d["partitions"]:
                print(f"{head}\t{p['topic']}\t{p['partition']}\t{p['size_bytes']}")

    return emit(args, doc, table)


def _cmd_elect_leaders(args: argparse.Namespace) -> int:
    """One line per partition: `topic-p elected` or `topic-p ERROR_NAME`."""
    results = admin_for(args).elect_leaders(args.topic, args.partition, args.unclean)
    failed = sum(err is not None and err != "ELECTION_NOT_NEEDED" for err in results.values())
    doc = {"topic": args.topic, "partitions": [{"partition": p, "error": err}
                                               for p, err in sorted(results.items())]}

    def table():
        for p, err in sorted(results.items()):
            print(f"{args.topic}-{p}\t{'elected' if err is None else err}")

    emit(args, doc, table)
    return 1 if failed else 0


def _cmd_reassign(args: argparse.Namespace) -> int:
    """One line per partition: `topic-p started|cancelled` or `topic-p ERROR: why`."""
    target = None
    if args.replicas is not None:
        try:
            target = [int(b) for b in args.replicas.split(",") if b.strip()]
        except ValueError:
            raise CliError(f"--replicas: broker ids separated by commas, got {args.replicas!r}")
    admin = admin_for(args)
    if args.throttle is not None:
        if target is None:
            raise CliError("--throttle: only with --replicas")
        if args.throttle <= 0:
            raise CliError(f"--throttle: a positive byte rate, got {args.throttle}")
        _set_throttle(admin, args.topic, {p: target for p in args.partition}, args.throttle)
    results = admin.reassign({(args.topic, p): target for p in args.partition})
    done = "cancelled" if target is None else "started"
    doc = {"topic": args.topic, "replicas": target,
           "partitions": [{"partition": p, "error": err}
                          for (_, p), err in sorted(results.items())]}

    def table():
        for (t, p), err in sorted(results.items()):
            print(f"{t}-{p}\t{done if err is None else err}")

    emit(args, doc, table)
    return 1 if any(err is not None for err in results.values()) else 0


_RATES = ("leader.replication.throttled.rate", "follower.replication.throttled.rate")
_LISTS = ("leader.replication.throttled.replicas", "follower.replication.throttled.replicas")


def _set_throttle(admin, topic: str, targets: dict[int, list[int]], rate: int) -> None:
    """As Kafka's reassignment tool: the rate on every broker involved; the
    current replicas throttled as leaders, the new ones as followers
    (docs/cluster.md, "Replication throttles")."""
    current = {p.id: list(p.replicas) for p in admin.topic_metadata(topic).partitions.values()}
    leaders, followers, brokers = set(), set(), set()
    for p, target in targets.items():
        if p not in current:
            raise CliError(f"--partition {p}: {topic} has no such partition")
        leaders |= {f"{p}:{b}" for b in current[p]}
        followers |= {f"{p}:{b}" for b in target if b not in current[p]}
        brokers |= set(current[p]) | set(target)
    for b in sorted(brokers):
        admin.alter_broker_config(b, {k: str(rate) for k in _RATES})
    config = admin.topic_config(topic)
    merged = {}
    for key, add in zip(_LISTS, (leaders, followers)):
        old = config[key].value if key in config and config[key].value else ""
        if old == "*":
            continue
        have = set(filter(None, old.split(",")))
        merged[key] = ",".join(sorted(have | add))
    if merged:
        admin.alter_topic_config(topic, merged)


def _clear_throttle(admin) -> None:
    for node_id in sorted(admin.metadata().brokers):
        admin.alter_broker_config(node_id, {}, delete=_RATES)
    for topic in admin.topics():
        config = admin.topic_config(topic)
        if any(k in config and config[k].value for k in _LISTS):
            admin.alter_topic_config(topic, {}, delete=_LISTS)


def _cmd_reassignments(args: argparse.Namespace) -> int:
    admin = admin_for(args)
    ongoing = admin.reassignments()
    if args.clear_throttle:
        if ongoing:
            raise CliError(f"--clear-throttle: {len(ongoing)} reassignment(s) still in "
                           "progress; the throttles stay")
        _clear_throttle(admin)
        print("replication throttles removed", file=sys.stderr)
    doc = {"reassignments": [{"topic": t, "partition": p, "replicas": rs, "adding": add,
                              "removing": rem}
                             for (t, p), (rs, add, rem) in sorted(ongoing.items())]}

    def table():
        if not ongoing:
            print("no reassignment in progress")
        for (t, p), (rs, add, rem) in sorted(ongoing.items()):
            print(f"{t}-{p}\treplicas {rs}\tadding {add}\tremoving {rem}")

    emit(args, doc, table)
    return 0
