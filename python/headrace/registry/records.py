"""The records of the ``_schemas`` topic, in Confluent Schema Registry's
layout so that Confluent's registry (or Karapace, Redpanda) could read the
topic (docs/schema-registry.md "The _schemas topic").

Keys and values are JSON. Keys carry ``keytype``:

- ``SCHEMA``  key ``{"keytype":"SCHEMA","subject":S,"version":V,"magic":1}``,
  value ``{"subject":S,"version":V,"id":N[,"schemaType":T][,"references":[..]],
  "schema":TEXT,"deleted":BOOL}`` (``schemaType`` left out for AVRO);
  a null value (tombstone) is a permanent delete of that version.
- ``CONFIG``  key ``{"keytype":"CONFIG","subject":S|null,"magic":0}``, value
  ``{"compatibilityLevel":LEVEL}``; a tombstone removes a subject's level.
- ``MODE``    key ``{"keytype":"MODE","subject":S|null,"magic":0}``, value
  ``{"mode":MODE}``.
- ``DELETE_SUBJECT`` key ``{"keytype":"DELETE_SUBJECT","subject":S,"magic":0}``,
  value ``{"subject":S,"version":LATEST}``: every version up to LATEST is
  soft-deleted (the SCHEMA records are rewritten with deleted=true too).
- ``NOOP``    key ``{"keytype":"NOOP","magic":0}``, null value: a marker
  (Confluent's reader refuses a NOOP with a value).
- ``HEADRACE_ID_FLOOR`` key ``{"keytype":"HEADRACE_ID_FLOOR","magic":0}``,
  value ``{"id":N}``: every id up to N was assigned once (the id floor).
  headrace's own: written before a permanent delete, so that the highest id
  outlives the compaction of the deleted versions' records (never a
  tombstone, so compaction keeps its latest value). Confluent's reader logs
  a key type it does not know and skips the record.

Field order follows Confluent's (keys are compared as bytes by compaction,
so the same logical key must always encode to the same bytes).
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field

TOPIC = "_schemas"


@dataclass(frozen=True)
class Reference:
    name: str
    subject: str
    version: int

    def to_json(self) -> dict:
        return {"name": self.name, "subject": self.subject, "version": self.version}


@dataclass
class SchemaRecord:
    subject: str
    version: int
    id: int
    schema: str
    schema_type: str = "AVRO"
    references: tuple[Reference, ...] = ()
    deleted: bool = False

    def to_json(self) -> dict:
        out = {"subject": self.subject, "version": self.version, "id": self.id}
        if self.schema_type != "AVRO":
            out["schemaType"] = self.schema_type
        if self.references:
            out["references"] = [r.to_json() for r in self.references]
        out["schema"] = self.schema
        out["deleted"] = self.deleted
        return out


@dataclass
class Key:
    keytype: str
    subject: str | None = None
    version: int | None = None
    extra: dict = field(default_factory=dict)


def _dump(obj) -> bytes:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode()


def schema_key(subject: str, version: int) -> bytes:
    return _dump({"keytype": "SCHEMA", "subject": subject, "version": version, "magic": 1})


def config_key(subject: str | None) -> bytes:
    return _dump({"keytype": "CONFIG", "subject": subject, "magic": 0})


def mode_key(subject: str | None) -> bytes:
    return _dump({"keytype": "MODE", "subject": subject, "magic": 0})


def delete_subject_key(subject: str) -> bytes:
    return _dump({"keytype": "DELETE_SUBJECT", "subject": subject, "magic": 0})


def noop_key() -> bytes:
    return _dump({"keytype": "NOOP", "magic": 0})


def id_floor_key() -> bytes:
    return _dump({"keytype": "HEADRACE_ID_FLOOR", "magic": 0})


def id_floor_value(schema_id: int) -> bytes:
    return _dump({"id": schema_id})


def schema_value(rec: SchemaRecord) -> bytes:
    return _dump(rec.to_json())


def config_value(level: str) -> bytes:
    return _dump({"compatibilityLevel": level})


def mode_value(mode: str) -> bytes:
    return _dump({"mode": mode})


def delete_subject_value(subject: str, version: int) -> bytes:
    return _dump({"subject": subject, "version": version})


class RecordError(ValueError):
    """A record of ``_schemas`` that is not in the layout (skipped, logged)."""


def decode_key(raw: bytes | None) -> Key:
    try:
        obj = json.loads(raw) if raw else None
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise RecordError(f"key is not JSON: {e}") from None
    if not isinstance(obj, dict) or not isinstance(obj.get("keytype"), str):
        raise RecordError("key has no keytype")
    version = obj.get("version")
    if version is not None and not isinstance(version, int):
        raise RecordError("key version is not an integer")
    subject = obj.get("subject")
    if subject is not None and not isinstance(subject, str):
        raise RecordError("key subject is not a string")
    return Key(obj["keytype"], subject, version, obj)


def decode_json(raw: bytes | None) -> dict | None:
    """A value's JSON object, None for a tombstone; RecordError otherwise."""
    if raw is None:
        return None
    try:
        obj = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise RecordError(f"value is not JSON: {e}") from None
    if not isinstance(obj, dict):
        raise RecordError("value is not a JSON object")
    return obj


def decode_schema_value(obj: dict) -> SchemaRecord:
    try:
        refs = tuple(Reference(str(r["name"]), str(r["subject"]), int(r["version"]))
                     for r in obj.get("references") or ())
        rec = SchemaRecord(str(obj["subject"]), int(obj["version"]), int(obj["id"]),
                           str(obj["schema"]), str(obj.get("schemaType") or "AVRO"), refs,
                           bool(obj.get("deleted", False)))
    except (KeyError, TypeError, ValueError) as e:
        raise RecordError(f"SCHEMA value lacks or mistypes {e}") from None
    return rec
