"""The ``headrace`` command line.

Every failure is one line on stderr and a non-zero exit code, never a
traceback.
"""
from __future__ import annotations

import argparse
import os
import sys

from headrace.cli.acl import add_acl_parser
from headrace.cli.cluster import add_cluster_parser
from headrace.cli.completion import add_completion_parser
from headrace.cli.config import add_config_parser
from headrace.cli.consume import add_consume_parser
from headrace.cli.group import add_group_parser
from headrace.cli.log import add_log_parser
from headrace.cli.produce import add_produce_parser
from headrace.cli.quota import add_quota_parser
from headrace.cli.topic import add_topic_parser
from headrace.cli.txn import add_txn_parser
from headrace.cli.user import add_user_parser
from headrace.errors import HeadraceError
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


def _add_broker_parser(sub: argparse._SubParsersAction) -> None:
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


class _VersionAction(argparse.Action):
    """--version: the installed package's version, looked up only when asked."""

    def __init__(self, option_strings, dest=argparse.SUPPRESS, **kw):
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kw)

    def __call__(self, parser, namespace, values, option_string=None):
        from headrace._core import __version__

        print(f"headrace {__version__}")
        parser.exit()


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="headrace", description="headrace streaming log broker")
    parser.add_argument("--version", action=_VersionAction, help="print the version and exit")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    _add_broker_parser(sub)
    add_topic_parser(sub)
    add_produce_parser(sub)
    add_consume_parser(sub)
    add_group_parser(sub)
    add_config_parser(sub)
    add_txn_parser(sub)
    add_user_parser(sub)
    add_acl_parser(sub)
    add_quota_parser(sub)
    add_log_parser(sub)
    add_cluster_parser(sub)
    add_completion_parser(sub, parser)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    from headrace.cli import interrupt

    if not getattr(args, "own_signals", False):
        interrupt.install()
    try:
        code = args.func(args)
        return interrupt.EXIT_CODE if interrupt.requested() else code
    except BrokenPipeError:
        # Output piped into e.g. `head`: stop quietly, as other tools do.
        _silence_stdout()
        return 141
    except (HeadraceError, SettingsError, OSError) as e:
        _error_line(args, str(e))
        return 2
    except KeyboardInterrupt:
        return 130
    except Exception as e:  # noqa: BLE001 - the contract is one line, never a traceback
        if os.environ.get("HEADRACE_DEBUG"):
            raise
        from headrace.admin import describe_error
        _error_line(args, describe_error(e))
        return 1


def _error_line(args: argparse.Namespace, message: str) -> None:
    """The one error line on stderr; a broker process writes it in its log
    format (timestamp, level; JSON with --log-format json) as every other
    line of it."""
    if getattr(args, "command", None) == "broker":
        import time

        from headrace import logs

        fmt = getattr(args, "log_format", None) or logs.current_format()
        print(logs.format_line(fmt, time.time(), "ERROR", "headrace", f"error: {message}"),
              file=sys.stderr)
    else:
        print(f"headrace: error: {message}", file=sys.stderr)


def _silence_stdout() -> None:
    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except OSError:
        pass


if __name__ == "__main__":
    sys.exit(main())
