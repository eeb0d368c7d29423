"""The registry value format options (``valueFormat=avro`` with
``schema.registry.url``) and what the driver resolves from them.

Options (docs/spark.md), keys lower-case as Spark hands them over:

- ``valueFormat``: ``avro``, ``json`` (JSON Schema) or ``protobuf`` (the
  sink writes Protobuf with a registered schema only);
- ``schema.registry.url`` and every other ``schema.registry.*`` option,
  without the prefix, as confluent_kafka's SchemaRegistryClient settings
  (``basic.auth.user.info``, ``basic.auth.credentials.source``,
  ``ssl.ca.location``, ``ssl.certificate.location``, ``ssl.key.location``:
  the names Confluent's and ABRiS's users pass);
- ``valueSchemaSubject`` (default ``<topic>-value``; its latest version) or
  ``valueSchemaId``: the reader schema (source) or the schema written with
  (sink; without ``valueSchemaId`` the sink registers the schema derived
  from the ``value`` column's type under the subject);
- ``mode`` (source): ``FAILFAST`` (default) or ``PERMISSIVE``, as Spark's
  from_avro: what a value that cannot be decoded does.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Mapping

from .option_error import HeadraceOptionError

FORMATS = ("avro", "json", "protobuf")
SINK_FORMATS = ("avro", "json", "protobuf")
SCHEMA_TYPES = {"avro": "AVRO", "json": "JSON", "protobuf": "PROTOBUF"}   # -> schemaType
MODES = ("FAILFAST", "PERMISSIVE")
PREFIX = "schema.registry."


@dataclass(frozen=True)
class RegistryFormat:
    """The parsed options; picklable (executors build their own client)."""

    value_format: str
    client_conf: dict[str, str]
    subject: str | None = None
    schema_id: int | None = None
    mode: str = "FAILFAST"
    column: str = "value"   # or "key" (keyFormat, keySchemaSubject, keySchemaId)
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def url(self) -> str:
        return self.client_conf["url"]

    def client(self):
        """A SchemaRegistryClient (its cache: schemas by id and subject)."""
        from confluent_kafka.schema_registry import SchemaRegistryClient

        try:
            return SchemaRegistryClient(dict(self.client_conf))
        except (ValueError, TypeError) as e:
            raise HeadraceOptionError(f"Options 'schema.registry.*': {e}") from None


def parse_registry_format(opts: Mapping[str, str], sink: bool,
                          column: str = "value") -> RegistryFormat | None:
    """The format options of ``column`` ("value": valueFormat, valueSchemaSubject,
    valueSchemaId; "key": keyFormat, ...) in lower-cased ``opts``; None
    without its format option."""
    raw = opts.get(f"{column}format")
    if raw is None or str(raw).strip() == "":
        names = [f"{column}schemasubject", f"{column}schemaid"]
        if "valueformat" not in opts and "keyformat" not in opts:
            names.append("schema.registry.url")
        for name in names:
            if name in opts:
                raise HeadraceOptionError(f"Option '{name}' needs the option '{column}Format'")
        return None
    fmt = str(raw).strip().lower()
    if sink and fmt in FORMATS and fmt not in SINK_FORMATS:
        raise HeadraceOptionError(f"{column}Format '{fmt}' is for reads only; the headrace sink "
                                  f"writes {' and '.join(SINK_FORMATS)} (docs/spark.md)")
    if fmt not in FORMATS:
        raise HeadraceOptionError(f"Option '{column}Format' must be one of "
                                  f"{', '.join(FORMATS)}; got {raw!r}")
    conf = {k[len(PREFIX):]: str(v) for k, v in opts.items() if k.startswith(PREFIX)}
    if not conf.get("url"):
        raise HeadraceOptionError(f"{column}Format '{fmt}' needs the option "
                                  f"'schema.registry.url'")
    subject = opts.get(f"{column}schemasubject") or None
    schema_id = None
    if opts.get(f"{column}schemaid") not in (None, ""):
        try:
            schema_id = int(str(opts[f"{column}schemaid"]).strip())
        except ValueError:
            schema_id = -1
        if schema_id < 0:
            raise HeadraceOptionError(f"Option '{column}SchemaId' must be a schema id (an "
                                      f"integer >= 0), got {opts[f'{column}schemaid']!r}")
        if subject is not None:
            raise HeadraceOptionError(f"Give one of the options '{column}SchemaSubject' and "
                                      f"'{column}SchemaId', not both")
    mode = str(opts.get("mode", "FAILFAST")).strip().upper()
    if mode not in MODES or (sink and "mode" in opts):
        raise HeadraceOptionError(f"Option 'mode' must be one of {', '.join(MODES)} (reads "
                                  f"only); got {opts.get('mode')!r}")
    found = RegistryFormat(fmt, conf, subject, schema_id, mode, column)
    found.client()   # bad client settings fail here, on the driver
    return found


def registry_error(fmt: RegistryFormat, what: str, e: Exception) -> HeadraceOptionError:
    """A one-line error for a failed registry call."""
    from confluent_kafka.schema_registry.error import SchemaRegistryError

    if isinstance(e, SchemaRegistryError):
        return HeadraceOptionError(f"schema registry {fmt.url}: {what}: {e.error_message} "
                                   f"(HTTP {e.http_status_code}, error code {e.error_code})")
    return HeadraceOptionError(f"schema registry {fmt.url}: {what}: {e}")


def reader_schema(fmt: RegistryFormat, topic: str | None) -> tuple[int, str]:
    """(id, schema text) of the schema the options name: ``valueSchemaId``,
    else the latest version of ``valueSchemaSubject`` or ``<topic>-value``."""
    client = fmt.client()
    if fmt.schema_id is not None:
        try:
            schema = client.get_schema(fmt.schema_id)
        except Exception as e:  # noqa: BLE001 - SchemaRegistryError, httpx's errors
            raise registry_error(fmt, f"schema id {fmt.schema_id}", e) from None
        schema_id = fmt.schema_id
    else:
        subject = fmt.subject or default_subject(topic, fmt.column)
        try:
            found = client.get_latest_version(subject)
        except Exception as e:  # noqa: BLE001
            raise registry_error(fmt, f"latest version of subject {subject!r}", e) from None
        schema, schema_id = found.schema, found.schema_id
    want = SCHEMA_TYPES[fmt.value_format]
    if (schema.schema_type or "AVRO") != want:
        raise HeadraceOptionError(f"schema registry {fmt.url}: schema {schema_id} is "
                                  f"{schema.schema_type}, not {want} (valueFormat "
                                  f"{fmt.value_format})")
    if schema.references and want != "PROTOBUF":   # Protobuf imports: decode.Decoder
        raise HeadraceOptionError(f"schema {schema_id} has references; the headrace data "
                                  f"source reads schemas without references only")
    return schema_id, schema.schema_str


def default_subject(topic: str | None, column: str = "value") -> str:
    if topic is None:
        raise HeadraceOptionError(f"{column}Format: the default subject '<topic>-{column}' "
                                  f"needs one topic; with several give '{column}SchemaSubject' "
                                  f"or '{column}SchemaId'")
    return f"{topic}-{column}"


def parsed(schema_str: str) -> Any:
    try:
        return json.loads(schema_str)
    except ValueError:   # a bare primitive name such as "string"
        return schema_str
