"""``headrace topic create|list|describe|delete|alter-config|add-partitions``."""
from __future__ import annotations

import argparse
import sys

from confluent_kafka import TopicPartition

from headrace.admin import AdminError
from headrace.cli_common import CliError, add_client_flags, admin_for, parse_pairs


def add_topic_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("topic", help="create, list, describe, alter and delete topics")
    tsub = p.add_subparsers(dest="topic_command", metavar="ACTION")
    tsub.required = True

    c = tsub.add_parser("create", help="create a topic")
    c.add_argument("name")
    c.add_argument("--partitions", type=int, default=1, metavar="N", help="default 1")
    c.add_argument("--replication-factor", type=int, default=1, metavar="N", help="default 1")
    c.add_argument("--config", action="append", metavar="KEY=VALUE",
                   help="topic setting, e.g. retention.ms=60000 (repeatable)")
    c.set_defaults(func=_create)

    ls = tsub.add_parser("list", help="topic names, one per line")
    ls.add_argument("--long", "-l", action="store_true", help="also print partition counts")
    ls.set_defaults(func=_list)

    d = tsub.add_parser("describe",
                        help="partitions, leaders, offsets, sizes (bytes) and configs of a topic")
    d.add_argument("name")
    d.set_defaults(func=_describe)

    rm = tsub.add_parser("delete", help="delete topics")
    rm.add_argument("names", nargs="+", metavar="name")
    rm.set_defaults(func=_delete)

    a = tsub.add_parser("alter-config", help="set or reset topic settings")
    a.add_argument("name")
    a.add_argument("--set", action="append", metavar="KEY=VALUE", help="repeatable")
    a.add_argument("--delete", action="append", metavar="KEY", help="reset to default (repeatable)")
    a.set_defaults(func=_alter_config)

    ap = tsub.add_parser("add-partitions", help="grow a topic's partition count")
    n = ap.add_mutually_exclusive_group(required=True)
    ap.add_argument("name")
    n.add_argument("--total", type=int, metavar="N", help="new partition count")
    n.add_argument("--add", type=int, metavar="N", help="partitions to add")
    ap.set_defaults(func=_add_partitions)

    for sp in (c, ls, d, rm, a, ap):
        add_client_flags(sp)


def _create(args) -> int:
    if args.partitions < 1:
        raise CliError("--partitions must be at least 1")
    admin_for(args).create_topic(args.name, args.partitions, args.replication_factor,
                                 parse_pairs(args.config, "--config"))
    print(f"created topic {args.name} ({args.partitions} partitions)")
    return 0


def _list(args) -> int:
    md = admin_for(args).metadata()
    for name in sorted(md.topics):
        print(f"{name}\t{len(md.topics[name].partitions)}" if args.long else name)
    return 0


def _describe(args) -> int:
    admin = admin_for(args)
    md = admin.topic_metadata(args.name)
    tps = [TopicPartition(args.name, p) for p in sorted(md.partitions)]
    starts = admin.list_offsets(tps, "earliest")
    ends = admin.list_offsets(tps, "latest")
    try:
        sizes = admin.partition_sizes(
            args.name, {p: pm.leader for p, pm in md.partitions.items()})
    except AdminError as e:  # e.g. a cluster without DescribeLogDirs: show the rest
        sizes = {}
        print(f"headrace: note: sizes unavailable: {e}", file=sys.stderr)
    print(f"topic {args.name}: {len(tps)} partitions")
    print("PARTITION\tLEADER\tREPLICAS\tISR\tSTART\tEND\tRECORDS\tSIZE")
    for tp in tps:
        pm = md.partitions[tp.partition]
        s, e = starts[(args.name, tp.partition)], ends[(args.name, tp.partition)]
        replicas = ",".join(str(r) for r in pm.replicas)
        isr = ",".join(str(r) for r in pm.isrs)
        size = sizes.get(tp.partition)
        print(f"{tp.partition}\t{pm.leader}\t{replicas}\t{isr}\t{s}\t{e}\t{e - s}\t"
              f"{'?' if size is None else size}")
    total_records = sum(ends[(args.name, p.partition)] - starts[(args.name, p.partition)]
                        for p in tps)
    print(f"TOTAL\t\t\t\t\t\t{total_records}\t{sum(sizes.values())}"
          f"\t({format_bytes(sum(sizes.values()))})")
    print("CONFIG")
    for key, entry in sorted(admin.topic_config(args.name).items()):
        source = "default" if entry.is_default else "override"
        print(f"{key}={entry.value}\t({source})")
    return 0


def format_bytes(n: int) -> str:
    """1536 -> "1.5 KiB" (binary units, one decimal; bytes as they are)."""
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if size < 1024 or unit == "TiB":
            return f"{int(size)} B" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} B"  # not reached


def _delete(args) -> int:
    admin = admin_for(args)
    for name in args.names:
        admin.delete_topic(name)
        print(f"deleted topic {name}")
    return 0


def _alter_config(args) -> int:
    to_set = parse_pairs(args.set, "--set")
    to_delete = args.delete or []
    if not to_set and not to_delete:
        raise CliError("alter-config needs --set KEY=VALUE or --delete KEY")
    admin = admin_for(args)
    admin.topic_metadata(args.name)
    admin.alter_topic_config(args.name, to_set, to_delete)
    print(f"altered topic {args.name}: " + ", ".join(
        [f"{k}={v}" for k, v in to_set.items()] + [f"{k} reset" for k in to_delete]))
    return 0


def _add_partitions(args) -> int:
    admin = admin_for(args)
    current = len(admin.topic_metadata(args.name).partitions)
    total = args.total if args.total is not None else current + args.add
    if total <= current:
        raise CliError(f"topic {args.name} has {current} partitions; the new count must be "
                       f"larger, got {total}")
    admin.add_partitions(args.name, total)
    print(f"topic {args.name}: {current} -> {total} partitions")
    return 0
