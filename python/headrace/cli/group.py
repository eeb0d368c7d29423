"""``headrace group list|describe|seek|delete``."""
from __future__ import annotations

import argparse
import sys

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
    """Every group of the brokers that answer; with a broker down, the
    groups it coordinates are missing and a warning names it."""
    from headrace.cli.topic import _down_text, cluster_health

    admin = admin_for(args)
    md = admin.metadata()
    deadline = admin.read_deadline()
    live, down = cluster_health(admin, md, deadline)
    warnings = [_down_text(b) + "; the groups it coordinates are not listed" for b in down
                if b["host"]]
    if not down:
        groups = [(g.group_id, getattr(g.state, "name", str(g.state))) for g in admin.groups()]
    else:
        up = sorted((b.id, b.host, b.port) for b in md.brokers.values() if b.id in live)
        groups, errors = admin.groups_from(up, deadline)
        warnings += [f"broker {i} did not list its groups: {why}"
                     for i, why in sorted(errors.items())]
    for line in warnings:
        print(f"headrace: warning: {line}", file=sys.stderr)
    doc = {"groups": [{"group_id": gid, "state": state} for gid, state in groups],
           "brokers_down": down, "warnings": warnings, "complete": not warnings}

    def table():
        for g in doc["groups"]:
            print(f"{g['group_id']}\t{g['state']}")

    return emit(args, doc, table)


def _existing(admin, group: str):
    desc = admin.describe_group(group)
    if _state(desc) == "DEAD" and not admin.committed(group):
        raise CliError(f"unknown group {group!r}{_share_hint(admin, group)}")
    return desc


def _share_hint(admin, group: str) -> str:
    """", a share group: ..." when ``group`` is a share group (asked only
    when it is no consumer group), else ""."""
    from headrace.cli.share_group import list_share_groups_doc

    try:
        listed = list_share_groups_doc(admin)["groups"]
    except Exception:  # noqa: BLE001 - only a hint on an error path
        return ""
    if any(g["group_id"] == group for g in listed):
        return f" as a consumer group; it is a share group: headrace share-group describe {group}"
    return ""


def _describe(args) -> int:
    doc = describe_group(admin_for(args), args.group)
    for line in doc["warnings"]:
        print(f"headrace: warning: {line}", file=sys.stderr)
    return emit(args, doc, lambda: _describe_table(doc))


def describe_group(admin, group: str) -> dict:
    """The --format json document of `group describe` (docs/cli.md).

    Degraded reads: the group's coordinator is looked up first; when it is
    down the answer is one error naming it (the group's members and
    offsets live there alone). Lag needs each partition's end offset from
    its leader: a partition whose leader is down shows end offset and lag
    null, and ``warnings`` / ``brokers_down`` name the brokers."""
    from headrace.admin import AdminError
    from headrace.cli.topic import _down_text, cluster_health

    md = admin.metadata()
    deadline = admin.read_deadline()
    live, down = cluster_health(admin, md, deadline)
    warnings = [_down_text(b) for b in down]
    if down:
        up = sorted((b.id, b.host, b.port) for b in md.brokers.values() if b.id in live)
        try:
            node, host, port = admin.group_coordinator(group, up, deadline)
        except AdminError as e:
            raise CliError(f"{e}; " + "; ".join(warnings)) from None
        if node not in live:
            raise CliError(f"group {group!r}: its coordinator, broker {node} ({host}:{port}), "
                           f"is down: {next((b['reason'] for b in down if b['id'] == node), '?')};"
                           f" its members and committed offsets are unavailable until another "
                           f"broker leads its __consumer_offsets partition")
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
    leader_of = {}
    for t, p in keys:
        pm = md.topics[t].partitions.get(p) if t in md.topics else None
        leader_of[(t, p)] = pm.leader if pm is not None else -1
    ends, errors = admin.offsets_by_leader(
        {k: lead for k, lead in leader_of.items() if lead in live}, "latest", deadline)
    offsets = []
    for key in keys:
        c, e = committed.get(key), ends.get(key)
        why = None
        if e is None:
            lead = leader_of[key]
            why = errors.get(key) or (f"leader {lead} down" if lead >= 0 else "no leader")
        offsets.append({"topic": key[0], "partition": key[1], "committed": c,
                        "end_offset": e, "lag": None if c is None or e is None else e - c,
                        "member_id": owner.get(key), "error": why})
    unknown = [f"{o['topic']}[{o['partition']}]" for o in offsets if o["error"]]
    if unknown:
        warnings.append("end offsets (lag) unavailable for " + ",".join(unknown))
    return {"group_id": group, "state": _state(desc),
            "assignor": desc.partition_assignor or None, "members": members,
            "offsets": offsets, "brokers_down": down, "warnings": warnings,
            "complete": not warnings}


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
