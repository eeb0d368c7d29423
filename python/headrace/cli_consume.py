"""``headrace consume TOPIC``: print records, by default each value on its
own line, from a position (earliest/latest/offset/@timestamp) or a group's
committed offsets, until the end of the log, ``--count`` records, or for
ever with ``--follow``."""
from __future__ import annotations

import argparse
import sys

from confluent_kafka import Consumer, KafkaError, TopicPartition

from headrace.admin import client_config, describe_error
from headrace.cli_common import CliError, add_client_flags, admin_for, parse_position
from headrace.cli_format import formatter


def add_consume_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("consume", help="print records of a topic",
                       description="Print records of a topic, values one per line by default.")
    p.add_argument("topic")
    p.add_argument("--from", dest="start", default=None, metavar="POS",
                   help="earliest (default), latest, OFFSET or @TIMESTAMP_MS; with --group "
                        "only where the group has no committed offset for earliest/latest")
    p.add_argument("--count", "-c", type=int, metavar="N", help="stop after N records")
    p.add_argument("--follow", "-F", action="store_true",
                   help="keep waiting for new records instead of stopping at the end")
    p.add_argument("--partition", "-p", type=int, action="append", metavar="N",
                   help="only these partitions (repeatable; not with --group)")
    p.add_argument("--format", default="plain", metavar="FMT",
                   help="plain (values), json (one object per record with all metadata), or a "
                        "kcat-like string with %%t %%p %%o %%k %%s %%T %%h and \\n")
    p.add_argument("--group", "-g", metavar="GROUP",
                   help="consume as a member of GROUP, starting at its committed offsets "
                        "and committing what was printed")
    add_client_flags(p)
    p.set_defaults(func=_consume)


def _start_offsets(admin, tps: list[TopicPartition], start) -> None:
    """Sets tp.offset of each partition for position ``start``."""
    if isinstance(start, int):
        for tp in tps:
            tp.offset = start
        return
    spec = int(start[1:]) if start.startswith("@") else start
    found = admin.list_offsets(tps, spec)
    for tp in tps:
        tp.offset = found[(tp.topic, tp.partition)]


def _consumer(args, group: str | None) -> Consumer:
    conf = {"group.id": group or "headrace-cli", "enable.partition.eof": True,
            "enable.auto.commit": group is not None, "enable.auto.offset.store": False,
            "auto.offset.reset": "latest" if args.start == "latest" else "earliest",
            "session.timeout.ms": 10000}
    return Consumer(client_config(args.brokers, **conf))


def _consume(args) -> int:
    start = parse_position(args.start) if args.start else "earliest"
    if args.count is not None and args.count < 0:
        raise CliError("--count must be >= 0")
    admin = admin_for(args)
    md = admin.topic_metadata(args.topic)
    parts = sorted(md.partitions)
    if args.partition:
        bad = [p for p in args.partition if p not in md.partitions]
        if bad:
            raise CliError(f"topic {args.topic} has no partition {bad[0]}")
        if args.group:
            raise CliError("--partition cannot be combined with --group")
        parts = sorted(set(args.partition))
    consumer = _consumer(args, args.group)
    try:
        if args.group:
            _subscribe(consumer, admin, args.topic, start)
        else:
            tps = [TopicPartition(args.topic, p) for p in parts]
            _start_offsets(admin, tps, start)
            consumer.assign(tps)
        _loop(consumer, args)
    finally:
        consumer.close()
    return 0


def _subscribe(consumer: Consumer, admin, topic: str, start) -> None:
    """Group mode: committed offsets win; OFFSET/@TS overrides them."""
    def on_assign(c, tps):
        if not isinstance(start, str) or start in ("earliest", "latest"):
            return
        _start_offsets(admin, tps, int(start) if start.isdigit() else start)
        c.assign(tps)

    if isinstance(start, int):
        start = str(start)
    consumer.subscribe([topic], on_assign=on_assign)


def _loop(consumer: Consumer, args) -> None:
    render = formatter(args.format)
    out = sys.stdout.buffer
    printed = 0
    at_end: set[int] = set()
    while args.count is None or printed < args.count:
        if args.count == 0:
            break
        msg = consumer.poll(0.5)
        if msg is None:
            if not args.follow and _all_at_end(consumer, at_end):
                break
            continue
        err = msg.error()
        if err is not None:
            if err.code() == KafkaError._PARTITION_EOF:
                at_end.add(msg.partition())
                if not args.follow and _all_at_end(consumer, at_end):
                    break
                continue
            raise CliError(f"consume {args.topic}: {describe_error(err)}")
        at_end.discard(msg.partition())
        out.write(render(msg))
        if args.follow:
            out.flush()
        printed += 1
        if args.group:
            consumer.store_offsets(msg)
    out.flush()


def _all_at_end(consumer: Consumer, at_end: set[int]) -> bool:
    assigned = {tp.partition for tp in consumer.assignment()}
    return bool(assigned) and assigned <= at_end
