"""`headrace group list|describe|seek|delete` end to end against a real
broker process: members and assignments of a live consumer, per-partition
lag, seek (earliest, latest, offset, timestamp, --dry-run) of a stopped
group, refusal to seek a group with members, and unknown groups."""
from __future__ import annotations

import time

import pytest
from confluent_kafka import Consumer

from cli_run import headrace, ok, one_error_line

pytestmark = pytest.mark.timeout(120)


def _lag_rows(text: str) -> dict[int, list[str]]:
    lines = text.splitlines()
    i = lines.index("TOPIC\tPARTITION\tCOMMITTED\tEND\tLAG\tMEMBER")
    return {int(ln.split("\t")[1]): ln.split("\t") for ln in lines[i + 1:]}


@pytest.fixture
def committed_group(module_broker, request):
    """A topic with 2 partitions (3 and 1 records) and a stopped group that
    consumed 2 records of partition 0."""
    b = module_broker.bootstrap
    t = f"grp-{request.node.name[:40]}"
    g = f"{t}-g"
    ok(headrace("topic", "create", t, "--partitions", "2", brokers=b))
    ok(headrace("produce", t, "--partition", "0", input="a\nb\nc\n", brokers=b))
    ok(headrace("produce", t, "--partition", "1", input="z\n", brokers=b))
    ok(headrace("group", "seek", g, "--topic", t, "--to", "2", brokers=b))
    return b, t, g


def test_describe_shows_lag_and_list_shows_group(committed_group):
    b, t, g = committed_group
    assert f"{g}\tEMPTY" in ok(headrace("group", "list", brokers=b)).stdout.splitlines()
    out = ok(headrace("group", "describe", g, brokers=b)).stdout
    assert out.splitlines()[0] == f"group {g}: state EMPTY, 0 members, assignor -"
    rows = _lag_rows(out)
    assert rows[0] == [t, "0", "2", "3", "1", "-"]
    assert rows[1] == [t, "1", "1", "1", "0", "-"]   # offset 2 clamped to the end (1)


def test_describe_live_member_assignment_and_seek_refused(committed_group):
    b, t, g = committed_group
    c = Consumer({"bootstrap.servers": b, "group.id": g, "client.id": "live-one",
                  "enable.auto.commit": False})
    try:
        c.subscribe([t])
        deadline = time.monotonic() + 30
        while not c.assignment() and time.monotonic() < deadline:
            c.poll(0.2)
        out = ok(headrace("group", "describe", g, brokers=b)).stdout
        assert "1 members" in out and "STABLE" in out
        member_line = [ln for ln in out.splitlines() if "\tlive-one\t" in ln]
        assert len(member_line) == 1 and f"{t}[0],{t}[1]" in member_line[0]
        one_error_line(headrace("group", "seek", g, "--to", "earliest", brokers=b),
                       "active members")
    finally:
        c.close()


def test_seek_dry_run_earliest_latest_timestamp(committed_group):
    b, t, g = committed_group
    r = ok(headrace("group", "seek", g, "--to", "earliest", "--dry-run", brokers=b))
    assert f"{t}\t0\t2\t0" in r.stdout and "dry run" in r.stdout
    assert _lag_rows(ok(headrace("group", "describe", g, brokers=b)).stdout)[0][2] == "2"
    ok(headrace("group", "seek", g, "--to", "earliest", brokers=b))
    assert _lag_rows(ok(headrace("group", "describe", g, brokers=b)).stdout)[0][2:5] == \
        ["0", "3", "3"]
    ok(headrace("group", "seek", g, "--to", "latest", brokers=b))
    assert _lag_rows(ok(headrace("group", "describe", g, brokers=b)).stdout)[0][2:5] == \
        ["3", "3", "0"]
    ok(headrace("group", "seek", g, "--to", f"@{int(time.time() * 1000) + 60_000}", brokers=b))
    assert _lag_rows(ok(headrace("group", "describe", g, brokers=b)).stdout)[0][2] == "3"
    ok(headrace("group", "seek", g, "--to", "@0", brokers=b))
    consumed = ok(headrace("consume", t, "--group", g, brokers=b)).stdout.split()
    assert sorted(consumed) == ["a", "b", "c", "z"]


def test_delete_and_unknown_group(committed_group):
    b, t, g = committed_group
    ok(headrace("group", "delete", g, brokers=b))
    assert g not in ok(headrace("group", "list", brokers=b)).stdout
    one_error_line(headrace("group", "describe", g, brokers=b), "unknown group")
    one_error_line(headrace("group", "seek", "never-used", "--to", "earliest", brokers=b),
                   "no committed offsets")
    one_error_line(headrace("group", "list", "--timeout", "2", brokers="127.0.0.1:1"),
                   "unreachable")
