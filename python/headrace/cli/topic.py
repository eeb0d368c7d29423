"""``headrace topic create|list|describe|delete|alter-config|add-partitions|
delete-records``."""
from __future__ import annotations

import argparse
import sys

from headrace.cli.common import CliError, add_client_flags, admin_for, parse_pairs
from headrace.cli.output import add_format_flag, emit


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
    add_format_flag(ls)
    ls.set_defaults(func=_list)

    d = tsub.add_parser("describe",
                        help="partitions, leaders, offsets, sizes (bytes) and configs of a topic")
    d.add_argument("name")
    add_format_flag(d)
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

    dr = tsub.add_parser("delete-records",
                         help="delete the records before an offset (moves the log start)")
    dr.add_argument("name")
    dr.add_argument("--partition", "-p", type=int, action="append", metavar="P",
                    help="a partition (repeatable; default: every partition)")
    dr.add_argument("--before", required=True, metavar="OFFSET",
                    help="delete records below OFFSET; 'end' (or -1): all records")
    add_format_flag(dr)
    dr.set_defaults(func=_delete_records)

    for sp in (c, ls, d, rm, a, ap, dr):
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
    doc = {"topics": [{"name": name, "partitions": len(md.topics[name].partitions)}
                      for name in sorted(md.topics)]}

    def table():
        for t in doc["topics"]:
            print(f"{t['name']}\t{t['partitions']}" if args.long else t["name"])

    return emit(args, doc, table)


def _describe(args) -> int:
    doc = describe_topic(admin_for(args), args.name)
    return emit(args, doc, lambda: _describe_table(doc))


def describe_topic(admin, name: str) -> dict:
    """The --format json document of `topic describe` (docs/cli.md)."""
    from confluent_kafka import TopicPartition

    from headrace.admin import AdminError

    md = admin.topic_metadata(name)
    tps = [TopicPartition(name, p) for p in sorted(md.partitions)]
    starts = admin.list_offsets(tps, "earliest")
    ends = admin.list_offsets(tps, "latest")
    try:
        sizes = admin.partition_sizes(name, {p: pm.leader for p, pm in md.partitions.items()})
    except AdminError as e:  # e.g. a cluster without DescribeLogDirs: show the rest
        sizes = None
        print(f"headrace: note: sizes unavailable: {e}", file=sys.stderr)
    parts = []
    for tp in tps:
        pm = md.partitions[tp.partition]
        s, e = starts[(name, tp.partition)], ends[(name, tp.partition)]
        parts.append({"partition": tp.partition, "leader": pm.leader,
                      "replicas": list(pm.replicas), "isr": list(pm.isrs),
                      "start_offset": s, "end_offset": e, "records": e - s,
                      "size_bytes": None if sizes is None else sizes.get(tp.partition)})
    configs = {key: {"value": entry.value, "source": "default" if entry.is_default else
                     "override", "read_only": bool(entry.is_read_only),
                     "sensitive": bool(entry.is_sensitive)}
               for key, entry in sorted(admin.topic_config(name).items())}
    return {"name": name, "partitions": parts,
            "records": sum(p["records"] for p in parts),
            "size_bytes": None if sizes is None else sum(sizes.values()),
            "configs": configs}


def _describe_table(doc: dict) -> None:
    print(f"topic {doc['name']}: {len(doc['partitions'])} partitions")
    print("PARTITION\tLEADER\tREPLICAS\tISR\tSTART\tEND\tRECORDS\tSIZE")
    for p in doc["partitions"]:
        replicas = ",".join(str(r) for r in p["replicas"])
        isr = ",".join(str(r) for r in p["isr"])
        size = "?" if p["size_bytes"] is None else p["size_bytes"]
        print(f"{p['partition']}\t{p['leader']}\t{replicas}\t{isr}\t{p['start_offset']}\t"
              f"{p['end_offset']}\t{p['records']}\t{size}")
    total = doc["size_bytes"] or 0
    print(f"TOTAL\t\t\t\t\t\t{doc['records']}\t{total}\t({format_bytes(total)})")
    print("CONFIG")
    for key, c in doc["configs"].items():
        print(f"{key}={c['value']}\t({c['source']})")


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


def _delete_records(args) -> int:
    """DeleteRecords: one row per partition with its new log start offset."""
    text = args.before.strip()
    if text in ("end", "latest", "-1"):
        before = -1
    elif text.isdigit():
        before = int(text)
    else:
        raise CliError(f"--before must be an offset or 'end', got {args.before!r}")
    admin = admin_for(args)
    md = admin.topic_metadata(args.name)
    parts = sorted(set(args.partition)) if args.partition else sorted(md.partitions)
    bad = [p for p in parts if p not in md.partitions]
    if bad:
        raise CliError(f"topic {args.name} has no partition {bad[0]}")
    starts = admin.delete_records(args.name, {p: before for p in parts})
    doc = {"topic": args.name, "partitions": [
        {"partition": p, "log_start_offset": starts[p]} for p in parts]}

    def table():
        print("TOPIC\tPARTITION\tLOG_START")
        for row in doc["partitions"]:
            print(f"{args.name}\t{row['partition']}\t{row['log_start_offset']}")

    return emit(args, doc, table)
