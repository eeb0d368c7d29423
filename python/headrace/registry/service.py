"""The registry's operations, as the REST API (headrace.registry.api)
calls them: reads answer from the view; writes run on the writer only
(headrace.registry.api forwards them there), one at a time, each after
:meth:`Store.sync` so that the view holds every acknowledged record before
an id or version is assigned.

Every method returns JSON-ready values or raises RegistryError with
Confluent's error code.
"""
from __future__ import annotations

import threading
from typing import Callable

from headrace.registry import errors as E
from headrace.registry import records as R
from headrace.registry import schema_types as T
from headrace.registry.store import Store
from headrace.registry.view import Identity, identity_of

DEFAULT_LEVEL = "BACKWARD"
DEFAULT_MODE = "READWRITE"
MODES = ("READWRITE", "READONLY", "READONLY_OVERRIDE", "IMPORT")
MAX_VERSION = (1 << 31) - 1


def parse_version(text) -> int | None:
    """An explicit version, or None for "latest" / -1; 42202 otherwise."""
    s = str(text)
    if s == "latest" or s == "-1":
        return None
    if s.isdigit() and 1 <= int(s) <= MAX_VERSION:
        return int(s)
    raise E.unprocessable(E.INVALID_VERSION,
                          f"The specified version '{s}' is not a valid version id. Allowed "
                          f"values are between [1, {MAX_VERSION}] and the string \"latest\"")


def schema_json(rec: R.SchemaRecord | Identity, schema: str | None = None, **head) -> dict:
    """The JSON of a schema (by id or by subject version) as Confluent shows
    it; ``schema``: its text in another format than stored."""
    out = dict(head)
    if rec.schema_type != "AVRO":
        out["schemaType"] = rec.schema_type
    if rec.references:
        out["references"] = [r.to_json() for r in rec.references]
    out["schema"] = rec.schema if schema is None else schema
    return out


class Registry:
    def __init__(self, store: Store):
        self.store = store
        self.view = store.view
        self._write_lock = threading.Lock()

    # -- reads -----------------------------------------------------------------------
    def fresh(self, read: Callable):
        """``read()``; when it answers "not found", once more after catching
        up with the topic's end (a write another broker has just made)."""
        try:
            return read()
        except E.RegistryError as e:
            if e.status != 404:
                raise
        self.store.catch_up()
        return read()

    def subjects(self, prefix: str = "", deleted: bool = False, deleted_only: bool = False):
        names = self.view.subject_names(deleted or deleted_only)
        if deleted_only:
            live = set(self.view.subject_names(False))
            names = [n for n in names if n not in live]
        return [n for n in names if n.startswith(prefix)]

    def versions(self, subject: str, deleted: bool = False) -> list[R.SchemaRecord]:
        recs = self.view.versions(subject, deleted)
        if not recs:
            raise E.subject_not_found(subject)
        return recs

    def version(self, subject: str, version, deleted: bool = False) -> R.SchemaRecord:
        wanted = parse_version(version)
        recs = self.view.versions(subject, True)
        if not recs:
            raise E.subject_not_found(subject)
        live = [r for r in recs if deleted or not r.deleted]
        if wanted is None:
            if not live:
                raise E.subject_not_found(subject)
            return live[-1]
        for r in live:
            if r.version == wanted:
                return r
        raise E.version_not_found(subject, wanted)

    def schema(self, schema_id: int) -> Identity:
        ident = self.view.schema(schema_id)
        if ident is None:
            raise E.schema_not_found()
        return ident

    def lookup(self, subject: str, body: dict, deleted: bool = False) -> R.SchemaRecord:
        recs = self.view.versions(subject, deleted)
        if not recs:
            raise E.subject_not_found(subject)
        parsed, refs = self._parse_body(body)
        for r in reversed(recs):
            if identity_of(r) == Identity(parsed.schema_type, parsed.canonical, refs):
                return r
        raise E.schema_not_found()

    def config(self, subject: str | None, default_to_global: bool = False) -> str:
        level = self.view.config(subject)
        if level is None and subject is not None and not default_to_global:
            raise E.not_found(E.SUBJECT_LEVEL_COMPATIBILITY_NOT_CONFIGURED,
                              f"Subject '{subject}' does not have subject-level compatibility "
                              f"configured")
        return level or self.view.config(None) or DEFAULT_LEVEL

    def mode(self, subject: str | None, default_to_global: bool = False) -> str:
        mode = self.view.mode(subject)
        if mode is None and subject is not None and not default_to_global:
            raise E.not_found(E.SUBJECT_LEVEL_MODE_NOT_CONFIGURED,
                              f"Subject '{subject}' does not have subject-level mode configured")
        return mode or self.view.mode(None) or DEFAULT_MODE

    def check(self, subject: str, body: dict, version=None) -> list[str]:
        """Why ``body``'s schema is incompatible with ``subject`` under its
        level: against ``version`` only, or (None) as a registration would be."""
        parsed, _ = self._parse_body(body)
        level = self.config(subject, default_to_global=True)
        if version is not None:
            older = [self.version(subject, version)]
            if level.endswith("_TRANSITIVE"):
                level = level.removesuffix("_TRANSITIVE")
        else:
            older = self.view.versions(subject, False)
        return self._check(level, parsed, older)

    def _check(self, level: str, new: T.Parsed, recs: list[R.SchemaRecord]) -> list[str]:
        """schema_types.check of ``new`` against those of ``recs`` (oldest
        first) the level names: all for a _TRANSITIVE level, the latest for
        the others, none for NONE; only those are parsed (a .proto text
        costs a protoc run)."""
        if level == "NONE":
            return []
        if not level.endswith("_TRANSITIVE"):
            recs = recs[-1:]
        return T.check(level, new, [self._parse_record(r) for r in recs],
                       [r.version for r in recs])

    def serialized(self, rec) -> str:
        """A PROTOBUF schema as a serialized FileDescriptorProto in base64
        (Confluent's ``?format=serialized``), whether it was registered so
        or as source text; other types' text unchanged."""
        if rec.schema_type != "PROTOBUF":
            return rec.schema
        import base64

        proto = T.parse(rec.schema_type, rec.schema, self._dependencies(rec.references)).obj
        return base64.b64encode(proto.SerializeToString(deterministic=True)).decode("ascii")

    # -- parsing -----------------------------------------------------------------------
    def _parse_body(self, body: dict) -> tuple[T.Parsed, tuple[R.Reference, ...]]:
        if not isinstance(body, dict) or not isinstance(body.get("schema"), str):
            raise E.unprocessable(E.INVALID_SCHEMA, "The request must hold a \"schema\" string")
        schema_type = body.get("schemaType") or "AVRO"
        refs = []
        for r in body.get("references") or ():
            try:
                refs.append(R.Reference(str(r["name"]), str(r["subject"]), int(r["version"])))
            except (KeyError, TypeError, ValueError):
                raise E.unprocessable(E.INVALID_SCHEMA, f"Invalid reference {r!r}: name, "
                                                        f"subject and version needed") from None
        refs = tuple(self._pin(r) for r in refs)
        return T.parse(schema_type, body["schema"], self._dependencies(refs)), refs

    def _pin(self, ref: R.Reference) -> R.Reference:
        """A reference to "latest" (-1) made the version it names now."""
        if ref.version != -1:
            return ref
        try:
            return R.Reference(ref.name, ref.subject, self.version(ref.subject, "latest").version)
        except E.RegistryError:
            raise E.unprocessable(E.INVALID_SCHEMA, f"Reference {ref.name!r}: subject "
                                                    f"{ref.subject!r} not found") from None

    def _dependencies(self, refs, seen=None) -> list[tuple[str, str, str]]:
        """(reference name, type, text) of every schema ``refs`` need, each
        after its own."""
        seen = set() if seen is None else seen
        out = []
        for ref in refs:
            if (ref.subject, ref.version) in seen:
                continue
            seen.add((ref.subject, ref.version))
            try:
                rec = self.version(ref.subject, ref.version, deleted=True)
            except E.RegistryError:
                raise E.unprocessable(E.INVALID_SCHEMA,
                                      f"Reference {ref.name!r} names {ref.subject!r} version "
                                      f"{ref.version}, which does not exist") from None
            out += self._dependencies(rec.references, seen)
            out.append((ref.name, rec.schema_type, rec.schema))
        return out

    def _parse_record(self, rec: R.SchemaRecord) -> T.Parsed:
        return T.parse(rec.schema_type, rec.schema, self._dependencies(rec.references))

    # -- writes (on the writer only) -----------------------------------------------------
    def _writable(self, subject: str | None) -> None:
        mode = self.mode(subject, default_to_global=True)
        if mode in ("READONLY", "READONLY_OVERRIDE"):
            raise E.unprocessable(E.OPERATION_NOT_PERMITTED,
                                  f"Subject {subject!r} is in read-only mode")

    def register(self, subject: str, body: dict) -> dict:
        with self._write_lock:
            self.store.sync()
            self._writable(subject)
            parsed, refs = self._parse_body(body)
            ident = Identity(parsed.schema_type, parsed.canonical, refs)
            recs = self.view.versions(subject, True)
            for r in reversed(recs):
                if not r.deleted and identity_of(r) == ident:
                    return {"id": r.id, "version": r.version}
            live = [r for r in recs if not r.deleted]
            level = self.config(subject, default_to_global=True)
            messages = self._check(level, parsed, live)
            if messages:
                raise E.RegistryError(409, E.INCOMPATIBLE_SCHEMA,
                                      "Schema being registered is incompatible with an earlier "
                                      "schema for subject \"%s\", details: [%s]"
                                      % (subject, "; ".join(messages)))
            schema_id = self.view.id_of(ident) or self.view.max_id + 1
            version = (recs[-1].version + 1) if recs else 1
            rec = R.SchemaRecord(subject, version, schema_id, parsed.canonical,
                                 parsed.schema_type, refs)
            self.store.write([(R.schema_key(subject, version), R.schema_value(rec))])
            if self.view.schema(schema_id) != ident:  # another writer took the id first
                raise E.RegistryError(500, E.STORE_ERROR, f"schema id {schema_id} was taken "
                                                          f"by a concurrent writer; try again")
            return {"id": schema_id, "version": version}

    def _floor(self) -> list[tuple[bytes, bytes]]:
        """The id floor record to write before a permanent delete (its
        tombstones, once compacted away, would otherwise take the highest
        id out of the topic: a broker reading it anew could assign it
        again); [] when the topic's floor is already the highest id."""
        if self.view.floor >= self.view.max_id:
            return []
        return [(R.id_floor_key(), R.id_floor_value(self.view.max_id))]

    def delete_version(self, subject: str, version, permanent: bool) -> int:
        with self._write_lock:
            self.store.sync()
            self._writable(subject)
            rec = self.version(subject, version, deleted=True)
            if self.view.referenced_by(subject, rec.version):
                raise E.unprocessable(E.REFERENCE_EXISTS,
                                      f"One or more references exist to the schema "
                                      f"{{subject={subject},version={rec.version}}}")
            if permanent:
                if not rec.deleted:
                    raise E.not_found(E.SCHEMA_VERSION_NOT_SOFT_DELETED,
                                      f"Subject '{subject}' Version {rec.version} was not "
                                      f"deleted first before being permanently deleted")
                self.store.write(self._floor() + [(R.schema_key(subject, rec.version), None)])
                return rec.version
            if rec.deleted:
                raise E.not_found(E.SCHEMA_VERSION_SOFT_DELETED,
                                  f"Subject '{subject}' Version {rec.version} was soft deleted. "
                                  f"Set permanent=true to delete permanently")
            gone = R.SchemaRecord(**{**rec.__dict__, "deleted": True})
            self.store.write([(R.schema_key(subject, rec.version), R.schema_value(gone))])
            return rec.version

    def delete_subject(self, subject: str, permanent: bool) -> list[int]:
        with self._write_lock:
            self.store.sync()
            self._writable(subject)
            recs = self.view.versions(subject, True)
            if not recs:
                raise E.subject_not_found(subject)
            live = [r for r in recs if not r.deleted]
            for r in recs:
                if self.view.referenced_by(subject, r.version):
                    raise E.unprocessable(E.REFERENCE_EXISTS,
                                          f"One or more references exist to the schema "
                                          f"{{subject={subject},version={r.version}}}")
            if permanent:
                if live:
                    raise E.not_found(E.SUBJECT_NOT_SOFT_DELETED,
                                      f"Subject '{subject}' was not deleted first before being "
                                      f"permanently deleted")
                self.store.write(self._floor() +
                                 [(R.schema_key(subject, r.version), None) for r in recs])
                return [r.version for r in recs]
            if not live:
                raise E.not_found(E.SUBJECT_SOFT_DELETED,
                                  f"Subject '{subject}' was soft deleted. Set permanent=true to "
                                  f"delete permanently")
            out = [(R.delete_subject_key(subject),
                    R.delete_subject_value(subject, live[-1].version))]
            out += [(R.schema_key(subject, r.version),
                     R.schema_value(R.SchemaRecord(**{**r.__dict__, "deleted": True})))
                    for r in live]
            self.store.write(out)
            return [r.version for r in live]

    def set_config(self, subject: str | None, level) -> str:
        if not isinstance(level, str) or level.upper() not in T.LEVELS:
            raise E.unprocessable(E.INVALID_COMPATIBILITY_LEVEL,
                                  f"Invalid compatibility level {level!r}. Valid values are "
                                  f"{', '.join(T.LEVELS)}")
        with self._write_lock:
            self.store.write([(R.config_key(subject), R.config_value(level.upper()))])
        return level.upper()

    def delete_config(self, subject: str | None) -> str:
        with self._write_lock:
            self.store.sync()
            before = self.config(subject, default_to_global=subject is None)
            if subject is not None and not self.view.versions(subject, True) and \
                    self.view.config(subject) is None:
                raise E.subject_not_found(subject)
            self.store.write([(R.config_key(subject), None)])
            return before

    def set_mode(self, subject: str | None, mode) -> str:
        if not isinstance(mode, str) or mode.upper() not in MODES:
            raise E.unprocessable(E.INVALID_MODE, f"Invalid mode {mode!r}. Valid values are "
                                                  f"{', '.join(MODES)}")
        with self._write_lock:
            self.store.write([(R.mode_key(subject), R.mode_value(mode.upper()))])
        return mode.upper()

    def delete_mode(self, subject: str) -> str:
        with self._write_lock:
            self.store.sync()
            before = self.mode(subject, default_to_global=True)
            self.store.write([(R.mode_key(subject), None)])
            return before
