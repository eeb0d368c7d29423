"""Share-group admin requests the Python clients lack (KIP-932, Kafka 4.2
schemas pinned in cpp/protocol/schemas): ListGroups filtered to share
groups and ShareGroupDescribe v1, over headrace.admin_wire's Connection."""
from __future__ import annotations

from dataclasses import dataclass, field

from headrace.admin_wire import Connection, list_groups
from headrace.wire_codec import NO_TAGS, Reader, WireError, carray, cstr


def list_share_groups(conn: Connection) -> list[tuple[str, str]]:
    """[(group id, state)] of the share groups this broker coordinates."""
    return [(gid, state) for gid, _, state in list_groups(conn, ("share",))]


@dataclass
class ShareMember:
    member_id: str
    member_epoch: int
    client_id: str
    client_host: str
    rack_id: str | None
    subscribed: list[str]
    assignment: dict[str, list[int]]  # topic name -> partitions


@dataclass
class ShareGroupAnswer:
    error_code: int
    error_message: str | None
    group_id: str
    state: str
    group_epoch: int
    assignment_epoch: int
    assignor: str
    members: list[ShareMember] = field(default_factory=list)


def describe_share_group(conn: Connection, group: str) -> ShareGroupAnswer:
    """ShareGroupDescribe v1 of ``group`` at its coordinator ``conn``."""
    r = conn.call(77, 1, carray([cstr(group)]) + b"\x00" + NO_TAGS)
    r.int32()

    def topic_partitions(r: Reader):
        r.int64(), r.int64()  # the topic id (uuid)
        name = r.cstring()
        parts = r.carray(lambda r: r.int32())
        r.tags()
        return name, parts

    def member(r: Reader) -> ShareMember:
        member_id, rack, epoch = r.cstring(), r.cstring(), r.int32()
        client_id, host = r.cstring(), r.cstring()
        subscribed = r.carray(lambda r: r.cstring())
        assigned = r.carray(topic_partitions)
        r.tags()  # Assignment's
        r.tags()
        return ShareMember(member_id, epoch, client_id, host, rack, subscribed,
                           {name: sorted(parts) for name, parts in assigned})

    def described(r: Reader) -> ShareGroupAnswer:
        code, message, gid, state = r.int16(), r.cstring(), r.cstring(), r.cstring()
        group_epoch, assignment_epoch, assignor = r.int32(), r.int32(), r.cstring()
        members = r.carray(member)
        r.int32()  # authorized operations
        r.tags()
        return ShareGroupAnswer(code, message, gid, state, group_epoch, assignment_epoch,
                                assignor, members)

    groups = r.carray(described)
    if not groups:
        raise WireError(f"broker {conn.address}: describe share group: no answer for {group!r}")
    return groups[0]


def _topic_results(partition):
    """A reader of one topic of the share-offsets answers: (name, [partition
    results]) — name, topic id, partitions, tags."""
    def topic(r: Reader):
        name = r.cstring()
        r.int64(), r.int64()  # the topic id (uuid)
        parts = r.carray(partition)
        r.tags()
        return name, parts
    return topic


@dataclass
class ShareOffsetsAnswer:
    """DescribeShareGroupOffsets of one group: its error, and per (topic,
    partition) the share-partition start offset (-1: never read) and the
    partition's error code."""
    error_code: int
    error_message: str | None
    partitions: dict[tuple[str, int], tuple[int, int]] = field(default_factory=dict)


def describe_share_group_offsets(conn: Connection, group: str) -> ShareOffsetsAnswer:
    """DescribeShareGroupOffsets v0 (key 90) of ``group`` at its coordinator
    ``conn``, for every topic the group reads (Topics null)."""
    body = carray([cstr(group) + b"\x00" + NO_TAGS]) + NO_TAGS  # Topics null
    r = conn.call(90, 0, body)
    r.int32()

    def partition(r: Reader):
        index, start = r.int32(), r.int64()
        r.int32()  # the leader epoch
        code = r.int16()
        r.cstring()
        r.tags()
        return index, start, code

    def described(r: Reader) -> ShareOffsetsAnswer:
        gid = r.cstring()
        topics = r.carray(_topic_results(partition))
        code, message = r.int16(), r.cstring()
        r.tags()
        return ShareOffsetsAnswer(code, message, {
            (name, index): (start, pcode) for name, parts in topics
            for index, start, pcode in parts}) if gid is not None else \
            ShareOffsetsAnswer(code, message)

    groups = r.carray(described)
    if not groups:
        raise WireError(f"broker {conn.address}: describe share group offsets: "
                        f"no answer for {group!r}")
    return groups[0]


def alter_share_group_offsets(conn: Connection, group: str,
                              starts: dict[tuple[str, int], int]) -> dict[tuple[str, int], tuple[int, str | None]]:
    """AlterShareGroupOffsets v0 (key 91) at ``group``'s coordinator
    ``conn``: {(topic, partition): (error code, message)} for ``starts``
    {(topic, partition): new start offset}."""
    import struct

    by_topic: dict[str, list[tuple[int, int]]] = {}
    for (t, p), o in sorted(starts.items()):
        by_topic.setdefault(t, []).append((p, o))
    topics = [cstr(t) + carray([struct.pack(">iq", p, o) + NO_TAGS for p, o in ps]) + NO_TAGS
              for t, ps in by_topic.items()]
    r = conn.call(91, 0, cstr(group) + carray(topics) + NO_TAGS)
    r.int32()

    def partition(r: Reader):
        index, code, message = r.int32(), r.int16(), r.cstring()
        r.tags()
        return index, code, message

    return {(name, index): (code, message) for name, parts in r.carray(_topic_results(partition))
            for index, code, message in parts}
