"""``headrace consume --share-group G --ack ...`` (docs/cli.md,
docs/share-groups.md): records read as a member of a share group with
confluent-kafka's ShareConsumer and acknowledged as --ack says; a released
record is delivered again to the next member, an accepted one never.
Real broker, real CLI processes."""
from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest
from confluent_kafka import Producer

from cli_run import headrace, ok, one_error_line

pytestmark = pytest.mark.timeout(180)


def _share_cli(b, topic: str, group: str, *extra: str) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if k != "HEADRACE_BROKERS"}
    return subprocess.Popen([sys.executable, "-m", "headrace.cli", "consume", topic,
                             "--brokers", b, "--share-group", group, "--idle", "60", *extra],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True)


def _probe_until_exit(b, topic: str, proc: subprocess.Popen, timeout: float = 90) -> list[str]:
    """Produces probe-0, probe-1, ... until ``proc`` exits (a new share
    group starts at the end of the log: records before its first fetch are
    not its); ``proc``'s output lines."""
    p = Producer({"bootstrap.servers": b, "linger.ms": 0})
    deadline = time.monotonic() + timeout
    i = 0
    while proc.poll() is None:
        assert time.monotonic() < deadline, "the share consumer never finished"
        p.produce(topic, f"probe-{i}".encode())
        p.flush(10)
        i += 1
        time.sleep(0.2)
    out, err = proc.communicate()
    assert proc.returncode == 0, err
    return out.splitlines()


def test_accepted_records_are_printed_once(module_broker):
    b = module_broker.bootstrap
    ok(headrace("topic", "create", "sq-accept", brokers=b))
    lines = _probe_until_exit(b, "sq-accept",
                              _share_cli(b, "sq-accept", "g-accept", "--count", "5"))
    assert len(lines) == 5
    first = int(lines[0].split("-")[1])
    assert lines == [f"probe-{first + k}" for k in range(5)]  # in offset order, no gap


def test_a_released_record_goes_to_the_next_member(module_broker):
    b = module_broker.bootstrap
    ok(headrace("topic", "create", "sq-release", brokers=b))
    released = _probe_until_exit(
        b, "sq-release",
        _share_cli(b, "sq-release", "g-release", "--count", "1", "--ack", "release"))
    assert len(released) == 1
    # The next member of the group gets the released record first.
    again = ok(headrace("consume", "sq-release", "--share-group", "g-release", "--count", "1",
                        "--idle", "30", brokers=b))
    assert again.stdout.splitlines() == released


def test_share_group_refuses_what_a_share_group_cannot_do(module_broker):
    b = module_broker.bootstrap
    one_error_line(headrace("consume", "t", "--share-group", "g", "--from", "earliest",
                            brokers=b), "--share-group", "--from")
    one_error_line(headrace("consume", "^t.*", "--share-group", "g", brokers=b),
                   "regular expressions")
    one_error_line(headrace("consume", "t", "--ack", "reject", brokers=b),
                   "need --share-group")


def test_share_group_list_describe_and_delete(module_broker):
    """A member running: the group is listed (Stable) and described with
    its member's assignment; once it left, delete removes the group."""
    import json

    b = module_broker.bootstrap
    ok(headrace("topic", "create", "sq-admin", "--partitions", "2", brokers=b))
    member = _share_cli(b, "sq-admin", "g-admin", "--count", "1")
    try:
        deadline = time.monotonic() + 60
        while True:
            listed = json.loads(ok(headrace("share-group", "list", "--format", "json",
                                            brokers=b)).stdout)["groups"]
            if {"group_id": "g-admin", "state": "Stable"} in listed:
                break
            assert time.monotonic() < deadline, listed
            time.sleep(0.3)
        doc = json.loads(ok(headrace("share-group", "describe", "g-admin", "--format", "json",
                                     brokers=b)).stdout)
        assert doc["state"] == "Stable" and len(doc["members"]) == 1
        assert doc["members"][0]["subscribed_topics"] == ["sq-admin"]
        assert doc["members"][0]["assignment"] == {"sq-admin": [0, 1]}
        # Not a consumer group: `group list` leaves it out (ListGroups of
        # types consumer and classic), `group describe` points to share-group.
        assert "g-admin" not in ok(headrace("group", "list", brokers=b)).stdout
        one_error_line(headrace("group", "describe", "g-admin", brokers=b),
                       "share-group describe g-admin")
        one_error_line(headrace("share-group", "delete", "g-admin", brokers=b), "g-admin")
    finally:
        _probe_until_exit(b, "sq-admin", member)
    deadline = time.monotonic() + 60
    while headrace("share-group", "delete", "g-admin", brokers=b).returncode != 0:
        assert time.monotonic() < deadline, "the group kept its member"
        time.sleep(0.5)
    assert "g-admin" not in ok(headrace("share-group", "list", brokers=b)).stdout
    one_error_line(headrace("share-group", "describe", "nope", brokers=b), "nope")


def test_share_group_describe_shows_start_offsets_and_lag(module_broker):
    """DescribeShareGroupOffsets through `share-group describe`: after a
    member accepted 4 of 10 records, partition 0's start offset is 4 and its
    lag 6; the partition with no records starts at 0 with lag 0."""
    import json

    from confluent_kafka.admin import AdminClient

    from test_group_configs import _alter

    b = module_broker.bootstrap
    ok(headrace("topic", "create", "sq-offsets", "--partitions", "2", brokers=b))
    _alter(AdminClient({"bootstrap.servers": b}), "g-offsets",
           {"share.auto.offset.reset": "earliest"})
    p = Producer({"bootstrap.servers": b, "linger.ms": 0})
    for i in range(10):
        p.produce("sq-offsets", f"r-{i}".encode(), partition=0)
    p.flush(10)
    got = ok(headrace("consume", "sq-offsets", "--share-group", "g-offsets", "--count", "4",
                      "--idle", "30", brokers=b))
    assert got.stdout.splitlines() == [f"r-{i}" for i in range(4)]
    doc = json.loads(ok(headrace("share-group", "describe", "g-offsets", "--format", "json",
                                 brokers=b)).stdout)
    rows = {r["partition"]: r for r in doc["partitions"] if r["topic"] == "sq-offsets"}
    assert rows[0] == {"topic": "sq-offsets", "partition": 0, "start_offset": 4,
                       "end_offset": 10, "lag": 6, "error": None}, rows
    assert rows[1]["start_offset"] == 0 and rows[1]["lag"] == 0, rows
    table = ok(headrace("share-group", "describe", "g-offsets", brokers=b)).stdout
    assert "sq-offsets\t0\t4\t10\t6" in table, table


def test_share_group_reset_sets_the_start_offsets(module_broker):
    """AlterShareGroupOffsets through `share-group reset`: a stopped group
    is moved back to the earliest offset and reads every record again
    (delivery count 1: its in-flight state is gone); moved to an offset,
    it reads from there; a group with a member is refused."""
    import json

    from confluent_kafka.admin import AdminClient

    from test_group_configs import _alter

    b = module_broker.bootstrap
    ok(headrace("topic", "create", "sq-reset", brokers=b))
    _alter(AdminClient({"bootstrap.servers": b}), "g-reset",
           {"share.auto.offset.reset": "earliest"})
    p = Producer({"bootstrap.servers": b, "linger.ms": 0})
    for i in range(6):
        p.produce("sq-reset", f"r-{i}".encode())
    p.flush(10)
    first = ok(headrace("consume", "sq-reset", "--share-group", "g-reset", "--count", "6",
                        "--idle", "30", brokers=b))
    assert first.stdout.splitlines() == [f"r-{i}" for i in range(6)]

    def start():
        doc = json.loads(ok(headrace("share-group", "describe", "g-reset", "--format", "json",
                                     brokers=b)).stdout)
        return {r["partition"]: r["start_offset"] for r in doc["partitions"]}

    assert start() == {0: 6}
    plan = ok(headrace("share-group", "reset", "g-reset", "--to", "earliest", "--dry-run",
                       brokers=b)).stdout
    assert "sq-reset\t0\t6\t0" in plan and "dry run" in plan, plan
    assert start() == {0: 6}
    ok(headrace("share-group", "reset", "g-reset", "--to", "earliest", brokers=b))
    assert start() == {0: 0}
    again = ok(headrace("consume", "sq-reset", "--share-group", "g-reset", "--count", "6",
                        "--idle", "30", brokers=b))
    assert again.stdout.splitlines() == [f"r-{i}" for i in range(6)]
    ok(headrace("share-group", "reset", "g-reset", "--to", "4", "--topic", "sq-reset",
                brokers=b))
    tail = ok(headrace("consume", "sq-reset", "--share-group", "g-reset", "--count", "2",
                       "--idle", "30", brokers=b))
    assert tail.stdout.splitlines() == ["r-4", "r-5"]

    # A member that stays (it waits for a 7th record): a reset is refused,
    # by the CLI once it sees the member, or by the broker (NON_EMPTY_GROUP)
    # if the member joined after the CLI looked.
    member = _share_cli(b, "sq-reset", "g-reset", "--count", "7")
    try:
        deadline = time.monotonic() + 60
        while True:
            r = headrace("share-group", "reset", "g-reset", "--to", "earliest", brokers=b)
            if r.returncode != 0:
                break
            assert time.monotonic() < deadline, "reset never refused with a member"
            time.sleep(0.3)
        line = one_error_line(r, "g-reset")
        assert "active members" in line or "NON_EMPTY_GROUP" in line, line
    finally:
        _probe_until_exit(b, "sq-reset", member)
