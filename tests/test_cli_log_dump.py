"""`headrace log dump PATH`: offline decoding of a segment file (no broker)."""
from __future__ import annotations

import json

import pytest

import headrace
from cli_run import headrace as run, ok, one_error_line

pytestmark = pytest.mark.timeout(60)

SEGMENT = "00000000000000000000.log"


@pytest.fixture
def segment(tmp_path):
    """A log with two batches: offsets 0-1 (one with headers, one null key) and 2."""
    with headrace.Log(tmp_path / "t-0") as log:
        log.append([{"key": b"k1", "value": b"v1", "timestamp": 1000},
                    {"key": None, "value": b"v2", "headers": [("h", b"x")], "timestamp": 1001}])
        log.append([{"key": b"k3", "value": b"v3", "timestamp": 2000}])
    return tmp_path / "t-0" / SEGMENT


def test_dump_lists_every_batch_and_record(segment):
    r = ok(run("log", "dump", str(segment)))
    lines = r.stdout.splitlines()
    assert lines[0].startswith("batch position=0 offsets=0..1 records=2 ")
    assert lines[0].endswith("crc ok")
    assert lines[1] == "  offset=0 timestamp=1000 key=k1 value=v1"
    assert lines[2] == "  offset=1 timestamp=1001 key=null value=v2 headers=h=x"
    assert lines[3].startswith("batch position=85 offsets=2..2 records=1 ")
    assert lines[4] == "  offset=2 timestamp=2000 key=k3 value=v3"
    assert r.stderr.strip() == "headrace: 2 batches, 3 records, 0 invalid"


def test_dump_json_has_header_fields(segment):
    r = ok(run("log", "dump", str(segment), "--json"))
    batches = [json.loads(line) for line in r.stdout.splitlines()]
    assert [(b["base_offset"], b["last_offset"], b["valid"]) for b in batches] == [(0, 1, True), (2, 2, True)]
    assert batches[0]["records"][1] == {"offset": 1, "key": None, "value": "v2",
                                        "headers": [["h", "x"]], "timestamp": 1001}
    assert batches[0]["compression"] == "none" and batches[0]["magic"] == 2


def test_dump_flags_a_flipped_byte_and_exits_1(segment):
    data = bytearray(segment.read_bytes())
    data[-1] ^= 0xFF  # inside the second batch's last record: CRC no longer matches
    segment.write_bytes(bytes(data))
    r = run("log", "dump", str(segment), "--no-records")
    assert r.returncode == 1
    lines = r.stdout.splitlines()
    assert lines[0].endswith("crc ok")
    assert "INVALID" in lines[1] and "CRC" in lines[1].upper()
    assert "1 invalid" in r.stderr


def test_dump_reports_a_torn_tail(segment):
    with open(segment, "ab") as f:
        f.write(b"\x00\x00\x00")
    r = run("log", "dump", str(segment), "--no-records")
    assert r.returncode == 1
    assert len(r.stdout.splitlines()) == 2
    assert "3 bytes at position 157 are not a whole batch" in r.stderr


def test_dump_of_a_missing_file_is_one_error_line(tmp_path):
    one_error_line(run("log", "dump", str(tmp_path / "nope.log")), "cannot read", "nope.log")
