"""The registry's state: what the records of ``_schemas`` say, applied in
log order (headrace.registry.records). Every broker builds one from the
topic; reads answer from it.

Invariants (the same on every broker, since all apply the same log in the
same order):

- a (subject, version) holds the last SCHEMA record of its key (as
  compaction keeps it); a tombstone removes it;
- an id names one schema: a SCHEMA record whose id already names a
  different schema (type, text, references) is ignored and logged (only two
  writers at once could write one; see docs/schema-registry.md);
- ``max_id`` is the highest id any record applied so far named, SCHEMA
  records and id floor records alike (it is never lowered by a delete);
  ids are assigned above it. ``floor`` is the highest id floor record's:
  what survives compaction of permanently deleted versions.

Thread-safety: every method takes the view's lock.
"""
from __future__ import annotations

import logging
import threading
from dataclasses import dataclass

from headrace.registry import records as R

log = logging.getLogger("headrace.registry")


@dataclass(frozen=True)
class Identity:
    """What makes two registrations the same schema (the same id)."""

    schema_type: str
    schema: str                     # canonical text (headrace.registry.schema_types)
    references: tuple[R.Reference, ...]


def identity_of(rec: R.SchemaRecord) -> Identity:
    return Identity(rec.schema_type, rec.schema, tuple(rec.references))


class View:
    def __init__(self):
        self._lock = threading.Lock()
        self.subjects: dict[str, dict[int, R.SchemaRecord]] = {}
        self.configs: dict[str | None, str] = {}
        self.modes: dict[str | None, str] = {}
        self.ids: dict[int, Identity] = {}
        self.max_id = 0
        self.floor = 0
        self.skipped = 0  # records not in the layout or in conflict

    # -- applying -----------------------------------------------------------------
    def apply(self, key: bytes | None, value: bytes | None, offset: int) -> None:
        """Applies one record of ``_schemas``; a malformed one is logged and
        skipped (it must not stop the reader)."""
        try:
            k = R.decode_key(key)
            obj = R.decode_json(value)
            with self._lock:
                self._apply_locked(k, obj)
        except R.RecordError as e:
            self.skipped += 1
            log.warning("_schemas offset %d skipped: %s", offset, e)

    def _apply_locked(self, k: R.Key, obj: dict | None) -> None:
        if k.keytype == "SCHEMA":
            if k.subject is None or k.version is None:
                raise R.RecordError("SCHEMA key without subject or version")
            if obj is None:
                versions = self.subjects.get(k.subject, {})
                versions.pop(k.version, None)
                if not versions:
                    self.subjects.pop(k.subject, None)
                self._forget_unused_ids()
                return
            rec = R.decode_schema_value(obj)
            ident = identity_of(rec)
            bound = self.ids.get(rec.id)
            if bound is not None and bound != ident:
                self.skipped += 1
                log.warning("_schemas: %s version %d names id %d, which is another schema's; "
                            "ignored", rec.subject, rec.version, rec.id)
                return
            self.ids[rec.id] = ident
            self.max_id = max(self.max_id, rec.id)
            self.subjects.setdefault(rec.subject, {})[rec.version] = rec
        elif k.keytype == "HEADRACE_ID_FLOOR":
            if obj is None or not isinstance(obj.get("id"), int):
                raise R.RecordError("id floor value without an integer id")
            self.floor = max(self.floor, obj["id"])
            self.max_id = max(self.max_id, obj["id"])
        elif k.keytype == "CONFIG":
            self._set(self.configs, k.subject, obj, "compatibilityLevel")
        elif k.keytype == "MODE":
            self._set(self.modes, k.subject, obj, "mode")
        elif k.keytype == "DELETE_SUBJECT":
            if obj is None or k.subject is None:
                return
            upto = obj.get("version")
            for v, rec in self.subjects.get(k.subject, {}).items():
                if isinstance(upto, int) and v <= upto:
                    rec.deleted = True
        # NOOP markers and other key types (Confluent's CLEAR_SUBJECT, CONTEXT...) carry no state we serve

    @staticmethod
    def _set(table: dict, subject: str | None, obj: dict | None, field: str) -> None:
        if obj is None:
            table.pop(subject, None)
        elif isinstance(obj.get(field), str):
            table[subject] = obj[field]
        else:
            raise R.RecordError(f"value has no {field}")

    def _forget_unused_ids(self) -> None:
        used = {rec.id for vs in self.subjects.values() for rec in vs.values()}
        for i in [i for i in self.ids if i not in used]:
            del self.ids[i]

    # -- reading ------------------------------------------------------------------
    def subject_names(self, deleted: bool = False) -> list[str]:
        with self._lock:
            return sorted(s for s, vs in self.subjects.items()
                          if any(deleted or not r.deleted for r in vs.values()))

    def versions(self, subject: str, deleted: bool = False) -> list[R.SchemaRecord]:
        """The subject's versions in order (soft-deleted ones when ``deleted``)."""
        with self._lock:
            vs = self.subjects.get(subject, {})
            return [vs[v] for v in sorted(vs) if deleted or not vs[v].deleted]

    def schema(self, schema_id: int) -> Identity | None:
        with self._lock:
            return self.ids.get(schema_id)

    def uses_of(self, schema_id: int, deleted: bool = False) -> list[R.SchemaRecord]:
        with self._lock:
            return [r for s in sorted(self.subjects) for v, r in sorted(self.subjects[s].items())
                    if r.id == schema_id and (deleted or not r.deleted)]

    def id_of(self, ident: Identity) -> int | None:
        with self._lock:
            for i, other in self.ids.items():
                if other == ident:
                    return i
        return None

    def referenced_by(self, subject: str, version: int) -> list[int]:
        """Ids of live versions whose references name (subject, version)."""
        with self._lock:
            return sorted({r.id for vs in self.subjects.values() for r in vs.values()
                           if not r.deleted and any(ref.subject == subject and
                                                    ref.version == version
                                                    for ref in r.references)})

    def config(self, subject: str | None) -> str | None:
        with self._lock:
            return self.configs.get(subject)

    def mode(self, subject: str | None) -> str | None:
        with self._lock:
            return self.modes.get(subject)
