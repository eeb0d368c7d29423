"""`headrace log dump PATH`: decode a segment file offline.

Uses the binding directly (headrace._core.inspect_batches), no broker. Prints
one line per batch (position, offsets, count, codec, producer id/epoch and
base sequence, leader epoch, the transactional flag, for control batches the
marker (COMMIT/ABORT) and coordinator epoch, CRC check) and, unless
--no-records, one line per data record of valid batches, compressed ones
decompressed (the records of control batches are markers, not data). Exits 1 when
some batch is invalid or the file ends in a partial batch, so scripts can use
it as a checker.

`headrace log dirs`: every log directory of every broker (DescribeLogDirs):
path, online or its error (KAFKA_STORAGE_ERROR when offline), volume bytes,
partitions and bytes, copies being moved in; exits 1 when one is offline.
"""
from __future__ import annotations

import argparse
import json
import sys

from headrace.cli.common import add_client_flags, admin_for
from headrace.errors import HeadraceError


def add_log_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("log", help="log segment files and a broker's log directories",
                       description="Decode log segment files (no broker needed), or list a "
                                   "broker's log directories.")
    lsub = p.add_subparsers(dest="log_command", metavar="COMMAND")
    lsub.required = True
    dirs = lsub.add_parser("dirs", help="every log directory of every broker (DescribeLogDirs)",
                           description="One line per log directory: broker, path, state "
                                       "(online or Kafka's error), volume total/usable bytes, "
                                       "partitions and their bytes, copies being moved in.")
    add_client_flags(dirs)
    dirs.add_argument("--topic", action="append", metavar="TOPIC",
                      help="only these topics' partitions (repeatable)")
    dirs.add_argument("--partitions", action="store_true",
                      help="also one indented line per partition")
    dirs.set_defaults(func=_cmd_dirs)
    d = lsub.add_parser("dump", help="decode a .log segment file: batches, records, CRC check",
                        description="Decode a segment file (<20-digit base offset>.log).")
    d.add_argument("path", help="a segment file, e.g. data/t-0/00000000000000000000.log")
    d.add_argument("--no-records", action="store_true", help="batch headers only")
    d.add_argument("--json", action="store_true", help="one JSON object per batch")
    d.set_defaults(func=_cmd_dump)


def _text(b: bytes | None) -> str:
    return "null" if b is None else b.decode("utf-8", "backslashreplace")


def _batch_line(b: dict) -> str:
    status = "crc ok" if b["valid"] else f"INVALID: {b['error']}"
    flags = ""
    if b["transactional"]:
        flags += " transactional"
    if b["control"]:
        flags += f" control={b['marker_type'] or '?'}"
        if b["coordinator_epoch"] is not None:
            flags += f" coordinator_epoch={b['coordinator_epoch']}"
    return (f"batch position={b['position']} offsets={b['base_offset']}..{b['last_offset']} "
            f"records={b['record_count']} size={b['size']} codec={b['compression']} "
            f"{b['timestamp_type']}={b['max_timestamp']} producer={b['producer_id']} "
            f"producer_epoch={b['producer_epoch']} base_sequence={b['base_sequence']} "
            f"leader_epoch={b['partition_leader_epoch']}{flags} {status}")


def _print_batch(b: dict, out) -> None:
    print(_batch_line(b), file=out)
    for offset, key, value, headers, ts in b.get("records", []):
        hdrs = ",".join(f"{k}={_text(v)}" for k, v in headers)
        print(f"  offset={offset} timestamp={ts} key={_text(key)} value={_text(value)}"
              + (f" headers={hdrs}" if hdrs else ""), file=out)


def _json_batch(b: dict) -> str:
    b = dict(b)
    if "records" in b:
        b["records"] = [{"offset": o, "key": _text(k) if k is not None else None,
                         "value": _text(v) if v is not None else None,
                         "headers": [[hk, _text(hv) if hv is not None else None] for hk, hv in h],
                         "timestamp": ts} for o, k, v, h, ts in b["records"]]
    return json.dumps(b)


def _cmd_dump(args: argparse.Namespace) -> int:
    from headrace._core import inspect_batches

    try:
        with open(args.path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise HeadraceError(f"cannot read {args.path}: {e.strerror}") from None
    batches, tail = inspect_batches(data, not args.no_records)
    out = sys.stdout
    for b in batches:
        print(_json_batch(b), file=out) if args.json else _print_batch(b, out)
    invalid = sum(1 for b in batches if not b["valid"])
    summary = (f"headrace: {len(batches)} batches, "
               f"{sum(b['record_count'] for b in batches)} records, {invalid} invalid")
    if tail:
        summary += f"; {tail}"
    print(summary, file=sys.stderr)
    return 1 if invalid or tail else 0


def _cmd_dirs(args: argparse.Namespace) -> int:
    dirs = admin_for(args).log_dirs(args.topic)
    for d in sorted(dirs, key=lambda d: (d.broker, d.path)):
        state = d.error or "online"
        line = (f"broker {d.broker}  {d.path}  {state}  total {d.total_bytes}  "
                f"usable {d.usable_bytes}  partitions {len(d.sizes)}  "
                f"bytes {sum(d.sizes.values())}")
        if d.future:
            line += f"  moving-in {len(d.future)}"
        print(line)
        if args.partitions:
            for (t, p), size in sorted(d.sizes.items()):
                print(f"  {t}-{p}  {size}")
            for (t, p), size in sorted(d.future.items()):
                print(f"  {t}-{p}  {size}  (future: being moved here)")
    return 1 if any(d.error for d in dirs) else 0
