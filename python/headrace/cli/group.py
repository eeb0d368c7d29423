"""``headrace group list|describe|seek|delete``."""
from __future__ import annotations

import argparse

from headrace.cli.common import CliError, add_client_flags, admin_for
from headrace.cli.offsets import SPELLINGS, parse_position, resolve
from headrace.cli.output import add_format_flag, emit


def add_group_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("group", help="list, describe, reset and delete consumer groups")
    gsub = p.add_subparsers(dest="group_command", metavar="ACTION")
    gsub.required = True

    ls = gsub.add_parser("list", help="group ids, one per line, with their state")
    add_format_flag(ls)
    ls.set_defaults(func=_list)

    d = gsub.add_parser("describe", help="members, assignments and per-partition lag")
    d.add_argument("group")
    add_format_flag(d)
    d.set_defaults(func=_describe)

    s = gsub.add_parser("seek", help="reset a stopped group's committed offsets")
    s.add_argument("group")
    s.add_argument("--to", required=True, metavar="POS",
                   help=SPELLINGS)
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
    doc = {"groups": [{"group_id": g.group_id, "state": getattr(g.state, "name", str(g.state))}
                      for g in admin_for(args).groups()]}

    def table():
        for g in doc["groups"]:
            print(f"{g['group_id']}\t{g['state']}")

    return emit(args, doc, table)


def _existing(admin, group: str):
    desc = admin.describe_group(group)
    if _state(desc) == "DEAD" and not admin.committed(group):
        raise CliError(f"unknown group {group!r}")
    return desc


def _describe(args) -> int:
    doc = describe_group(admin_for(args), args.group)
    return emit(args, doc, lambda: _describe_table(doc))


def describe_group(admin, group: str) -> dict:
    """The --format json document of `group describe` (docs/cli.md)."""
    from confluent_kafka import TopicPartition

    desc = _existing(admin, group)
    committed = admin.committed(group)
    owner: dict[tuple[str, int], str] = {}
    members = []
    for m in desc.members:
        tps = m.assignment.topic_partitions if m.assignment else []
        for tp in tps:
            owner[(tp.topic, tp.partition)] = m.member_id
        members.append({"member_id": m.member_id, "client_id": m.client_id, "host": m.host,
                        "assignment": [{"topic": tp.topic, "partition": tp.partition}
                                       for tp in tps]})
    keys = sorted(set(committed) | set(owner))
    ends = admin.list_offsets([TopicPartition(t, p) for t, p in keys], "latest")
    offsets = []
    for key in keys:
        c, e = committed.get(key), ends[key]
        offsets.append({"topic": key[0], "partition": key[1], "committed": c,
                        "end_offset": e, "lag": None if c is None else e - c,
                        "member_id": owner.get(key)})
    return {"group_id": group, "state": _state(desc),
            "assignor": desc.partition_assignor or None, "members": members,
            "offsets": offsets}


def _describe_table(doc: dict) -> None:
    print(f"group {doc['group_id']}: state {doc['state']}, {len(doc['members'])} members, "
          f"assignor {doc['assignor'] or '-'}")
    print("MEMBER\tCLIENT\tHOST\tASSIGNMENT")
    for m in doc["members"]:
        assigned = ",".join(f"{a['topic']}[{a['partition']}]" for a in m["assignment"]) or "-"
        print(f"{m['member_id']}\t{m['client_id']}\t{m['host']}\t{assigned}")
    print("TOPIC\tPARTITION\tCOMMITTED\tEND\tLAG\tMEMBER")
    for o in doc["offsets"]:
        cells = [o["topic"], o["partition"], o["committed"], o["end_offset"], o["lag"],
                 o["member_id"]]
        print("\t".join("-" if c is None else str(c) for c in cells))


def _seek(args) -> int:
    to = parse_position(args.to)
    admin = admin_for(args)
    desc = admin.describe_group(args.group)
    if desc.members:
        raise CliError(f"group {args.group} has {len(desc.members)} active members; stop "
                       f"them before seeking")
    committed = admin.committed(args.group)
    tps = _seek_partitions(admin, args.topic, committed, args.group)
    # An offset is clamped into [log start, log end] (like Kafka's --to-offset).
    target = resolve(admin, tps, to)
    print("TOPIC\tPARTITION\tFROM\tTO")
    for (t, p), o in sorted(target.items()):
        print(f"{t}\t{p}\t{committed.get((t, p), '-')}\t{o}")
    if args.dry_run:
        print("dry run: nothing changed")
        return 0
    admin.alter_committed(args.group, target)
    return 0


def _seek_partitions(admin, topics, committed, group) -> list:
    from confluent_kafka import TopicPartition

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
