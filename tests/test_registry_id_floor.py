"""Schema ids are never reused, also after ``_schemas`` was compacted: the
highest id belonged to versions that were permanently deleted, the log
cleaner removed their records and tombstones, and the broker restarted (its
registry reads the topic anew). The id floor record (records.py
``HEADRACE_ID_FLOOR``) keeps the highest id in the topic.

The broker runs its cleaner every 100 ms; ``_schemas`` gets small segments,
a dirty ratio of 0.01 and delete.retention.ms=0 (docs/compaction.md), and
filler records roll its segments so that the cleaner reaches the deleted
versions; a later registry write makes the tombstones' batch no longer the
writer producer's last (which the cleaner keeps whole)."""
from __future__ import annotations

import json
import time

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource
from confluent_kafka.schema_registry import Schema

from broker_process import http_address
from registry_clients import schemas_records, sr_client

pytestmark = pytest.mark.timeout(180)


def avro(name: str) -> Schema:
    return Schema(json.dumps({"type": "record", "name": name,
                              "fields": [{"name": "a", "type": "int"}]}), "AVRO")


def _compact_fast(bootstrap: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    res = ConfigResource("topic", "_schemas", incremental_configs=[
        ConfigEntry(k, v, incremental_operation=AlterConfigOpType.SET)
        for k, v in {"segment.bytes": "16384", "min.cleanable.dirty.ratio": "0.01",
                     "delete.retention.ms": "0"}.items()])
    admin.incremental_alter_configs([res])[res].result(30)


def _fill(bootstrap: str) -> None:
    """~48 KiB of records under one CONFIG key (the view keeps the last):
    segments roll, the deleted versions' records leave the active one."""
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 0})
    key = json.dumps({"keytype": "CONFIG", "subject": "filler", "magic": 0},
                     separators=(",", ":")).encode()
    for i in range(48):
        p.produce("_schemas", key=key, partition=0, value=json.dumps(
            {"compatibilityLevel": "NONE", "pad": f"{i}" + "x" * 1000}).encode())
    assert p.flush(30) == 0


def test_ids_are_not_reused_after_compaction_and_restart(broker_factory):
    b = broker_factory(None, "--set", "log.cleaner.backoff.ms=100")
    http = "%s:%d" % http_address(b)
    c = sr_client(http)
    kept = c.register_schema("kept-value", avro("Kept"))
    gone = c.register_schema("gone-value", avro("Gone"))
    assert gone > kept
    _compact_fast(b.bootstrap)
    assert c.delete_subject("gone-value") == [1]
    assert c.delete_subject("gone-value", permanent=True) == [1]
    floors = [v for _, k, v in schemas_records(b.bootstrap)
              if k["keytype"] == "HEADRACE_ID_FLOOR"]
    assert floors == [{"id": gone}]
    # The registry's idempotent producer's last batch is kept whole by the
    # cleaner (docs/compaction.md): one more registry write moves it on.
    c.set_compatibility("kept-value", "BACKWARD")
    _fill(b.bootstrap)
    deadline = time.monotonic() + 60
    while True:  # the cleaner removes gone-value's SCHEMA records and tombstones
        left = [(k, v) for _, k, v in schemas_records(b.bootstrap)
                if k.get("subject") == "gone-value" and k["keytype"] == "SCHEMA"]
        if not left:
            break
        assert time.monotonic() < deadline, f"not compacted within 60 s: {left}"
        _fill(b.bootstrap)
        time.sleep(0.5)
    assert [v for _, k, v in schemas_records(b.bootstrap)
            if k["keytype"] == "HEADRACE_ID_FLOOR"] == [{"id": gone}]
    b.restart()
    http = "%s:%d" % http_address(b)
    fresh = sr_client(http)
    assert fresh.get_subjects() == ["kept-value"]
    new = fresh.register_schema("new-value", avro("New"))
    assert new > gone, f"id {new} assigned again (highest ever was {gone})"
    assert sr_client(http).get_schema(kept).schema_str
