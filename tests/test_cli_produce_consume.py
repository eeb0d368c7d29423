"""`headrace produce` and `headrace consume` end to end against a real broker
process: keys, headers, partitions, compression, acks, every start position,
--count, --follow, the three output formats, group mode, progress bar only on
a terminal, and the error paths."""
from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
import time

import pytest

from cli_run import headrace, ok, one_error_line

pytestmark = pytest.mark.timeout(120)


def _topic(b, name, partitions=1):
    ok(headrace("topic", "create", name, "--partitions", str(partitions), brokers=b))
    return name


def test_lines_round_trip_with_keys_and_headers(module_broker):
    b = module_broker.bootstrap
    t = _topic(b, "pc-basic")
    r = ok(headrace("produce", t, "--key-separator", ":", "--header", "src=cli",
                    "--header", "v=2", input="k1:hello\nk2:wo:rld\nnokey\n", brokers=b))
    assert r.stderr.strip() == f"headrace: produced 3 of 3 records to {t} (partition:records 0:3)"
    assert r.stdout == ""
    assert ok(headrace("consume", t, "--from", "earliest", "--count", "3", brokers=b)).stdout \
        == "hello\nwo:rld\nnokey\n"
    fmt = ok(headrace("consume", t, "--format", r"%t|%p|%o|%k|%s|%h\n", brokers=b)).stdout
    assert fmt.splitlines() == [f"{t}|0|0|k1|hello|src=cli,v=2", f"{t}|0|1|k2|wo:rld|src=cli,v=2",
                                f"{t}|0|2||nokey|src=cli,v=2"]
    docs = [json.loads(ln) for ln in
            ok(headrace("consume", t, "--format", "json", brokers=b)).stdout.splitlines()]
    assert [(d["offset"], d["key"], d["value"]) for d in docs] == \
        [(0, "k1", "hello"), (1, "k2", "wo:rld"), (2, None, "nokey")]
    assert docs[0]["headers"] == [["src", "cli"], ["v", "2"]]
    assert docs[0]["topic"] == t and docs[0]["partition"] == 0
    assert docs[0]["timestamp"] > 1_600_000_000_000


def test_start_positions(module_broker):
    b = module_broker.bootstrap
    t = _topic(b, "pc-positions")
    ok(headrace("produce", t, input="a\nb\n", brokers=b))
    time.sleep(0.05)
    mid = int(time.time() * 1000)
    time.sleep(0.05)
    ok(headrace("produce", t, input="c\nd\n", brokers=b))
    assert ok(headrace("consume", t, "--from", "1", brokers=b)).stdout == "b\nc\nd\n"
    assert ok(headrace("consume", t, "--from", f"@{mid}", brokers=b)).stdout == "c\nd\n"
    assert ok(headrace("consume", t, "--from", "latest", brokers=b)).stdout == ""
    assert ok(headrace("consume", t, "--count", "0", brokers=b)).stdout == ""
    one_error_line(headrace("consume", t, "--from", "yesterday", brokers=b), "yesterday")


def test_file_partition_compression_acks(module_broker, tmp_path):
    b = module_broker.bootstrap
    t = _topic(b, "pc-file", partitions=2)
    f = tmp_path / "in.txt"
    f.write_text("".join(f"line-{i}\n" for i in range(500)))
    for codec, acks in (("gzip", "all"), ("zstd", "1"), ("lz4", "0")):
        r = ok(headrace("produce", t, "--file", str(f), "--partition", "1", "--compression",
                        codec, "--acks", acks, brokers=b))
        assert "produced 500 of 500" in r.stderr and "1:500" in r.stderr, r.stderr
    out = ok(headrace("consume", t, "--partition", "1", brokers=b)).stdout.splitlines()
    assert out == [f"line-{i}" for i in range(500)] * 3
    assert ok(headrace("consume", t, "--partition", "0", brokers=b)).stdout == ""


def test_piped_stderr_has_no_progress_bar_but_a_terminal_does(module_broker, tmp_path):
    b = module_broker.bootstrap
    t = _topic(b, "pc-progress")
    f = tmp_path / "in.txt"
    f.write_text("x\n" * 2000)
    r = ok(headrace("produce", t, "--file", str(f), brokers=b))
    assert "\r" not in r.stderr and "\x1b" not in r.stderr and "[" not in r.stderr
    assert r.stderr.count("\n") == 1
    # Same command with stderr on a pseudo-terminal: the bar is drawn there.
    master, slave = pty.openpty()
    p = subprocess.run([sys.executable, "-m", "headrace.cli", "produce", t, "--file", str(f),
                        "--brokers", b], stdout=subprocess.PIPE, stderr=slave,
                       stdin=subprocess.DEVNULL, timeout=60)
    os.close(slave)
    tty_text = b""
    try:
        while chunk := os.read(master, 65536):
            tty_text += chunk
    except OSError:
        pass
    os.close(master)
    assert p.returncode == 0 and p.stdout == b""
    assert b"\r[" in tty_text and b"100%" in tty_text and b"produced 2000 of 2000" in tty_text


def test_follow_prints_records_produced_later(module_broker):
    b = module_broker.bootstrap
    t = _topic(b, "pc-follow")
    ok(headrace("produce", t, input="first\n", brokers=b))
    p = subprocess.Popen([sys.executable, "-m", "headrace.cli", "consume", t, "--follow",
                          "--count", "2", "--brokers", b], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
    assert p.stdout.readline() == b"first\n"
    ok(headrace("produce", t, input="second\n", brokers=b))
    out, err = p.communicate(timeout=30)
    assert out == b"second\n" and p.returncode == 0, err


def test_group_consumes_once_and_commits(module_broker):
    b = module_broker.bootstrap
    t = _topic(b, "pc-group", partitions=2)
    ok(headrace("produce", t, "-K", ":", input="a:1\nb:2\nc:3\nd:4\n", brokers=b))
    first = ok(headrace("consume", t, "--group", "pc-g", brokers=b)).stdout.split()
    assert sorted(first) == ["1", "2", "3", "4"]
    assert ok(headrace("consume", t, "--group", "pc-g", brokers=b)).stdout == ""
    ok(headrace("produce", t, input="5\n", brokers=b))
    assert ok(headrace("consume", t, "--group", "pc-g", brokers=b)).stdout == "5\n"


def test_error_paths(module_broker):
    b = module_broker.bootstrap
    one_error_line(headrace("consume", "pc-missing", brokers=b), "unknown topic", "pc-missing")
    t = _topic(b, "pc-errors")
    one_error_line(headrace("produce", t, "--partition", "7", input="x\n", brokers=b),
                   "no partition 7")
    one_error_line(headrace("produce", t, "--header", "novalue", input="x\n", brokers=b),
                   "KEY=VALUE")
    one_error_line(headrace("produce", t, "--file", "/nonexistent/f", brokers=b), "cannot read")
    for cmd in (("consume", t), ("produce", t)):
        one_error_line(headrace(*cmd, "--timeout", "2", input="x\n", brokers="127.0.0.1:1"),
                       "unreachable")
