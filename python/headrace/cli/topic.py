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
    for line in doc["warnings"]:
        print(f"headrace: warning: {line}", file=sys.stderr)
    return emit(args, doc, lambda: _describe_table(doc))


def cluster_health(admin, md, deadline: float) -> tuple[set[int], list[dict]]:
    """(ids of the brokers that answer, [{"id", "host", "port", "reason"}]
    of those that do not) among the brokers ``md`` lists and the replicas
    it names that no broker registration backs (a broker whose ZooKeeper
    session ended: host and port null, reason "no longer registered ...")."""
    listed = {b.id: (b.host, b.port) for b in md.brokers.values()}
    health = admin.probe_brokers([(i, h, p) for i, (h, p) in listed.items()], deadline)
    live = {i for i, why in health.items() if why is None}
    down = [{"id": i, "host": listed[i][0], "port": listed[i][1], "reason": why}
            for i, why in sorted(health.items()) if why is not None]
    named = {r for t in md.topics.values() for pm in t.partitions.values() for r in pm.replicas}
    gone = "no longer registered (its ZooKeeper session ended)"
    down += [{"id": i, "host": None, "port": None, "reason": gone}
             for i in sorted(named - set(listed))]
    return live, down


def _down_text(b: dict) -> str:
    where = f" ({b['host']}:{b['port']})" if b["host"] else ""
    return f"broker {b['id']}{where} is down: {b['reason']}"


def describe_topic(admin, name: str) -> dict:
    """The --format json document of `topic describe` (docs/cli.md).

    Degraded reads: the metadata comes from any broker that answers; the
    offsets, sizes and configs from the brokers that answer within
    BROKER_ANSWER_S (all of them together within DEGRADED_READ_S). What
    could not be read is null, each partition says whether its leader is
    offline and which replicas are, and ``brokers_down`` / ``warnings``
    name the brokers that failed."""
    from confluent_kafka import KafkaError

    from headrace.admin import AdminError
    from headrace.admin_wire import RESOURCE_TOPIC

    whole = admin.metadata()
    md = whole.topics.get(name)
    if md is None or md.error is not None and md.error.code() == \
            KafkaError.UNKNOWN_TOPIC_OR_PART:
        raise AdminError(f"unknown topic {name!r}")
    deadline = admin.read_deadline()
    live, down = cluster_health(admin, whole, deadline)
    warnings = [_down_text(b) for b in down]
    parts_md = {p: md.partitions[p] for p in sorted(md.partitions)}
    leaders = {(name, p): pm.leader for p, pm in parts_md.items() if pm.leader in live}
    starts, start_err = admin.offsets_by_leader(leaders, "earliest", deadline)
    ends, end_err = admin.offsets_by_leader(leaders, "latest", deadline)
    listed = {b.id: (b.id, b.host, b.port) for b in whole.brokers.values()}
    sizes_at, size_err = admin.sizes_by_broker(
        [listed[i] for i in sorted(live) if i in listed], name, list(parts_md), deadline)
    if size_err:
        warnings.append("sizes unavailable from " + ", ".join(
            f"broker {i} ({why})" for i, why in sorted(size_err.items())))
    parts = []
    for p, pm in parts_md.items():
        key = (name, p)
        s, e = starts.get(key), ends.get(key)
        offline_replicas = [r for r in pm.replicas if r not in live]
        in_sync = [r for r in pm.isrs if r in live]
        size = sizes_at.get(pm.leader, {}).get(p) if pm.leader in sizes_at else None
        parts.append({"partition": p, "leader": pm.leader,
                      "replicas": list(pm.replicas), "isr": list(pm.isrs),
                      "start_offset": s, "end_offset": e,
                      "records": None if s is None or e is None else e - s,
                      "size_bytes": size,
                      "offline": pm.leader not in live,
                      "offline_replicas": offline_replicas,
                      "under_replicated": len(in_sync) < len(pm.replicas),
                      "error": start_err.get(key) or end_err.get(key)})
    offline = [p["partition"] for p in parts if p["offline"]]
    under = [p["partition"] for p in parts if p["under_replicated"] and not p["offline"]]
    if offline:
        warnings.append(f"{len(offline)} partition(s) offline (leader down or none): "
                        + ",".join(map(str, offline)))
    if under:
        warnings.append(f"{len(under)} partition(s) under-replicated: "
                        + ",".join(map(str, under)))
    unread = [p["partition"] for p in parts if not p["offline"] and p["error"]]
    if unread:
        warnings.append("offsets unavailable for partition(s) "
                        + ",".join(map(str, unread)))
    configs_error = None
    try:  # any broker answers a topic's DescribeConfigs (librdkafka asks the controller)
        up = [listed[i] for i in sorted(live) if i in listed]
        configs = {c.name: {"value": c.value,
                            "source": "default" if c.source == "DEFAULT_CONFIG" else "override",
                            "read_only": c.read_only, "sensitive": c.sensitive}
                   for c in admin.configs_from(up, RESOURCE_TOPIC, name, deadline)}
    except AdminError as exc:
        configs, configs_error = {}, str(exc)
        warnings.append(f"configs unavailable: {exc}")
    known = [p for p in parts if p["records"] is not None]
    sized = [p for p in parts if p["size_bytes"] is not None]
    return {"name": name, "partitions": parts,
            "records": sum(p["records"] for p in known),
            "size_bytes": sum(p["size_bytes"] for p in sized) if sized else None,
            "configs": configs, "configs_error": configs_error,
            "brokers_down": down, "warnings": warnings, "complete": not warnings}


def _status(p: dict) -> str:
    if p["offline"]:
        return "OFFLINE" if p["leader"] < 0 else f"OFFLINE (leader {p['leader']} down)"
    out = []
    if p["under_replicated"]:
        out.append("UNDER-REPLICATED")
    if p["offline_replicas"]:
        out.append("replicas down " + ",".join(map(str, p["offline_replicas"])))
    if p["error"]:
        out.append("offsets unknown")
    return "; ".join(out) or "ok"


def _describe_table(doc: dict) -> None:
    print(f"topic {doc['name']}: {len(doc['partitions'])} partitions")
    print("PARTITION\tLEADER\tREPLICAS\tISR\tSTART\tEND\tRECORDS\tSIZE\tSTATUS")
    for p in doc["partitions"]:
        replicas = ",".join(str(r) for r in p["replicas"])
        isr = ",".join(str(r) for r in p["isr"])
        cells = [p["partition"], "none" if p["leader"] < 0 else p["leader"], replicas, isr,
                 p["start_offset"], p["end_offset"], p["records"],
                 "?" if p["size_bytes"] is None else p["size_bytes"], _status(p)]
        print("\t".join("?" if c is None else str(c) for c in cells))
    total = doc["size_bytes"] or 0
    print(f"TOTAL\t\t\t\t\t\t{doc['records']}\t{total}\t({format_bytes(total)})")
    for b in doc["brokers_down"]:
        print(f"DOWN\t{_down_text(b)}")
    print("CONFIG")
    for key, c in doc["configs"].items():
        print(f"{key}={c['value']}\t({c['source']})")
    if doc["configs_error"]:
        print(f"? {doc['configs_error']}")


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
