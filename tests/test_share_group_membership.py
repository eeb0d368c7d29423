"""Share-group membership over the wire (KIP-932, issue 31): ShareGroupHeartbeat
v1 and ShareGroupDescribe v1 as a Kafka 4.2 share consumer sends them
(flexible versions, encoded by hand from the pinned schemas), against a
real broker: join, the assignment by topic id, a second member splitting
the partitions, describe, leave, and the errors a client meets.
"""
from __future__ import annotations

import contextlib
import struct
import uuid

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from headrace.admin_wire import Connection, list_groups
from headrace.wire_codec import NO_TAGS, carray, cstr

SHARE_HEARTBEAT, SHARE_DESCRIBE = 76, 77
GROUP_ID_NOT_FOUND, UNKNOWN_MEMBER_ID, INVALID_REQUEST = 69, 25, 42
FENCED_MEMBER_EPOCH = 110


@pytest.fixture(scope="module")
def orders(module_broker):
    """Topic "orders" (4 partitions): its id."""
    from confluent_kafka import TopicCollection

    admin = AdminClient({"bootstrap.servers": module_broker.bootstrap})
    admin.create_topics([NewTopic("orders", 4, 1)])["orders"].result(30)
    tid = admin.describe_topics(TopicCollection(["orders"]))["orders"].result(30).topic_id
    return uuid.UUID(bytes=struct.pack(">qq", tid.get_most_significant_bits(),
                                       tid.get_least_significant_bits()))


@contextlib.contextmanager
def _conn(broker):
    conn = Connection(broker.host, broker.port, 10)
    try:
        yield conn
    finally:
        conn.close()


def heartbeat(conn, group, member, epoch, topics=None):
    """ShareGroupHeartbeat v1 -> (error, message, member id, epoch, interval,
    assignment {topic uuid: [partitions]} or None)."""
    body = (cstr(group) + cstr(member) + struct.pack(">i", epoch) + cstr(None) +
            carray(None if topics is None else [cstr(t) for t in topics]) + NO_TAGS)
    r = conn.call(SHARE_HEARTBEAT, 1, body)
    r.int32()  # throttle
    error, message = r.int16(), r.cstring()
    member_id, member_epoch, interval = r.cstring(), r.int32(), r.int32()
    assignment = None
    if r.int8() >= 0:  # a nullable struct: -1 null, else present

        def topic_partitions(r):
            tid = uuid.UUID(bytes=r._take(16))
            parts = r.carray(lambda r: r.int32())
            r.tags()
            return tid, parts

        assignment = dict(r.carray(topic_partitions))
        r.tags()
    r.tags()
    return error, message, member_id, member_epoch, interval, assignment


def describe(conn, group):
    """ShareGroupDescribe v1 -> (error, state, group epoch, {member: (epoch,
    subscribed, {topic name: partitions})})."""
    r = conn.call(SHARE_DESCRIBE, 1, carray([cstr(group)]) + b"\0" + NO_TAGS)
    r.int32()

    def member(r):
        mid, _rack, epoch = r.cstring(), r.cstring(), r.int32()
        r.cstring(), r.cstring()  # client id, host
        subscribed = r.carray(lambda r: r.cstring())

        def tp(r):
            r._take(16)
            name, parts = r.cstring(), r.carray(lambda r: r.int32())
            r.tags()
            return name, parts

        assigned = dict(r.carray(tp))
        r.tags()  # assignment struct
        r.tags()
        return mid, (epoch, subscribed, assigned)

    def group_(r):
        err, _msg, gid, state = r.int16(), r.cstring(), r.cstring(), r.cstring()
        epoch, _assignment_epoch, assignor = r.int32(), r.int32(), r.cstring()
        members = dict(r.carray(member))
        r.int32()  # authorized operations
        r.tags()
        return err, state, epoch, assignor, members

    groups = r.carray(group_)
    return groups[0]


def test_members_join_share_the_partitions_and_leave(module_broker, orders):
    group = f"sg-{uuid.uuid4().hex[:8]}"
    a_id, b_id = uuid.uuid4().hex, uuid.uuid4().hex
    with _conn(module_broker) as a, _conn(module_broker) as b:
        err, _, mid, epoch, interval, asg = heartbeat(a, group, a_id, 0, ["orders"])
        assert (err, mid, epoch, interval) == (0, a_id, 1, 5000)
        assert asg == {orders: [0, 1, 2, 3]}

        err, _, _, epoch_b, _, asg_b = heartbeat(b, group, b_id, 0, ["orders"])
        assert (err, epoch_b) == (0, 2)
        err, _, _, epoch_a, _, asg_a = heartbeat(a, group, a_id, 1)
        assert (err, epoch_a) == (0, 2)
        assert sorted(asg_a[orders] + asg_b[orders]) == [0, 1, 2, 3]
        assert set(asg_a[orders]).isdisjoint(asg_b[orders])
        # Nothing changed since: no assignment in the answer.
        assert heartbeat(a, group, a_id, 2)[5] is None

        err, state, gepoch, assignor, members = describe(a, group)
        assert (err, state, gepoch, assignor) == (0, "Stable", 2, "simple")
        assert members[a_id] == (2, ["orders"], {"orders": sorted(asg_a[orders])})
        assert members[b_id][2] == {"orders": sorted(asg_b[orders])}
        listed = {g: state for g, _, state in list_groups(a)}
        assert listed[group] == "Stable"

        assert heartbeat(a, group, a_id, -1)[:4] == (0, None, a_id, -1)
        assert heartbeat(b, group, b_id, -1)[0] == 0
        assert describe(a, group)[1] == "Empty"


def test_a_share_consumer_meets_kafkas_errors(module_broker, orders):
    group = f"sg-{uuid.uuid4().hex[:8]}"
    with _conn(module_broker) as c:
        member = uuid.uuid4().hex
        assert heartbeat(c, group, member, 0, ["orders"])[0] == 0
        assert heartbeat(c, group, member, 7)[0] == FENCED_MEMBER_EPOCH
        assert heartbeat(c, group, uuid.uuid4().hex, 1)[0] == UNKNOWN_MEMBER_ID
        assert heartbeat(c, group, "", 0, ["orders"])[0] == INVALID_REQUEST
        # A join without its topics.
        assert heartbeat(c, group, uuid.uuid4().hex, 0)[0] == INVALID_REQUEST
        assert describe(c, "no-such-share-group")[0] == GROUP_ID_NOT_FOUND
