"""``headrace group list|describe|seek|delete``."""
from __future__ import annotations

import argparse

from confluent_kafka import TopicPartition

from headrace.cli_common import CliError, add_client_flags, admin_for, parse_position


def add_group_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("group", help="list, describe, reset and delete consumer groups")
    gsub = p.add_subparsers(dest="group_command", metavar="ACTION")
    gsub.required = True

    ls = gsub.add_parser("list", help="group ids, one per line, with their state")
    ls.set_defaults(func=_list)

    d = gsub.add_parser("describe", help="members, assignments and per-partition lag")
    d.add_argument("group")
    d.set_defaults(func=_describe)

    s = gsub.add_parser("seek", help="reset a stopped group's committed offsets")
    s.add_argument("group")
    s.add_argument("--to", required=True, metavar="POS",
                   help="earliest, latest, OFFSET or @TIMESTAMP_MS")
    s.add_argument("--topic", action="append", metavar="TOPIC",
                   help="all partitions of TOPIC (repeatable; default: the topics the group "
                        "has committed offsets for)")
    s.add_argument("--dry-run", action="store_true", help="print the plan, change nothing")
    s.set_defaults(func=_seek)

    rm = gsub.add_parser("delete", help="delete stopped groups and their committed offsets")
    rm.add_argument("groups", nargs="+", metavar="group")
    rm.set_defaults(func=_delete)

    for sp in (ls, d, s, rm):
        add_client_flags(sp)


def _state(desc) -> str:
    return getattr(desc.state, "name", str(desc.state))


def _list(args) -> int:
    for g in admin_for(args).groups():
        print(f"{g.group_id}\t{getattr(g.state, 'name', g.state)}")
    return 0


def _existing(admin, group: str):
    desc = admin.describe_group(group)
    if _state(desc) == "DEAD" and not admin.committed(group):
        raise CliError(f"unknown group {group!r}")
    return desc


def _describe(args) -> int:
    admin = admin_for(args)
    desc = _existing(admin, args.group)
    committed = admin.committed(args.group)
    owner: dict[tuple[str, int], str] = {}
    print(f"group {args.group}: state {_state(desc)}, {len(desc.members)} members, "
          f"assignor {desc.partition_assignor or '-'}")
    print("MEMBER\tCLIENT\tHOST\tASSIGNMENT")
    for m in desc.members:
        tps = m.assignment.topic_partitions if m.assignment else []
        for tp in tps:
            owner[(tp.topic, tp.partition)] = m.member_id
        assigned = ",".join(f"{tp.topic}[{tp.partition}]" for tp in tps) or "-"
        print(f"{m.member_id}\t{m.client_id}\t{m.host}\t{assigned}")
    keys = sorted(set(committed) | set(owner))
    ends = admin.list_offsets([TopicPartition(t, p) for t, p in keys], "latest")
    print("TOPIC\tPARTITION\tCOMMITTED\tEND\tLAG\tMEMBER")
    for key in keys:
        c, e = committed.get(key), ends[key]
        lag = e - c if c is not None else "-"
        print(f"{key[0]}\t{key[1]}\t{'-' if c is None else c}\t{e}\t{lag}\t"
              f"{owner.get(key, '-')}")
    return 0


def _seek(args) -> int:
    to = parse_position(args.to)
    admin = admin_for(args)
    desc = admin.describe_group(args.group)
    if desc.members:
        raise CliError(f"group {args.group} has {len(desc.members)} active members; stop "
                       f"them before seeking")
    committed = admin.committed(args.group)
    tps = _seek_partitions(admin, args.topic, committed, args.group)
    if isinstance(to, int):
        # Like Kafka's --to-offset: clamped into [log start, log end].
        lo, hi = admin.list_offsets(tps, "earliest"), admin.list_offsets(tps, "latest")
        target = {k: min(max(to, lo[k]), hi[k]) for k in lo}
    else:
        target = admin.list_offsets(tps, int(to[1:]) if to.startswith("@") else to)
    print("TOPIC\tPARTITION\tFROM\tTO")
    for (t, p), o in sorted(target.items()):
        print(f"{t}\t{p}\t{committed.get((t, p), '-')}\t{o}")
    if args.dry_run:
        print("dry run: nothing changed")
        return 0
    admin.alter_committed(args.group, target)
    return 0


def _seek_partitions(admin, topics, committed, group) -> list[TopicPartition]:
    if not topics:
        topics = sorted({t for t, _ in committed})
        if not topics:
            raise CliError(f"group {group!r} has no committed offsets; name the topics "
                           f"with --topic")
    tps = []
    for t in topics:
        md = admin.topic_metadata(t)
        tps += [TopicPartition(t, p) for p in sorted(md.partitions)]
    return tps


def _delete(args) -> int:
    admin = admin_for(args)
    for g in args.groups:
        admin.delete_group(g)
        print(f"deleted group {g}")
    return 0
