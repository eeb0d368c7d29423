"""The ``headrace`` command line: the root parser (one subcommand per
module of headrace.cli) and :func:`main`.

Every failure is one line on stderr and a non-zero exit code, never a
traceback.
"""
from __future__ import annotations

import argparse
import os
import sys

from headrace.cli.acl import add_acl_parser
from headrace.cli.broker import add_broker_parser
from headrace.cli.cluster import add_cluster_parser
from headrace.cli.completion import add_completion_parser
from headrace.cli.config import add_config_parser
from headrace.cli.consume import add_consume_parser
from headrace.cli.group import add_group_parser
from headrace.cli.share_group import add_share_group_parser
from headrace.cli.log import add_log_parser
from headrace.cli.produce import add_produce_parser
from headrace.cli.quota import add_quota_parser
from headrace.cli.registry import add_registry_parser
from headrace.cli.topic import add_topic_parser
from headrace.cli.txn import add_txn_parser
from headrace.cli.user import add_user_parser
from headrace.errors import HeadraceError
from headrace.settings import SettingsError


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
    add_broker_parser(sub)
    add_topic_parser(sub)
    add_produce_parser(sub)
    add_consume_parser(sub)
    add_group_parser(sub)
    add_share_group_parser(sub)
    add_config_parser(sub)
    add_txn_parser(sub)
    add_user_parser(sub)
    add_acl_parser(sub)
    add_quota_parser(sub)
    add_log_parser(sub)
    add_cluster_parser(sub)
    add_registry_parser(sub)
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
        _error_line(args, _reason(e))
        return 2
    except KeyboardInterrupt:
        return 130
    except Exception as e:  # noqa: BLE001 - the contract is one line, never a traceback
        if os.environ.get("HEADRACE_DEBUG"):
            raise
        from headrace.admin import describe_error
        _error_line(args, describe_error(e))
        return 1


def _reason(e: BaseException) -> str:
    """The exception's one line; never empty (its kind, at least)."""
    text = str(e).strip()
    if not text and isinstance(e, OSError) and e.strerror:
        text = e.strerror
    if not text:
        from headrace.admin import describe_error

        text = describe_error(e)
    text = text.splitlines()[0] if text else type(e).__name__
    if text.endswith(":"):  # "what: " with nothing after it
        text = f"{text} {type(e).__name__}"
    return text


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
        print(f"headrace: error: {message or 'unknown error'}", file=sys.stderr)


def _silence_stdout() -> None:
    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except OSError:
        pass

