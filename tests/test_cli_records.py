"""`headrace produce` / `consume` beyond lines of text, against one real
broker process: broker auto-create, tombstones as confluent-kafka sees them,
byte-exact values with newlines and binary, several topics and regexes,
relative and time positions with --to ranges, the kcat-like reset of an
out-of-range --from, delete-records, and Ctrl-C."""
from __future__ import annotations

import base64
import json
import os
import signal
import subprocess
import sys
import time

import pytest
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, OffsetSpec

from broker_process import GROUP_ARGS, shared_broker
from cli_run import headrace, ok, one_error_line

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(scope="module")
def rb(tmp_path_factory):
    yield from shared_broker(tmp_path_factory, "records-broker", *GROUP_ARGS)


def _raw(*args: str, brokers: str, input: bytes = b"") -> subprocess.CompletedProcess:
    """The command line with bytes in and out."""
    r = subprocess.run([sys.executable, "-m", "headrace.cli", *args, "--brokers", brokers],
                       input=input, capture_output=True, timeout=60)
    assert r.returncode == 0, r.stderr.decode()
    return r


def _records(bootstrap: str, topic: str, n: int) -> list:
    """The first n records of partition 0 of `topic`, read by confluent-kafka."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "rec-check",
                  "enable.auto.commit": False})
    try:
        c.assign([TopicPartition(topic, 0, 0)])
        out = []
        deadline = time.monotonic() + 20
        while len(out) < n and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is not None and m.error() is None:
                out.append(m)
        return out
    finally:
        c.close()


def _offsets(bootstrap: str, topic: str, partition: int, spec) -> int:
    a = AdminClient({"bootstrap.servers": bootstrap})
    tp = TopicPartition(topic, partition)
    return a.list_offsets({tp: spec}, request_timeout=10)[tp].result(timeout=10).offset


def test_produce_relies_on_broker_auto_create(rb):
    t = "rec-auto-created"
    r = ok(headrace("produce", t, input="one\ntwo\n", brokers=rb.bootstrap))
    assert "produced 2 of 2" in r.stderr
    assert [m.value() for m in _records(rb.bootstrap, t, 2)] == [b"one", b"two"]


def test_tombstones_are_null_values_for_confluent_kafka(rb):
    b = rb.bootstrap
    ok(headrace("topic", "create", "rec-tomb", brokers=b))
    ok(headrace("produce", "rec-tomb", "-K", ":", "-Z", input="a:1\nb:\nc:\n", brokers=b))
    ok(headrace("produce", "rec-tomb", "--tombstone", input="d\n", brokers=b))
    ok(headrace("produce", "rec-tomb", input="\n", brokers=b))  # without -Z: empty, not null
    got = [(m.key(), m.value()) for m in _records(b, "rec-tomb", 5)]
    assert got == [(b"a", b"1"), (b"b", None), (b"c", None), (b"d", None), (None, b"")]
    docs = [json.loads(ln) for ln in
            ok(headrace("consume", "rec-tomb", "--format", "json", brokers=b)).stdout.splitlines()]
    assert [d["value"] for d in docs] == ["1", None, None, None, ""]
    assert ok(headrace("consume", "rec-tomb", "-Z", "--format", r"%k=%s|%S\n",
                       brokers=b)).stdout.splitlines() == \
        ["a=1|1", "b=NULL|-1", "c=NULL|-1", "d=NULL|-1", "NULL=|0"]


def test_newline_and_binary_values_round_trip_byte_exact(rb, tmp_path):
    b = rb.bootstrap
    ok(headrace("topic", "create", "rec-nul", brokers=b))
    values = [b"two\nlines", b"crlf\r\n", b"tab\tand \\ backslash", b"\x80\xff\xfe high",
              b"", b"last\n"]
    _raw("produce", "rec-nul", "-D", "", brokers=b, input=b"\0".join(values))
    out = _raw("consume", "rec-nul", "-D", r"\0", brokers=b).stdout
    assert out == b"".join(v + b"\0" for v in values)
    # Any bytes at all (NUL included): a whole file as one record, read back as base64.
    blob = bytes(range(256)) * 3 + b"\n\0\n"
    f = tmp_path / "blob.bin"
    f.write_bytes(blob)
    ok(headrace("topic", "create", "rec-blob", brokers=b))
    _raw("produce", "rec-blob", "--value-file", str(f), "-k", "blob", brokers=b)
    doc = json.loads(_raw("consume", "rec-blob", "--format", "json", "--encoding", "base64",
                          brokers=b).stdout)
    assert base64.b64decode(doc["value"]) == blob
    assert base64.b64decode(doc["key"]) == b"blob"
    # hex in, hex out, through a key delimiter
    ok(headrace("topic", "create", "rec-hex", brokers=b))
    _raw("produce", "rec-hex", "--encoding", "hex", "-K", ":", brokers=b,
         input=b"6b31:000a0d\n:ff\n")
    assert _raw("consume", "rec-hex", "--encoding", "hex", "--format", r"%k/%s\n",
                brokers=b).stdout == b"6b31/000a0d\n/ff\n"
    assert [(m.key(), m.value()) for m in _records(b, "rec-hex", 2)] == \
        [(b"k1", b"\x00\n\r"), (b"", b"\xff")]


def test_several_topics_and_regex(rb):
    b = rb.bootstrap
    for t, n in (("rx-orders-eu", 3), ("rx-orders-us", 2), ("rx-other", 4)):
        ok(headrace("produce", t, input="".join(f"{t}:{i}\n" for i in range(n)), brokers=b))
    fmt = ("--format", r"%t %s\n")

    def topics(r):
        return sorted(ln.split()[0] for ln in ok(r).stdout.splitlines())

    assert topics(headrace("consume", "-t", "^rx-orders-.*", *fmt, brokers=b)) == \
        ["rx-orders-eu"] * 3 + ["rx-orders-us"] * 2
    assert topics(headrace("consume", "--topic-regex", "rx-orders-u", "rx-other", *fmt,
                           brokers=b)) == ["rx-orders-us"] * 2 + ["rx-other"] * 4
    assert topics(headrace("consume", "-t", "rx-orders-eu", "-t", "rx-other", *fmt,
                           brokers=b)) == ["rx-orders-eu"] * 3 + ["rx-other"] * 4
    # a group subscribes to the regex itself; --count ends it once all arrived
    assert topics(headrace("consume", "-t", "^rx-orders-.*", "--group", "rx-g", "--count", "5",
                           *fmt, brokers=b)) == ["rx-orders-eu"] * 3 + ["rx-orders-us"] * 2
    one_error_line(headrace("consume", "-t", "^nothing-matches-.*", brokers=b), "no topic")


def test_relative_offsets_times_and_ranges(rb):
    b = rb.bootstrap
    t = "rec-ranges"
    ok(headrace("topic", "create", t, "--partitions", "2", brokers=b))
    for p in (0, 1):
        ok(headrace("produce", t, "-p", str(p), input="".join(f"{p}-{i}\n" for i in range(15)),
                    brokers=b))
    time.sleep(0.05)
    mid = int(time.time() * 1000)
    time.sleep(0.05)
    for p in (0, 1):
        ok(headrace("produce", t, "-p", str(p), input="".join(f"{p}-{i}\n" for i in
                                                               range(15, 30)), brokers=b))
    fmt = ("--format", r"%p %o\n")

    def rows(*args):
        return sorted(tuple(map(int, ln.split())) for ln in
                      ok(headrace("consume", t, *fmt, *args, brokers=b)).stdout.splitlines())

    assert rows("--from", "-10") == [(p, o) for p in (0, 1) for o in range(20, 30)]
    assert rows("--from", "5", "--to", "8") == [(p, o) for p in (0, 1) for o in (5, 6, 7)]
    assert rows("--from", f"@{mid}") == [(p, o) for p in (0, 1) for o in range(15, 30)]
    assert rows("--to", f"@{mid}", "-p", "1") == [(1, o) for o in range(15)]
    assert rows("--from", "@-1h", "--to", "-25") == [(p, o) for p in (0, 1) for o in range(5)]
    iso = time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(mid / 1000 - 3600))
    assert len(rows("--from", f"@{iso}")) == 60
    assert rows("--from", "-10", "--count", "3", "-p", "0") == [(0, 20), (0, 21), (0, 22)]
    r = ok(headrace("consume", t, "--from", "1000", "-p", "0", brokers=b))
    assert r.stdout == ""
    assert "warning: offset 1000 is past the end of rec-ranges[0] (30); starting at the end" \
        in r.stderr
    one_error_line(headrace("consume", t, "--from", "@yesterday", brokers=b), "@yesterday")


def test_delete_records_moves_the_log_start(rb):
    b = rb.bootstrap
    t = "rec-delete"
    ok(headrace("produce", t, input="".join(f"{i}\n" for i in range(10)), brokers=b))
    r = ok(headrace("topic", "delete-records", t, "--partition", "0", "--before", "4",
                    "--format", "json", brokers=b))
    assert json.loads(r.stdout) == {"topic": t, "partitions": [
        {"partition": 0, "log_start_offset": 4}]}
    assert _offsets(b, t, 0, OffsetSpec.earliest()) == 4
    # An offset before the new start resets to it, with a warning (kcat-like).
    r = ok(headrace("consume", t, "--from", "1", brokers=b))
    assert r.stdout.split() == [str(i) for i in range(4, 10)]
    assert "before the start of rec-delete[0] (4); starting at the start" in r.stderr
    r = ok(headrace("topic", "delete-records", t, "--before", "end", brokers=b))
    assert r.stdout.splitlines()[1:] == [f"{t}\t0\t10"]
    assert _offsets(b, t, 0, OffsetSpec.earliest()) == 10
    one_error_line(headrace("topic", "delete-records", t, "--before", "soon", brokers=b),
                   "--before")


def _interrupt(argv: list[str], ready, stdin=subprocess.DEVNULL) -> tuple[int, float, str]:
    """Starts the command, waits for `ready(proc)`, sends SIGINT; (exit code,
    seconds from the signal to the exit, stderr)."""
    p = subprocess.Popen([sys.executable, "-m", "headrace.cli", *argv], stdin=stdin,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        ready(p)
        t0 = time.monotonic()
        p.send_signal(signal.SIGINT)
        _, err = p.communicate(timeout=30)
        return p.returncode, time.monotonic() - t0, err.decode()
    finally:
        if p.poll() is None:
            p.kill()


def test_ctrl_c_ends_consume_and_produce_at_once(rb):
    b = rb.bootstrap
    ok(headrace("produce", "rec-sigint", input="x\n", brokers=b))
    code, took, err = _interrupt(["consume", "rec-sigint", "--follow", "--brokers", b],
                                 lambda p: p.stdout.readline())
    assert (code, "Traceback" in err) == (130, False), err
    assert took < 2.0
    r, w = os.pipe()  # stdin that stays open: produce waits in a read
    try:
        code, took, err = _interrupt(["produce", "rec-sigint", "--brokers", b],
                                     lambda p: time.sleep(1.5), stdin=r)
    finally:
        os.close(r)
        os.close(w)
    assert (code, "Traceback" in err) == (130, False), err
    assert took < 2.0
