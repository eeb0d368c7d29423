"""The KIP-848 consumer group protocol end to end: librdkafka's
`group.protocol=consumer` (confluent-kafka 2.16) against a real `headrace
broker` (issue 17, item 7), plus group sessions that end exactly at their
deadline (item 6).

Each member is this file run as a script (`python test_consumer_group_protocol.py
member ...`). It prints one JSON line per event: {"ev": "assign"|"revoke",
"parts": [...], "t": monotonic seconds} from its rebalance callbacks (so the
test can check that no partition is ever owned by two members at once: the
broker hands a partition over only after its owner's revoke callback
returned and it acknowledged the revocation), and {"ev": "msg", "v": ...}
per record. Members commit synchronously in their revoke callback and every
few records, so across rebalances every record is consumed exactly once.
"""
from __future__ import annotations

import os
import signal
import struct
import sys
import threading
import time

SESSION_MS = 4000        # group.consumer.session.timeout.ms of the test broker
HEARTBEAT_MS = 250       # group.consumer.heartbeat.interval.ms
CLASSIC_SESSION_MS = 1500


# --------------------------------------------------------------------------- member process
from member_process import emit as _emit  # noqa: E402


def _member_main(argv):
    from confluent_kafka import Consumer, TopicPartition
    bootstrap, topic, group, instance, protocol, assignor = argv
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    conf = {"bootstrap.servers": bootstrap, "group.id": group, "group.protocol": protocol,
            "auto.offset.reset": "earliest", "enable.auto.commit": False,
            "fetch.wait.max.ms": 100}
    if protocol == "classic":
        conf.update({"session.timeout.ms": CLASSIC_SESSION_MS * 4, "heartbeat.interval.ms": 300})
    elif assignor:
        conf["group.remote.assignor"] = assignor
    if instance:
        conf["group.instance.id"] = instance
    c = Consumer(conf)
    uncommitted = {}

    def commit(parts):
        offs = [TopicPartition(topic, p, uncommitted[p]) for p in parts if p in uncommitted]
        if offs:
            c.commit(offsets=offs, asynchronous=False)
            for tp in offs:
                uncommitted.pop(tp.partition, None)

    def on_assign(_c, parts):
        _emit({"ev": "assign", "parts": sorted(tp.partition for tp in parts), "t": time.monotonic()})

    def on_revoke(_c, parts):
        ps = [tp.partition for tp in parts]
        commit(ps)
        _emit({"ev": "revoke", "parts": sorted(ps), "t": time.monotonic()})

    c.subscribe([topic], on_assign=on_assign, on_revoke=on_revoke, on_lost=on_revoke)
    n = 0
    while not stop.is_set():
        m = c.poll(0.1)
        if m is None or m.error() is not None:
            continue
        _emit({"ev": "msg", "v": m.value().decode(), "p": m.partition()})
        uncommitted[m.partition()] = m.offset() + 1
        n += 1
        if n % 10 == 0:
            commit(list(uncommitted))
    commit(list(uncommitted))
    c.close()


if __name__ == "__main__" and len(sys.argv) > 1 and sys.argv[1] == "member":
    _member_main(sys.argv[2:])
    sys.exit(0)


# --------------------------------------------------------------------------- test side
import pytest  # noqa: E402
from broker_kafka_clients import ConfluentClient, Out  # noqa: E402
from broker_process import shared_broker  # noqa: E402
from broker_wire import Connection, kstring  # noqa: E402
from member_process import MemberProcess, member_fixture  # noqa: E402
from member_process import wait_for as _wait_for  # noqa: E402

WAIT_S = 30.0
BROKER_ARGS = ("--set", "group.initial.rebalance.delay.ms=0",
               "--set", "group.min.session.timeout.ms=1000",
               "--set", "group.consumer.min.session.timeout.ms=1000",
               "--set", f"group.consumer.session.timeout.ms={SESSION_MS}",
               "--set", "group.consumer.min.heartbeat.interval.ms=100",
               "--set", f"group.consumer.heartbeat.interval.ms={HEARTBEAT_MS}")


class Member(MemberProcess):
    """One member process and what it has reported."""

    def __init__(self, bootstrap, topic, group, instance="", protocol="consumer", assignor=""):
        self.owned: set[int] = set()
        self.events: list[dict] = []  # assign/revoke, in order
        self.values: list[str] = []
        super().__init__([sys.executable, os.path.abspath(__file__), "member", bootstrap, topic,
                          group, instance, protocol, assignor])

    def on_event(self, ev):
        if ev["ev"] == "msg":
            self.values.append(ev["v"])
            return
        self.events.append(ev)
        if ev["ev"] == "assign":
            self.owned |= set(ev["parts"])
        else:
            self.owned -= set(ev["parts"])

    def history(self):
        return str(self.events)

    def parts(self):
        with self.lock:
            return sorted(self.owned)


members = member_fixture(Member)


@pytest.fixture(scope="module")
def cbroker(tmp_path_factory):
    yield from shared_broker(tmp_path_factory, "kip848-broker", *BROKER_ARGS)


def wait_for(pred, what, timeout=WAIT_S, ms=()):
    _wait_for(pred, what, timeout, ms)


def exclusive_cover(ms, partitions):
    owned = [p for m in ms for p in m.parts()]
    return sorted(owned) == list(range(partitions))


def produce(bootstrap, topic, n, start=0, partitions=6):
    ConfluentClient(bootstrap).produce(
        topic, [Out(value=f"m{i}".encode(), partition=i % partitions) for i in range(start, start + n)])
    return {f"m{i}" for i in range(start, start + n)}


def all_values(ms):
    out = []
    for m in ms:
        with m.lock:
            out.extend(m.values)
    return out


def never_owned_twice(ms):
    """Ownership intervals [assign, revoke] of one partition never overlap
    across members (times are CLOCK_MONOTONIC, shared by the processes)."""
    intervals: dict[int, list[tuple[float, float, int]]] = {}
    for i, m in enumerate(ms):
        with m.lock:
            open_at: dict[int, float] = {}
            for ev in m.events:
                for p in ev["parts"]:
                    if ev["ev"] == "assign":
                        open_at[p] = ev["t"]
                    elif p in open_at:
                        intervals.setdefault(p, []).append((open_at.pop(p), ev["t"], i))
            for p, t in open_at.items():
                intervals.setdefault(p, []).append((t, float("inf"), i))
    for p, ivs in intervals.items():
        ivs.sort()
        for (s1, e1, m1), (s2, e2, m2) in zip(ivs, ivs[1:]):
            assert s2 >= e1, f"partition {p} owned by members {m1} and {m2} at once: {ivs}"


def create(bootstrap, topic, partitions):
    ConfluentClient(bootstrap).create_topic(topic, partitions)


# --------------------------------------------------------------------------- tests
def test_three_members_share_partitions_and_consume_exactly_once(cbroker, members):
    create(cbroker.bootstrap, "kc-share", 6)
    ms = [members(cbroker.bootstrap, "kc-share", "share") for _ in range(2)]
    wait_for(lambda: exclusive_cover(ms, 6) and all(len(m.parts()) == 3 for m in ms),
             "2 members x 3 partitions", ms=ms)
    expected = produce(cbroker.bootstrap, "kc-share", 120)
    ms.append(members(cbroker.bootstrap, "kc-share", "share"))  # rebalance while consuming
    expected |= produce(cbroker.bootstrap, "kc-share", 120, start=120)
    wait_for(lambda: exclusive_cover(ms, 6) and all(len(m.parts()) == 2 for m in ms),
             "3 members x 2 partitions", ms=ms)
    expected |= produce(cbroker.bootstrap, "kc-share", 60, start=240)
    wait_for(lambda: set(all_values(ms)) >= expected, "every record consumed", ms=ms)
    time.sleep(0.5)
    values = all_values(ms)
    duplicated = len(values) - len(set(values))
    lost = len(expected - set(values))
    assert (lost, duplicated) == (0, 0)
    never_owned_twice(ms)


def test_killed_member_partitions_move_after_the_session_timeout(cbroker, members):
    create(cbroker.bootstrap, "kc-kill", 6)
    ms = [members(cbroker.bootstrap, "kc-kill", "kill", assignor="range") for _ in range(2)]
    wait_for(lambda: exclusive_cover(ms, 6) and all(len(m.parts()) == 3 for m in ms),
             "2 members x 3 partitions", ms=ms)
    expected = produce(cbroker.bootstrap, "kc-kill", 60)
    wait_for(lambda: set(all_values(ms)) >= expected, "first 60 consumed", ms=ms)
    victim, survivor = ms
    victim.kill()  # SIGKILL: no leave heartbeat
    killed_at = time.monotonic()
    expected |= produce(cbroker.bootstrap, "kc-kill", 60, start=60)
    wait_for(lambda: survivor.parts() == list(range(6)), "survivor owns all 6 partitions",
             timeout=SESSION_MS / 1000 + 10, ms=ms)
    moved_after = time.monotonic() - killed_at
    # Not before the session timeout (minus a heartbeat of slack), not long after.
    assert SESSION_MS / 1000 - 0.5 <= moved_after < SESSION_MS / 1000 + 5, moved_after
    wait_for(lambda: set(all_values(ms)) >= expected, "every record consumed (at least once)")
    assert expected <= set(all_values(ms))


def test_static_member_rejoin_keeps_its_assignment(cbroker, members):
    create(cbroker.bootstrap, "kc-static", 6)
    a = members(cbroker.bootstrap, "kc-static", "statics", instance="inst-a")
    b = members(cbroker.bootstrap, "kc-static", "statics", instance="inst-b")
    wait_for(lambda: exclusive_cover([a, b], 6) and len(a.parts()) == 3, "two static members",
             ms=[a, b])
    a_parts = a.parts()
    time.sleep(1.0)
    b_events = len(b.events)
    a.stop()  # a static member's close leaves with epoch -2: it keeps its partitions
    a2 = members(cbroker.bootstrap, "kc-static", "statics", instance="inst-a")
    wait_for(lambda: a2.parts() == a_parts, "the restarted instance gets its partitions back",
             ms=[a2, b])
    time.sleep(1.0)
    assert len(b.events) == b_events, f"b was rebalanced: {b.events}"


def test_classic_and_consumer_protocol_groups_on_one_broker(cbroker, members):
    create(cbroker.bootstrap, "kc-mixed", 6)
    new = members(cbroker.bootstrap, "kc-mixed", "mixed-new")
    old = members(cbroker.bootstrap, "kc-mixed", "mixed-classic", protocol="classic")
    wait_for(lambda: exclusive_cover([new], 6) and exclusive_cover([old], 6), "both groups assigned",
             ms=[new, old])
    expected = produce(cbroker.bootstrap, "kc-mixed", 60)
    wait_for(lambda: set(all_values([new])) >= expected and set(all_values([old])) >= expected,
             "each group consumes everything")
    from confluent_kafka import ConsumerGroupType
    from confluent_kafka.admin import AdminClient
    admin = AdminClient({"bootstrap.servers": cbroker.bootstrap})
    listed = {g.group_id: g for g in admin.list_consumer_groups().result(30).valid}
    assert listed["mixed-new"].type == ConsumerGroupType.CONSUMER
    assert listed["mixed-classic"].type == ConsumerGroupType.CLASSIC
    only_new = admin.list_consumer_groups(types={ConsumerGroupType.CONSUMER}).result(30).valid
    assert "mixed-new" in {g.group_id for g in only_new}
    assert "mixed-classic" not in {g.group_id for g in only_new}
    desc = admin.describe_consumer_groups(["mixed-new", "mixed-classic"])
    d_new, d_old = desc["mixed-new"].result(30), desc["mixed-classic"].result(30)
    assert d_new.type == ConsumerGroupType.CONSUMER
    assert d_old.type == ConsumerGroupType.CLASSIC
    assert len(d_new.members) == 1
    assert sorted(tp.partition for tp in d_new.members[0].assignment.topic_partitions) == list(range(6))


def test_broker_restart_keeps_offsets_and_the_group_goes_on(broker_factory, members, tmp_path):
    b = broker_factory(tmp_path / "data", *BROKER_ARGS)
    create(b.bootstrap, "kc-restart", 6)
    m = members(b.bootstrap, "kc-restart", "restarters")
    wait_for(lambda: exclusive_cover([m], 6), "member assigned", ms=[m])
    expected = produce(b.bootstrap, "kc-restart", 60)
    wait_for(lambda: set(all_values([m])) >= expected, "first 60 consumed")
    time.sleep(0.5)  # commits every 10 records
    b.restart()
    expected |= produce(b.bootstrap, "kc-restart", 60, start=60)
    wait_for(lambda: set(all_values([m])) >= expected, "consumed after the restart", ms=[m])
    m.stop()  # commits what it consumed
    values = all_values([m])
    assert len(values) == len(set(values)), "records consumed twice after the restart"
    from confluent_kafka import Consumer, TopicPartition
    reader = Consumer({"bootstrap.servers": b.bootstrap, "group.id": "restarters"})
    try:
        committed = reader.committed([TopicPartition("kc-restart", p) for p in range(6)], timeout=30)
    finally:
        reader.close()
    assert sum(tp.offset for tp in committed) == 120  # 20 records per partition, all committed


# --------------------------------------------------------------------------- exact session expiry
DELETE_GROUPS, CONSUMER_GROUP_HEARTBEAT = 42, 68
NON_EMPTY_GROUP = 68


def _kbytes(b: bytes) -> bytes:
    return struct.pack(">i", len(b)) + b


def _call(conn, api, version, body):
    conn.send_request(api, version, body)
    return conn.recv_response()[1]


def _delete_group(conn, group):
    r = _call(conn, DELETE_GROUPS, 1, struct.pack(">i", 1) + kstring(group))
    r.i32()
    return dict(r.array(lambda r: (r.string(), r.i16())))[group]


def _uvarint(n):
    out = b""
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out += bytes([b | 0x80])
        else:
            return out + bytes([b])


def _cstr(s):
    if s is None:
        return b"\x00"
    b = s.encode()
    return _uvarint(len(b) + 1) + b


def _consumer_heartbeat(conn, group, member, epoch, topic):
    """ConsumerGroupHeartbeat v0 (flexible: header v2) -> (error, member id, epoch)."""
    body = (_cstr(group) + _cstr(member) + struct.pack(">i", epoch) + _cstr(None) + _cstr(None) +
            struct.pack(">i", 10000 if epoch == 0 else -1) +
            (_uvarint(2) + _cstr(topic) if epoch == 0 else b"\x00") + _cstr(None) +
            (_uvarint(1) if epoch == 0 else b"\x00") + b"\x00")
    cid = conn.next_correlation_id
    conn.next_correlation_id += 1
    header = struct.pack(">hhi", CONSUMER_GROUP_HEARTBEAT, 0, cid) + kstring("raw-test") + b"\x00"
    conn.send_raw(struct.pack(">i", len(header + body)) + header + body)
    _, r = conn.recv_response()
    assert r.take(1) == b"\x00"  # response header tags
    r.i32()
    err = r.i16()
    n = r.take(1)[0]  # error message (short or null)
    r.take(max(n - 1, 0))
    n = r.take(1)[0]
    member_id = r.take(n - 1).decode() if n else None
    return err, member_id, r.i32()


def test_classic_session_ends_exactly_at_its_deadline(cbroker):
    import test_groups_errors as raw
    with Connection(cbroker.address) as conn:
        err, _, _, member = raw.join_v4(conn, "exact-classic", session_ms=CLASSIC_SESSION_MS)
        err, gen, _, member = raw.join_v4(conn, "exact-classic", member, session_ms=CLASSIC_SESSION_MS)
        assert err == 0
        assert raw.sync_v1(conn, "exact-classic", gen, member, [(member, b"a")])[0] == 0
        assert raw.heartbeat(conn, "exact-classic", gen, member) == 0
        time.sleep(CLASSIC_SESSION_MS / 1000)  # exactly the session timeout after the heartbeat
        assert _delete_group(conn, "exact-classic") == 0


def test_consumer_session_ends_exactly_at_its_deadline(cbroker):
    create(cbroker.bootstrap, "kc-exact", 2)
    with Connection(cbroker.address) as conn:
        err, member, epoch = _consumer_heartbeat(conn, "exact-new", "", 0, "kc-exact")
        assert (err, epoch) == (0, 1)
        assert _delete_group(conn, "exact-new") == NON_EMPTY_GROUP
        err, _, _ = _consumer_heartbeat(conn, "exact-new", member, epoch, "kc-exact")
        assert err == 0
        time.sleep(SESSION_MS / 1000)
        assert _delete_group(conn, "exact-new") == 0
