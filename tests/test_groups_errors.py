"""Consumer group APIs given bad input answer the proper Kafka error codes
(raw wire requests at non-flexible versions; layouts from the protocol guide)."""
from __future__ import annotations

import struct

import pytest

from broker_kafka_clients import ConfluentClient
from broker_wire import Connection, kstring

JOIN, HEARTBEAT, SYNC, COMMIT, FETCH, DELETE_GROUPS, FIND = 11, 12, 14, 8, 9, 42, 10
ILLEGAL_GENERATION, INVALID_GROUP_ID, UNKNOWN_MEMBER_ID = 22, 24, 25
INVALID_SESSION_TIMEOUT, REBALANCE_IN_PROGRESS = 26, 27
UNKNOWN_TOPIC_OR_PARTITION, NON_EMPTY_GROUP, GROUP_ID_NOT_FOUND = 3, 68, 69
MEMBER_ID_REQUIRED, INCONSISTENT_GROUP_PROTOCOL = 79, 23


def kbytes(b: bytes) -> bytes:
    return struct.pack(">i", len(b)) + b


def call(conn, api, version, body):
    conn.send_request(api, version, body)
    return conn.recv_response()[1]


def join_v4(conn, group, member="", session_ms=6000, protocol="range"):
    """JoinGroup v4 -> (error, generation, leader, member_id)."""
    body = (kstring(group) + struct.pack(">ii", session_ms, 10000) + kstring(member) +
            kstring("consumer") + struct.pack(">i", 1) + kstring(protocol) + kbytes(b"meta"))
    r = call(conn, JOIN, 4, body)
    r.i32()  # throttle
    err, gen = r.i16(), r.i32()
    r.string()  # protocol name
    leader, member_id = r.string(), r.string()
    return err, gen, leader, member_id


def heartbeat(conn, group, gen, member):
    r = call(conn, HEARTBEAT, 1, kstring(group) + struct.pack(">i", gen) + kstring(member))
    r.i32()
    return r.i16()


def sync_v1(conn, group, gen, member, assignments=()):
    body = kstring(group) + struct.pack(">i", gen) + kstring(member) + struct.pack(">i", len(assignments))
    for m, a in assignments:
        body += kstring(m) + kbytes(a)
    r = call(conn, SYNC, 1, body)
    r.i32()
    return r.i16(), r.nbytes()


def commit_v2(conn, group, gen, member, topic, partition, offset):
    body = (kstring(group) + struct.pack(">i", gen) + kstring(member) + struct.pack(">q", -1) +
            struct.pack(">i", 1) + kstring(topic) + struct.pack(">i", 1) +
            struct.pack(">iq", partition, offset) + kstring("md"))
    r = call(conn, COMMIT, 2, body)
    topics = r.array(lambda r: (r.string(), r.array(lambda r: (r.i32(), r.i16()))))
    return topics[0][1][0][1]


def fetch_v1(conn, group, topic, partition):
    body = kstring(group) + struct.pack(">i", 1) + kstring(topic) + struct.pack(">ii", 1, partition)
    r = call(conn, FETCH, 1, body)
    topics = r.array(lambda r: (r.string(), r.array(
        lambda r: (r.i32(), r.i64(), r.string(), r.i16()))))
    _, offset, metadata, err = topics[0][1][0]
    return offset, metadata, err


def delete_groups(conn, *groups):
    body = struct.pack(">i", len(groups)) + b"".join(kstring(g) for g in groups)
    r = call(conn, DELETE_GROUPS, 1, body)
    r.i32()
    return dict(r.array(lambda r: (r.string(), r.i16())))


@pytest.fixture(scope="module")
def conn(module_broker):
    ConfluentClient(module_broker.bootstrap).create_topic("errs", 2)
    with Connection(module_broker.address) as c:
        yield c


def test_find_coordinator_names_this_broker(conn, module_broker):
    r = call(conn, FIND, 1, kstring("any-group") + struct.pack(">b", 0))
    r.i32()
    err = r.i16()
    r.string()
    assert err == 0 and r.i32() == 0
    assert (r.string(), r.i32()) == module_broker.address


def test_join_errors(conn):
    assert join_v4(conn, "")[0] == INVALID_GROUP_ID
    assert join_v4(conn, "g-bad", session_ms=10)[0] == INVALID_SESSION_TIMEOUT
    assert join_v4(conn, "g-bad", member="nobody")[0] == UNKNOWN_MEMBER_ID
    err, _, _, member = join_v4(conn, "g-bad")
    assert err == MEMBER_ID_REQUIRED and member
    err, gen, leader, member2 = join_v4(conn, "g-bad", member=member)
    assert (err, gen, leader, member2) == (0, 1, member, member)
    # A member whose only protocol the group does not support.
    with Connection(conn.sock.getpeername()) as other:
        assert join_v4(other, "g-bad", protocol="other")[0] == INCONSISTENT_GROUP_PROTOCOL


def test_heartbeat_sync_and_commit_errors(conn):
    _, _, _, member = join_v4(conn, "g-hb")
    err, gen, _, _ = join_v4(conn, "g-hb", member=member)
    assert err == 0
    assert heartbeat(conn, "g-hb", gen, "stranger") == UNKNOWN_MEMBER_ID
    assert heartbeat(conn, "g-none", 1, member) == UNKNOWN_MEMBER_ID
    assert heartbeat(conn, "g-hb", gen + 5, member) == ILLEGAL_GENERATION
    assert sync_v1(conn, "g-hb", gen + 5, member)[0] == ILLEGAL_GENERATION
    # Joined but not synced: a commit waits for the assignment.
    assert commit_v2(conn, "g-hb", gen, member, "errs", 0, 5) == REBALANCE_IN_PROGRESS
    assert sync_v1(conn, "g-hb", gen, member, [(member, b"asg")]) == (0, b"asg")
    assert heartbeat(conn, "g-hb", gen, member) == 0
    assert commit_v2(conn, "g-hb", gen, member, "errs", 0, 5) == 0
    assert commit_v2(conn, "g-hb", gen + 1, member, "errs", 0, 5) == ILLEGAL_GENERATION
    assert commit_v2(conn, "g-hb", gen, "stranger", "errs", 0, 5) == UNKNOWN_MEMBER_ID
    assert commit_v2(conn, "g-hb", gen, member, "no-such-topic", 0, 5) == UNKNOWN_TOPIC_OR_PARTITION
    assert commit_v2(conn, "g-hb", gen, member, "errs", 9, 5) == UNKNOWN_TOPIC_OR_PARTITION
    assert commit_v2(conn, "", -1, "", "errs", 0, 5) == INVALID_GROUP_ID
    assert fetch_v1(conn, "g-hb", "errs", 0) == (5, "md", 0)
    assert fetch_v1(conn, "g-hb", "errs", 1) == (-1, "", 0)
    assert delete_groups(conn, "g-hb", "g-never") == {"g-hb": NON_EMPTY_GROUP,
                                                      "g-never": GROUP_ID_NOT_FOUND}


def test_simple_consumer_commit_then_delete_group(conn):
    assert commit_v2(conn, "g-simple", -1, "", "errs", 1, 17) == 0
    assert fetch_v1(conn, "g-simple", "errs", 1) == (17, "md", 0)
    assert delete_groups(conn, "g-simple") == {"g-simple": 0}
    assert fetch_v1(conn, "g-simple", "errs", 1) == (-1, "", 0)
