"""``headrace broker``: run a broker in the foreground (headrace.broker),
with the settings of a config file (Kafka's server.properties or TOML), the
environment and these flags (headrace.settings.gather), until SIGTERM/SIGINT.
"""
from __future__ import annotations

import argparse

from headrace.settings import SettingsError, gather

# Flags of `headrace broker` and the broker config key each one sets.
BROKER_FLAGS = {
    "data_dir": "log.dirs",
    "listen": "listeners",
    "advertise": "advertised.listeners",
    "node_id": "node.id",
    "num_partitions": "num.partitions",
    "flush_messages": "log.flush.interval.messages",
    "flush_ms": "log.flush.interval.ms",
    "io_threads": "num.io.threads",
    "zookeeper": "zookeeper.connect",
    "rack": "broker.rack",
    "http": "headrace.http.listen",
    "log_format": "headrace.log.format",
}


def add_broker_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("broker", help="run a broker in the foreground",
                       description="Run a headrace broker until SIGTERM/SIGINT.")
    p.add_argument("--config", metavar="FILE",
                   help="config file: Kafka's server.properties (Java properties) or TOML, "
                        "Kafka broker key names; flags override it")
    p.add_argument("--data-dir", metavar="DIR", help="where logs and metadata live (log.dirs)")
    p.add_argument("--listen", metavar="HOST:PORT",
                   help="address(es) to listen on (listeners): HOST:PORT or a comma-separated "
                        "list of PLAINTEXT://HOST:PORT (default 127.0.0.1:9092)")
    p.add_argument("--advertise", metavar="HOST:PORT", help="address clients are told to use")
    p.add_argument("--node-id", type=int, metavar="N", help="broker id (node.id, default 0)")
    p.add_argument("--num-partitions", type=int, metavar="N",
                   help="partitions of auto-created topics (num.partitions, default 1)")
    p.add_argument("--flush-messages", type=int, metavar="N",
                   help="fsync after N messages (log.flush.interval.messages)")
    p.add_argument("--flush-ms", type=int, metavar="MS",
                   help="fsync at least every MS milliseconds (log.flush.interval.ms)")
    p.add_argument("--io-threads", type=int, metavar="N", help="network I/O threads (default: cores)")
    p.add_argument("--zookeeper", metavar="HOST:PORT[,...][/CHROOT]",
                   help="join the cluster coordinated by this ZooKeeper (zookeeper.connect); "
                        "without it the broker is a single node")
    p.add_argument("--rack", metavar="RACK", help="this broker's rack (broker.rack)")
    p.add_argument("--http", metavar="HOST:PORT",
                   help="serve /metrics, /healthz and /readyz here (headrace.http.listen, "
                        "default 127.0.0.1:9644; '' = off)")
    p.add_argument("--log-format", choices=("text", "json"),
                   help="log lines as text (default) or one JSON object per line "
                        "(headrace.log.format)")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="any broker setting, e.g. --set log.retention.ms=60000 (repeatable)")
    p.set_defaults(func=_cmd_broker, own_signals=True)


def _cmd_broker(args: argparse.Namespace) -> int:
    from headrace.broker import run_broker

    flags = {key: getattr(args, attr) for attr, key in BROKER_FLAGS.items()}
    for item in args.set:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise SettingsError(f"--set expects KEY=VALUE, got {item!r}")
        flags[key.strip()] = value
    # The log format before anything logs (gathering validates through the
    # core, which may log): the flag (--log-format or --set), else the
    # environment; run_broker settles it with the config file too.
    from headrace import logs
    try:
        logs.configure(logs.resolve(flags.get("headrace.log.format")))
    except ValueError as e:
        raise SettingsError(str(e)) from None
    return run_broker(gather(args.config, flags))
