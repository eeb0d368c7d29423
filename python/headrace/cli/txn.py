"""``headrace txn list|describe``: transactions as their coordinators see
them (ListTransactions 66, DescribeTransactions 65, through
:class:`headrace.admin.Admin`).

Text output is one tab-separated row per transaction under a header line
(``list``) or one ``field: value`` line per field (``describe``); ``--format
json`` prints one JSON document (``{"transactions": [...]}`` for ``list``, the
transaction's object for ``describe``); ``--json`` prints one JSON object per
transaction, one per line.
"""
from __future__ import annotations

import argparse
import json
import time
from dataclasses import asdict

from typing import TYPE_CHECKING

from headrace.cli.common import CliError, add_client_flags, admin_for
from headrace.cli.output import add_format_flag

if TYPE_CHECKING:
    from headrace.admin import Transaction

# Kafka's transaction states, as ListTransactions filters and answers them.
STATES = ("Empty", "Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit",
          "CompleteAbort", "Dead", "PrepareEpochFence")

LIST_HEADER = "TRANSACTIONAL_ID\tPRODUCER_ID\tEPOCH\tSTATE\tTIMEOUT_MS\tAGE\tPARTITIONS"


def add_txn_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("txn", help="list and describe transactions")
    tsub = p.add_subparsers(dest="txn_command", metavar="ACTION")
    tsub.required = True

    ls = tsub.add_parser("list", help="every transactional id with its producer, state and age")
    ls.add_argument("--state", action="append", metavar="S",
                    help=f"only transactions in state S (repeatable; one of {', '.join(STATES)}; "
                         "case-insensitive)")
    ls.set_defaults(func=_list)

    d = tsub.add_parser("describe", help="one transactional id: producer, state, partitions")
    d.add_argument("transactional_id", metavar="ID")
    d.set_defaults(func=_describe)

    for sp in (ls, d):
        sp.add_argument("--json", action="store_true",
                        help="one JSON object per transaction, one per line")
        add_format_flag(sp)
        add_client_flags(sp)


def canonical_state(text: str) -> str:
    """'ongoing' -> 'Ongoing'; CliError for a name Kafka does not have."""
    for s in STATES:
        if s.lower() == text.lower():
            return s
    raise CliError(f"unknown transaction state {text!r} (one of {', '.join(STATES)})")


def age_ms(t: Transaction, now_ms: int) -> int | None:
    """Milliseconds since the transaction started; None when none is in progress."""
    if t.start_time_ms is None or t.start_time_ms < 0:
        return None
    return max(0, now_ms - t.start_time_ms)


def format_age(ms: int | None) -> str:
    """12345 -> '12s', 185000 -> '3m5s', 7200000 -> '2h0m'; None -> '-'."""
    if ms is None:
        return "-"
    s = ms // 1000
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60}s"
    return f"{s // 3600}h{s % 3600 // 60}m"


def format_partitions(parts: list[tuple[str, int]]) -> str:
    return ",".join(f"{t}[{p}]" for t, p in parts) or "-"


def _opt(v) -> str:
    return "-" if v is None else str(v)


def list_row(t: Transaction, now_ms: int) -> str:
    return "\t".join([t.transactional_id, str(t.producer_id), _opt(t.producer_epoch), t.state,
                      _opt(t.timeout_ms), format_age(age_ms(t, now_ms)),
                      format_partitions(t.partitions)])


def describe_lines(t: Transaction, now_ms: int) -> list[str]:
    return [f"transactional id: {t.transactional_id}",
            f"producer id: {t.producer_id}",
            f"producer epoch: {_opt(t.producer_epoch)}",
            f"state: {t.state}",
            f"timeout ms: {_opt(t.timeout_ms)}",
            f"start time ms: {_opt(t.start_time_ms)}",
            f"age: {format_age(age_ms(t, now_ms))}",
            f"partitions: {format_partitions(t.partitions)}",
            f"coordinator: {_opt(t.coordinator)}"]


def as_dict(t: Transaction, now_ms: int) -> dict:
    d = asdict(t)
    d["partitions"] = [{"topic": topic, "partition": p} for topic, p in t.partitions]
    d["age_ms"] = age_ms(t, now_ms)
    return d


def as_json(t: Transaction, now_ms: int) -> str:
    return json.dumps(as_dict(t, now_ms))


def _now_ms() -> int:
    return int(time.time() * 1000)


def _list(args) -> int:
    states = [canonical_state(s) for s in args.state or []]
    txns = admin_for(args).transactions(states)
    now = _now_ms()
    if args.format == "json":
        print(json.dumps({"transactions": [as_dict(t, now) for t in txns]}, indent=2))
        return 0
    if args.json:
        for t in txns:
            print(as_json(t, now))
        return 0
    print(LIST_HEADER)
    for t in txns:
        print(list_row(t, now))
    return 0


def _describe(args) -> int:
    t = admin_for(args).describe_transaction(args.transactional_id)
    now = _now_ms()
    if args.format == "json":
        print(json.dumps(as_dict(t, now), indent=2))
        return 0
    print(as_json(t, now) if args.json else "\n".join(describe_lines(t, now)))
    return 0
