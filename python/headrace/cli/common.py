"""Pieces every client subcommand of the ``headrace`` command line shares:
the ``--brokers`` / ``--timeout`` flags, the client security settings
(``-X``, ``--command-config``, ``HEADRACE_*``; headrace.client_settings),
the fail-fast bootstrap check, and KEY=VALUE parsing.

Import cost matters here (every command imports this module while building
the parser): confluent_kafka and headrace.admin are imported only by the
functions that talk to a broker.
"""
from __future__ import annotations

import argparse
import os
from typing import TYPE_CHECKING

from headrace.errors import HeadraceError

if TYPE_CHECKING:
    from headrace.admin import Admin

BROKERS_ENV = "HEADRACE_BROKERS"
DEFAULT_BROKERS = "127.0.0.1:9092"  # the same as headrace.admin.DEFAULT_BROKERS


class CliError(HeadraceError):
    """A user error the command line reports as one line."""


def add_client_flags(p: argparse.ArgumentParser) -> None:
    """--brokers (or $HEADRACE_BROKERS, default 127.0.0.1:9092), --timeout,
    and the client settings -X KEY=VALUE / --command-config FILE."""
    p.add_argument("--brokers", "-b", metavar="HOST:PORT[,...]",
                   default=os.environ.get(BROKERS_ENV) or DEFAULT_BROKERS,
                   help=f"bootstrap brokers (env {BROKERS_ENV}, default {DEFAULT_BROKERS})")
    p.add_argument("--timeout", type=float, default=10.0, metavar="S",
                   help="seconds to wait for the cluster before giving up (default 10)")
    p.add_argument("-X", "--property", dest="client_props", action="append",
                   metavar="KEY=VALUE",
                   help="a librdkafka client property, e.g. -X security.protocol=SASL_SSL "
                        "(repeatable; wins over --command-config and HEADRACE_* env)")
    p.add_argument("--command-config", metavar="FILE",
                   help="a Kafka client config (Java properties: security.protocol, "
                        "sasl.jaas.config, ssl.truststore.location, ...)")


def client_settings(args: argparse.Namespace) -> dict[str, str]:
    """The librdkafka properties every client of this command gets: -X over
    --command-config over HEADRACE_* (headrace.client_settings.resolve)."""
    from headrace.client_settings import ClientSettingsError, resolve

    try:
        return resolve(getattr(args, "client_props", None), getattr(args, "command_config", None))
    except ClientSettingsError as e:
        raise CliError(str(e)) from None


def check_reachable(args: argparse.Namespace) -> None:
    """Fails fast (one line naming the addresses) when no bootstrap broker
    accepts a TCP connection, or when the first connection fails to
    authenticate or to agree on TLS (librdkafka's reason, at once); see
    headrace.cli.probe."""
    from headrace.cli.probe import check_bootstrap, check_handshake

    check_bootstrap(args.brokers, args.timeout)
    check_handshake(args.brokers, client_settings(args), args.timeout)


def admin_for(args: argparse.Namespace) -> "Admin":
    from headrace.admin import Admin

    settings = client_settings(args)  # a bad setting is reported before the probe
    check_reachable(args)
    return Admin(args.brokers, timeout=args.timeout, settings=settings)


def parse_pairs(items: list[str] | None, what: str) -> dict[str, str]:
    """["k=v", ...] -> {"k": "v"}; CliError naming ``what`` on a bad item."""
    out: dict[str, str] = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise CliError(f"{what} expects KEY=VALUE, got {item!r}")
        out[key.strip()] = value
    return out
