"""Pieces every client subcommand of the ``headrace`` command line shares:
the ``--brokers`` / ``--timeout`` flags and KEY=VALUE parsing."""
from __future__ import annotations

import argparse
import os

from headrace.admin import DEFAULT_BROKERS, Admin
from headrace.errors import HeadraceError

BROKERS_ENV = "HEADRACE_BROKERS"


class CliError(HeadraceError):
    """A user error the command line reports as one line."""


def add_client_flags(p: argparse.ArgumentParser) -> None:
    """--brokers (or $HEADRACE_BROKERS, default 127.0.0.1:9092) and --timeout."""
    p.add_argument("--brokers", metavar="HOST:PORT[,...]",
                   default=os.environ.get(BROKERS_ENV) or DEFAULT_BROKERS,
                   help=f"bootstrap brokers (env {BROKERS_ENV}, default {DEFAULT_BROKERS})")
    p.add_argument("--timeout", type=float, default=10.0, metavar="S",
                   help="seconds to wait for the cluster before giving up (default 10)")


def admin_for(args: argparse.Namespace) -> Admin:
    return Admin(args.brokers, timeout=args.timeout)


def parse_pairs(items: list[str] | None, what: str) -> dict[str, str]:
    """["k=v", ...] -> {"k": "v"}; CliError naming ``what`` on a bad item."""
    out: dict[str, str] = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise CliError(f"{what} expects KEY=VALUE, got {item!r}")
        out[key.strip()] = value
    return out


def parse_position(text: str) -> str | int:
    """--from/--to value: "earliest", "latest", an offset (int >= 0) or
    "@TIMESTAMP_MS" (returned as the string "@123")."""
    if text in ("earliest", "latest"):
        return text
    if text.startswith("@") and text[1:].isdigit():
        return text
    if text.isdigit():
        return int(text)
    raise CliError(f"position must be earliest, latest, OFFSET or @TIMESTAMP_MS, got {text!r}")
