"""``headrace share-group list|describe|reset|delete``: share groups
(KIP-932, docs/share-groups.md), from ListGroups (type share) at every
broker, the coordinator's ShareGroupDescribe and DescribeShareGroupOffsets,
AlterShareGroupOffsets, and DeleteGroups."""
from __future__ import annotations

import argparse
import sys

from headrace.cli.common import CliError, add_client_flags, admin_for
from headrace.cli.offsets import SPELLINGS, parse_position, resolve
from headrace.cli.output import add_format_flag, emit

GROUP_ID_NOT_FOUND = 69  # ShareGroupDescribe's answer for a group that does not exist


def add_share_group_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("share-group", help="list, describe and delete share groups")
    gsub = p.add_subparsers(dest="share_group_command", metavar="ACTION")
    gsub.required = True
    ls = gsub.add_parser("list", help="share group ids, one per line, with their state")
    add_format_flag(ls)
    ls.set_defaults(func=_list)
    d = gsub.add_parser("describe", help="members, their subscriptions and assignments, "
                                         "and each partition's start offset and lag")
    d.add_argument("group")
    add_format_flag(d)
    d.set_defaults(func=_describe)
    r = gsub.add_parser("reset", help="set a stopped share group's start offsets "
                                      "(in-flight records are dropped)")
    r.add_argument("group")
    r.add_argument("--to", required=True, metavar="POS", help=SPELLINGS)
    r.add_argument("--topic", action="append", metavar="TOPIC",
                   help="all partitions of TOPIC (repeatable; default: the partitions the "
                        "group has read)")
    r.add_argument("--dry-run", action="store_true", help="print the plan, change nothing")
    r.set_defaults(func=_reset)
    rm = gsub.add_parser("delete", help="delete share groups without members")
    rm.add_argument("groups", nargs="+", metavar="group")
    rm.set_defaults(func=_delete)
    for sp in (ls, d, r, rm):
        add_client_flags(sp)


def _brokers(admin) -> list[tuple[int, str, int]]:
    return sorted((b.id, b.host, b.port) for b in admin.metadata().brokers.values())


def list_share_groups_doc(admin, brokers=None) -> dict:
    """{"groups": [{"group_id", "state"}] sorted, "warnings": [one per broker
    that did not answer], "complete"}: ListGroups (type share) at
    ``brokers`` ((id, host, port); default every registered broker)."""
    from headrace.share_wire import list_share_groups

    deadline = admin.read_deadline()
    answers, errors = admin.ask_each(brokers if brokers is not None else _brokers(admin),
                                     deadline, list_share_groups)
    warnings = [f"broker {i} did not list its share groups: {why}"
                for i, why in sorted(errors.items())]
    groups = sorted({gid: state for listed in answers.values() for gid, state in listed}.items())
    return {"groups": [{"group_id": g, "state": s} for g, s in groups],
            "warnings": warnings, "complete": not warnings}


class UnknownShareGroup(CliError):
    """The coordinator does not know the group (GROUP_ID_NOT_FOUND)."""


def describe_share_group_doc(admin, group: str) -> dict:
    """ShareGroupDescribe and DescribeShareGroupOffsets of ``group`` at its
    coordinator: state, epochs, assignor, members with their subscriptions
    and assignments, and per partition the share-partition start offset
    (None: never read) and the lag (end offset - start offset). Raises
    UnknownShareGroup, or CliError naming the reason."""
    from headrace.admin_wire import Connection
    from headrace.share_wire import describe_share_group, describe_share_group_offsets
    from headrace.wire_codec import WireError, error_name

    deadline = admin.read_deadline()
    _, host, port = admin.group_coordinator(group, _brokers(admin), deadline)
    try:
        conn = Connection(host, port, admin.timeout, admin.settings)
        try:
            g = describe_share_group(conn, group)
            offsets = describe_share_group_offsets(conn, group) \
                if g.error_code == 0 else None
        finally:
            conn.close()
    except (WireError, OSError) as e:
        raise CliError(f"share group {group}: {e}") from None
    if g.error_code == GROUP_ID_NOT_FOUND:
        raise UnknownShareGroup(f"unknown share group {group!r}")
    if g.error_code:
        raise CliError(f"share group {group}: {g.error_message or error_name(g.error_code)}")
    return {"group_id": g.group_id, "state": g.state, "group_epoch": g.group_epoch,
            "assignment_epoch": g.assignment_epoch, "assignor": g.assignor,
            "members": [{"member_id": m.member_id, "member_epoch": m.member_epoch,
                         "client_id": m.client_id, "client_host": m.client_host,
                         "subscribed_topics": m.subscribed,
                         "assignment": {t: ps for t, ps in sorted(m.assignment.items())}}
                        for m in g.members],
            "partitions": _partition_rows(admin, offsets)}


def _partition_rows(admin, offsets) -> list[dict]:
    """[{"topic", "partition", "start_offset", "end_offset", "lag", "error"}]
    sorted: the share-partition start offsets with the partitions' end
    offsets (lag: records from the start offset on, not all delivered yet)."""
    from confluent_kafka import TopicPartition

    from headrace.wire_codec import error_name

    if offsets is None or offsets.error_code:
        return []
    parts = sorted(offsets.partitions.items())
    ends = admin.list_offsets([TopicPartition(t, p) for (t, p), (_, code) in parts
                               if code == 0], "latest")
    rows = []
    for (t, p), (start, code) in parts:
        end = ends.get((t, p))
        known = code == 0 and start >= 0
        rows.append({"topic": t, "partition": p,
                     "start_offset": start if known else None, "end_offset": end,
                     "lag": max(end - start, 0) if known and end is not None else None,
                     "error": error_name(code) if code else None})
    return rows


def _list(args) -> int:
    doc = list_share_groups_doc(admin_for(args))
    for line in doc["warnings"]:
        print(f"headrace: warning: {line}", file=sys.stderr)

    def table():
        for g in doc["groups"]:
            print(f"{g['group_id']}\t{g['state']}")

    return emit(args, doc, table)


def _describe(args) -> int:
    doc = describe_share_group_doc(admin_for(args), args.group)

    def table():
        print(f"group {doc['group_id']}: {doc['state']}, epoch {doc['group_epoch']}, "
              f"{len(doc['members'])} member(s)")
        for m in doc["members"]:
            parts = " ".join(f"{t}:{','.join(map(str, ps))}"
                             for t, ps in m["assignment"].items()) or "-"
            print(f"{m['member_id']}\t{m['client_id']}\t{m['client_host']}\t{parts}")
        if doc["partitions"]:
            print("TOPIC\tPARTITION\tSTART-OFFSET\tEND-OFFSET\tLAG")
        for r in doc["partitions"]:
            def cell(v):
                return "-" if v is None else str(v)
            tail = f"\t{r['error']}" if r["error"] else ""
            print(f"{r['topic']}\t{r['partition']}\t{cell(r['start_offset'])}\t"
                  f"{cell(r['end_offset'])}\t{cell(r['lag'])}{tail}")

    return emit(args, doc, table)


def _reset(args) -> int:
    """AlterShareGroupOffsets at the group's coordinator: each partition's
    share-partition starts over at the position (clamped into the log, as
    `group seek`), its in-flight records dropped."""
    from confluent_kafka import TopicPartition

    from headrace.admin_wire import Connection
    from headrace.share_wire import alter_share_group_offsets
    from headrace.wire_codec import WireError, error_name

    to = parse_position(args.to)
    admin = admin_for(args)
    try:
        doc = describe_share_group_doc(admin, args.group)
    except UnknownShareGroup:
        doc = {"members": [], "partitions": []}  # never joined: its offsets can be set
    if doc["members"]:
        raise CliError(f"share group {args.group} has {len(doc['members'])} active members; "
                       f"stop them before resetting")
    current = {(r["topic"], r["partition"]): r["start_offset"] for r in doc["partitions"]}
    if args.topic:
        tps = [TopicPartition(t, p) for t in args.topic
               for p in sorted(admin.topic_metadata(t).partitions)]
    else:
        tps = [TopicPartition(t, p) for t, p in sorted(current)]
        if not tps:
            raise CliError(f"share group {args.group!r} has read no partitions; name the "
                           f"topics with --topic")
    target = resolve(admin, tps, to)
    print("TOPIC\tPARTITION\tFROM\tTO")
    for (t, p), o in sorted(target.items()):
        start = current.get((t, p))
        print(f"{t}\t{p}\t{'-' if start is None else start}\t{o}")
    if args.dry_run:
        print("dry run: nothing changed")
        return 0
    _, host, port = admin.group_coordinator(args.group, _brokers(admin), admin.read_deadline())
    try:
        conn = Connection(host, port, admin.timeout, admin.settings)
        try:
            answers = alter_share_group_offsets(conn, args.group, target)
        finally:
            conn.close()
    except (WireError, OSError) as e:
        raise CliError(f"share group {args.group}: {e}") from None
    failed = [f"{t}[{p}]: {message or error_name(code)}"
              for (t, p), (code, message) in sorted(answers.items()) if code]
    if failed:
        raise CliError(f"share group {args.group}: not reset: " + "; ".join(failed))
    return 0


def _delete(args) -> int:
    admin = admin_for(args)
    for g in args.groups:
        admin.delete_group(g)
        print(f"deleted share group {g}")
    return 0
