"""`headrace log dump PATH`: offline decoding of a segment file (no broker)."""
from __future__ import annotations

import json

import pytest

import headrace
from batch_builder import TRANSACTIONAL, encode_batch, encode_control_batch
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


@pytest.fixture
def txn_segment(tmp_path):
    """Hand-built: a transactional batch (offsets 0-1) of producer 7 epoch 2,
    its COMMIT marker (offset 2, coordinator epoch 5), a plain batch (3) and
    an ABORT marker (4) of producer 8."""
    path = tmp_path / SEGMENT
    path.write_bytes(
        encode_batch([(b"k1", b"v1"), (b"k2", b"v2")], base_offset=0, producer_id=7,
                     producer_epoch=2, base_sequence=0, attributes=TRANSACTIONAL)
        + encode_control_batch(True, producer_id=7, producer_epoch=2, coordinator_epoch=5,
                               base_offset=2)
        + encode_batch([(b"k3", b"v3")], base_offset=3)
        + encode_control_batch(False, producer_id=8, producer_epoch=0, coordinator_epoch=6,
                               base_offset=4))
    return path


def test_dump_shows_transactional_and_control_batches(txn_segment):
    r = ok(run("log", "dump", str(txn_segment)))
    lines = r.stdout.splitlines()
    assert lines[0].startswith("batch position=0 offsets=0..1 records=2 ")
    assert " producer=7 producer_epoch=2 base_sequence=0 " in lines[0]
    assert lines[0].endswith(" transactional crc ok")
    assert lines[1].startswith("  offset=0 ") and lines[2].startswith("  offset=1 ")
    # The marker: flags, type and coordinator epoch; its record is not data.
    assert lines[3].startswith("batch position=")
    assert " offsets=2..2 " in lines[3] and " producer=7 producer_epoch=2 " in lines[3]
    assert lines[3].endswith(" transactional control=COMMIT coordinator_epoch=5 crc ok")
    assert " offsets=3..3 " in lines[4] and "transactional" not in lines[4]
    assert "control" not in lines[4] and " producer=-1 " in lines[4]
    assert lines[5] == "  offset=3 timestamp=1700000000000 key=k3 value=v3"
    assert lines[6].endswith(" transactional control=ABORT coordinator_epoch=6 crc ok")
    assert len(lines) == 7


def test_dump_json_has_transaction_fields(txn_segment):
    for extra in ((), ("--no-records",)):
        r = ok(run("log", "dump", str(txn_segment), "--json", *extra))
        batches = [json.loads(line) for line in r.stdout.splitlines()]
        assert [(b["transactional"], b["control"], b["marker_type"], b["coordinator_epoch"])
                for b in batches] == [(True, False, None, None), (True, True, "COMMIT", 5),
                                      (False, False, None, None), (True, True, "ABORT", 6)]
        assert [(b["producer_id"], b["producer_epoch"], b["base_sequence"]) for b in batches] == \
            [(7, 2, 0), (7, 2, -1), (-1, -1, -1), (8, 0, -1)]
        assert all("records" not in b for b in batches if b["control"])
        assert ("records" in batches[0]) == (not extra)
