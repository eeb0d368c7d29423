"""The broker's log lines (docs/operations.md): with --log-format json every
line of stderr (C++ core and Python alike) is one JSON object with ts, level,
logger and msg; the operator's events appear once each with their fields;
the text format has a timestamp on every line."""
from __future__ import annotations

import json
import re
import time

import pytest

from broker_process import BrokerProcess, shared_broker

pytestmark = pytest.mark.timeout(120)

TIMEOUT_S = 30
TS_RE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
TEXT_LINE_RE = re.compile(
    r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z (DEBUG|INFO|WARN|ERROR) [\w.]+: ")


@pytest.fixture(scope="module")
def b(tmp_path_factory):
    yield from shared_broker(tmp_path_factory, "logs-json", "--log-format", "json",
                             "--set", "log.retention.check.interval.ms=200",
                             "--set", "group.initial.rebalance.delay.ms=0")


def _lines(b: BrokerProcess) -> list[dict]:
    """Every stderr line as JSON (asserting each one is), in order."""
    out = []
    for line in b.stderr.splitlines():
        assert line.startswith("{"), f"not a JSON line: {line!r}"
        obj = json.loads(line)
        assert TS_RE.match(obj["ts"]), obj
        assert obj["level"] in ("DEBUG", "INFO", "WARN", "ERROR"), obj
        assert isinstance(obj["logger"], str) and isinstance(obj["msg"], str), obj
        out.append(obj)
    return out


def _events(b: BrokerProcess, event: str, **match) -> list[dict]:
    return [o for o in _lines(b)
            if o.get("event") == event and all(o.get(k) == v for k, v in match.items())]


def _wait_events(b: BrokerProcess, event: str, count: int = 1, **match) -> list[dict]:
    deadline = time.monotonic() + TIMEOUT_S
    while True:
        found = _events(b, event, **match)
        if len(found) >= count or time.monotonic() > deadline:
            return found
        time.sleep(0.05)


def _admin(b):
    from confluent_kafka.admin import AdminClient
    return AdminClient({"bootstrap.servers": b.bootstrap})


def test_startup_summary_and_listening_line_are_json(b):
    startup = _events(b, "startup")
    assert len(startup) == 1, startup
    s = startup[0]
    assert s["level"] == "INFO" and s["logger"] == "headrace"
    assert "127.0.0.1:" in s["listeners"] and s["log_dirs"] == str(b.data_dir)
    # The non-default settings with their values, where each was set.
    assert s["settings"]["log.retention.check.interval.ms"] == "200"
    assert s["settings"]["headrace.log.format"] == "json"
    assert "flag" in s["sources"]
    listening = json.loads(b.listen_line)
    assert listening["msg"].startswith("listening on ") and listening["listener"] == b.bootstrap


def test_topic_create_and_delete_each_logged_once_with_fields(b):
    from confluent_kafka.admin import NewTopic
    admin = _admin(b)
    admin.create_topics([NewTopic("logged-topic", 3, 1)])["logged-topic"].result(TIMEOUT_S)
    created = _wait_events(b, "topic_created", topic="logged-topic")
    assert len(created) == 1, created
    c = created[0]
    assert c["partitions"] == 3 and c["replication_factor"] == 1 and c["logger"] == "headrace.topic"
    assert len(c["topic_id"]) == 22
    admin.delete_topics(["logged-topic"])["logged-topic"].result(TIMEOUT_S)
    deleted = _wait_events(b, "topic_deleted", topic="logged-topic")
    assert len(deleted) == 1, deleted
    assert deleted[0]["topic_id"] == c["topic_id"] and deleted[0]["partitions"] == 3
    time.sleep(0.3)  # no late duplicates
    assert len(_events(b, "topic_created", topic="logged-topic")) == 1
    assert len(_events(b, "topic_deleted", topic="logged-topic")) == 1


def test_retention_deletion_logged_with_segments_bytes_and_reason(b):
    from confluent_kafka import Producer
    from confluent_kafka.admin import NewTopic
    admin = _admin(b)
    admin.create_topics([NewTopic("retained", 1, 1, config={
        "segment.bytes": "1024", "retention.bytes": "2048"})])["retained"].result(TIMEOUT_S)
    p = Producer({"bootstrap.servers": b.bootstrap, "linger.ms": 0, "batch.num.messages": 1})
    for i in range(40):
        p.produce("retained", value=b"x" * 200)
        p.flush(TIMEOUT_S)  # one batch each: several segments
    found = _wait_events(b, "retention_deleted", topic="retained")
    assert found, "no retention deletion logged"
    first = found[0]
    assert first["partition"] == 0 and first["reason"] == "retention.bytes"
    assert first["segments"] >= 1 and first["bytes"] > 0
    assert len(first["base_offsets"].split(",")) == first["segments"]
    assert first["base_offsets"].split(",")[0] == "0"
    # Each pass that deleted segments is one line: the segment lists never overlap.
    bases = [o for e in found for o in e["base_offsets"].split(",")]
    assert len(bases) == len(set(bases)), found


def test_rebalance_logged_once_with_group_generation_members(b):
    from confluent_kafka import Consumer
    from confluent_kafka.admin import NewTopic
    admin = _admin(b)  # kept referenced until the result is in
    admin.create_topics([NewTopic("grouped", 2, 1)])["grouped"].result(TIMEOUT_S)
    c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": "logged-group",
                  "session.timeout.ms": 6000, "auto.offset.reset": "earliest"})
    try:
        c.subscribe(["grouped"])
        deadline = time.monotonic() + TIMEOUT_S
        while not c.assignment() and time.monotonic() < deadline:
            c.poll(0.1)
        assert c.assignment(), "no assignment"
        found = _wait_events(b, "group_rebalanced", group="logged-group")
        assert len(found) == 1, found
        r = found[0]
        assert r["generation"] == 1 and r["member_count"] == 1 and r["logger"] == "headrace.group"
        assert r["members"] == r["leader"] and r["members"]
        assert r["protocol"] in ("range", "roundrobin", "cooperative-sticky")
    finally:
        c.close()


def test_topic_config_change_logged_once(b):
    from confluent_kafka.admin import (AlterConfigOpType, ConfigEntry, ConfigResource,
                                       NewTopic)
    admin = _admin(b)
    admin.create_topics([NewTopic("configured", 1, 1)])["configured"].result(TIMEOUT_S)
    res = ConfigResource(ConfigResource.Type.TOPIC, "configured", incremental_configs=[
        ConfigEntry("retention.ms", "123456", incremental_operation=AlterConfigOpType.SET)])
    admin.incremental_alter_configs([res])[res].result(TIMEOUT_S)
    found = _wait_events(b, "config_changed", topic="configured")
    assert len(found) == 1, found
    assert found[0]["resource"] == "topic" and found[0]["overrides"] == "retention.ms=123456"


def test_dynamic_broker_config_change_logged_once(b):
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource
    admin = _admin(b)
    res = ConfigResource(ConfigResource.Type.BROKER, "0", incremental_configs=[
        ConfigEntry("log.retention.ms", "86400000", incremental_operation=AlterConfigOpType.SET)])
    admin.incremental_alter_configs([res])[res].result(TIMEOUT_S)
    found = _wait_events(b, "config_changed", resource="broker")
    assert len(found) == 1, found
    assert found[0]["scope"] == "this broker"
    assert found[0]["changes"] == "log.retention.ms=(default)->86400000"


def test_every_line_so_far_is_json_and_no_error_lines(b):
    lines = _lines(b)
    assert len(lines) >= 8
    assert not [o for o in lines if o["level"] == "ERROR"], lines


def test_text_format_has_a_timestamp_on_every_line(broker_factory, tmp_path):
    t = broker_factory(None, "--set", "log.retention.check.interval.ms=200")
    from confluent_kafka.admin import AdminClient, NewTopic
    admin = AdminClient({"bootstrap.servers": t.bootstrap})
    admin.create_topics([NewTopic("texty", 1, 1)])["texty"].result(TIMEOUT_S)
    deadline = time.monotonic() + TIMEOUT_S
    while "created topic texty" not in t.stderr and time.monotonic() < deadline:
        time.sleep(0.05)
    t.stop()
    lines = t.stderr.splitlines() + [t.listen_line]
    assert any("created topic texty" in line for line in lines), t.stderr
    assert any(" INFO headrace: starting node 0: listeners " in line for line in lines), t.stderr
    assert any(line.endswith(" INFO headrace: stopped") for line in lines), t.stderr
    bad = [line for line in lines if not TEXT_LINE_RE.match(line)]
    assert not bad, bad


def test_a_full_disk_is_one_line_naming_the_dir_then_repeats_are_counted(
        broker_factory, tmp_path, monkeypatch):
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic
    # Every segment write fails with ENOSPC: each partition's log goes offline
    # on its first append, all of them on the one log directory.
    monkeypatch.setenv("HEADRACE_FAULT_INJECT", "write:path=/00000000000000000000.log:errno=ENOSPC")
    f = broker_factory(tmp_path / "full", "--log-format", "json")
    monkeypatch.delenv("HEADRACE_FAULT_INJECT")
    admin = AdminClient({"bootstrap.servers": f.bootstrap})
    admin.create_topics([NewTopic("full", 4, 1)])["full"].result(TIMEOUT_S)
    p = Producer({"bootstrap.servers": f.bootstrap, "retries": 0, "linger.ms": 0,
                  "message.timeout.ms": 10000})
    failed = []
    for part in range(4):
        p.produce("full", value=b"x", partition=part,
                  on_delivery=lambda err, msg: failed.append(err) if err else None)
        p.flush(TIMEOUT_S)
    assert len(failed) == 4, failed  # never acknowledged
    errors = _wait_events(f, "storage_error")
    assert len(errors) == 1, errors  # the other three partitions: counted, not logged
    e = errors[0]
    assert e["level"] == "ERROR" and e["kind"] == "disk_full" and e["log_dir"] == str(f.data_dir)
    assert e["suppressed"] == 0 and "ENOSPC" in e["msg"] and str(f.data_dir) in e["msg"]
    f.stop(expect_code=2)  # offline logs cannot be closed cleanly
    _lines(f)  # still one JSON object per line, the final error line included
