"""Compatibility of JSON Schema and Protobuf schemas in the built-in
registry (headrace.registry.json_compat, proto_compat), driven by
confluent_kafka's SchemaRegistryClient on one broker: each rule the
modules' contracts list, with a compatible and an incompatible change,
under the level it concerns; Confluent's 409 with the errorType in the
message, and ``?verbose=true`` reasons. Each case uses its own subject."""
from __future__ import annotations

import json

import pytest
from confluent_kafka.schema_registry import Schema
from confluent_kafka.schema_registry.error import SchemaRegistryError

from broker_process import http_address, shared_broker
from registry_clients import call, sr_client


@pytest.fixture(scope="module")
def rb(tmp_path_factory):
    for b in shared_broker(tmp_path_factory, "registry-compat-broker"):
        host, port = http_address(b)
        b.http = f"{host}:{port}"
        yield b


def obj(props: dict, required=(), additional=None, **more) -> dict:
    doc = {"type": "object", "properties": props, **more}
    if required:
        doc["required"] = list(required)
    if additional is not None:
        doc["additionalProperties"] = additional
    return doc


S, I, N = {"type": "string"}, {"type": "integer"}, {"type": "number"}

# (case, level, old, new, errorType when incompatible or None)
JSON_CASES = [
    ("open-add", "BACKWARD", obj({"a": S}), obj({"a": S, "b": I}),
     "PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL"),
    ("open-remove", "BACKWARD", obj({"a": S, "b": I}), obj({"a": S}), None),
    ("closed-add-optional", "BACKWARD", obj({"a": S}, additional=False),
     obj({"a": S, "b": I}, additional=False), None),
    ("closed-add-required", "BACKWARD", obj({"a": S}, additional=False),
     obj({"a": S, "b": I}, ["b"], additional=False),
     "REQUIRED_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL"),
    ("closed-remove", "BACKWARD", obj({"a": S, "b": I}, additional=False),
     obj({"a": S}, additional=False), "PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL"),
    ("partial-add-covered", "BACKWARD", obj({"a": S}, additional=S),
     obj({"a": S, "b": S}, additional=S), None),
    ("partial-add-uncovered", "BACKWARD", obj({"a": S}, additional=S),
     obj({"a": S, "b": I}, additional=S),
     "PROPERTY_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL"),
    ("close-content-model", "BACKWARD", obj({"a": S}), obj({"a": S}, additional=False),
     "ADDITIONAL_PROPERTIES_REMOVED"),
    ("open-content-model", "BACKWARD", obj({"a": S}, additional=False), obj({"a": S}), None),
    ("required-added", "BACKWARD", obj({"a": S}), obj({"a": S}, ["a"]),
     "REQUIRED_ATTRIBUTE_ADDED"),
    ("required-removed", "BACKWARD", obj({"a": S}, ["a"]), obj({"a": S}), None),
    ("type-widened", "BACKWARD", obj({"a": I}), obj({"a": N}), None),
    ("type-narrowed", "BACKWARD", obj({"a": N}), obj({"a": I}), "TYPE_NARROWED"),
    ("type-changed", "BACKWARD", obj({"a": S}), obj({"a": I}), "TYPE_CHANGED"),
    ("nullable", "BACKWARD", obj({"a": S}), obj({"a": {"type": ["string", "null"]}}), None),
    ("enum-extended", "BACKWARD", {"enum": ["x", "y"]}, {"enum": ["x", "y", "z"]}, None),
    ("enum-narrowed", "BACKWARD", {"enum": ["x", "y"]}, {"enum": ["x"]},
     "ENUM_ARRAY_NARROWED"),
    ("max-length-added", "BACKWARD", S, {"type": "string", "maxLength": 5},
     "MAX_LENGTH_ADDED"),
    ("max-length-raised", "BACKWARD", {"type": "string", "maxLength": 5},
     {"type": "string", "maxLength": 9}, None),
    ("minimum-increased", "BACKWARD", {"type": "integer", "minimum": 0},
     {"type": "integer", "minimum": 1}, "MINIMUM_INCREASED"),
    ("minimum-lowered", "BACKWARD", {"type": "integer", "minimum": 1},
     {"type": "integer", "minimum": 0}, None),
    ("max-items-decreased", "BACKWARD", {"type": "array", "items": S, "maxItems": 4},
     {"type": "array", "items": S, "maxItems": 2}, "MAX_ITEMS_DECREASED"),
    ("items-type-changed", "BACKWARD", {"type": "array", "items": S},
     {"type": "array", "items": I}, "TYPE_CHANGED"),
    ("pattern-added", "BACKWARD", S, {"type": "string", "pattern": "^a"}, "PATTERN_ADDED"),
    ("multiple-of-divides", "BACKWARD", {"type": "integer", "multipleOf": 4},
     {"type": "integer", "multipleOf": 2}, None),
    ("multiple-of-changed", "BACKWARD", {"type": "integer", "multipleOf": 2},
     {"type": "integer", "multipleOf": 3}, "MULTIPLE_OF_CHANGED"),
    ("anyof-extended", "BACKWARD", {"anyOf": [S, I]}, {"anyOf": [S, I, {"type": "null"}]},
     None),
    ("anyof-branch-removed", "BACKWARD", {"anyOf": [S, I]}, {"anyOf": [S]},
     "COMBINED_TYPE_SUBSCHEMAS_CHANGED"),
    ("ref-changed", "BACKWARD",
     {"$defs": {"X": S}, **obj({"x": {"$ref": "#/$defs/X"}})},
     {"$defs": {"X": I}, **obj({"x": {"$ref": "#/$defs/X"}})}, "TYPE_CHANGED"),
    ("recursive-ref", "BACKWARD",
     {"$defs": {"N": obj({"v": S, "next": {"$ref": "#/$defs/N"}})}, "$ref": "#/$defs/N"},
     {"$defs": {"N": obj({"v": S, "next": {"$ref": "#/$defs/N"}, "w": {}})},
      "$ref": "#/$defs/N"}, None),
    ("recursive-ref-changed", "BACKWARD",
     {"$defs": {"N": obj({"v": S, "next": {"$ref": "#/$defs/N"}})}, "$ref": "#/$defs/N"},
     {"$defs": {"N": obj({"v": I, "next": {"$ref": "#/$defs/N"}})}, "$ref": "#/$defs/N"},
     "TYPE_CHANGED"),
    # FORWARD: the old schema must accept what the new one allows.
    ("forward-open-add", "FORWARD", obj({"a": S}), obj({"a": S, "b": I}), None),
    ("forward-closed-add", "FORWARD", obj({"a": S}, additional=False),
     obj({"a": S, "b": I}, additional=False), "PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL"),
    ("forward-widened", "FORWARD", obj({"a": I}), obj({"a": N}), "TYPE_NARROWED"),
    # FULL: both directions.
    ("full-required-removed", "FULL", obj({"a": S}, ["a"]), obj({"a": S}),
     "REQUIRED_ATTRIBUTE_ADDED"),
    ("full-same-shape", "FULL", obj({"a": S}, ["a"]), obj({"a": S}, ["a"], title="T"), None),
]

PROTO = 'syntax = "proto3";\npackage shop;\n'
ORDER = PROTO + ('message Order {\n  string id = 1;\n  int32 count = 2;\n'
                 '  oneof pay { string card = 3; int64 voucher = 4; }\n}\n')
PROTO2 = 'syntax = "proto2";\npackage shop;\nmessage Item {\n  optional string id = 1;\n}\n'

PROTO_CASES = [
    ("field-added", "BACKWARD", ORDER, ORDER.replace("int32 count = 2;",
                                                     "int32 count = 2;\n  double w = 5;"), None),
    ("field-removed", "BACKWARD", ORDER, ORDER.replace("int32 count = 2;", ""), None),
    ("field-renamed", "BACKWARD", ORDER, ORDER.replace("count = 2", "quantity = 2"), None),
    ("varint-widened", "BACKWARD", ORDER, ORDER.replace("int32 count", "int64 count"), None),
    ("string-to-bytes", "BACKWARD", ORDER, ORDER.replace("string id", "bytes id"), None),
    ("number-reused-other-type", "BACKWARD", ORDER,
     ORDER.replace("int32 count", "string count"), "FIELD_SCALAR_KIND_CHANGED"),
    ("zigzag-vs-varint", "BACKWARD", ORDER, ORDER.replace("int32 count", "sint32 count"),
     "FIELD_SCALAR_KIND_CHANGED"),
    ("scalar-to-message", "BACKWARD", ORDER,
     ORDER.replace("string id = 1", "Ref id = 1") + "message Ref { string v = 1; }\n",
     "FIELD_KIND_CHANGED"),
    ("enum-for-int32", "BACKWARD", ORDER,
     ORDER.replace("int32 count", "Size count") + "enum Size { S = 0; L = 1; }\n", None),
    ("named-type-changed", "BACKWARD",
     ORDER + "message A { string v = 1; }\nmessage B { string v = 1; }\n"
             "message Box { A content = 1; }\n",
     ORDER + "message A { string v = 1; }\nmessage B { string v = 1; }\n"
             "message Box { B content = 1; }\n", "FIELD_NAMED_TYPE_CHANGED"),
    ("repeated-string", "BACKWARD", ORDER, ORDER.replace("string id", "repeated string id"),
     None),
    ("repeated-int", "BACKWARD", ORDER, ORDER.replace("int32 count", "repeated int32 count"),
     "FIELD_LABEL_CHANGED"),
    ("message-removed", "BACKWARD", ORDER + "message Extra { int32 v = 1; }\n", ORDER,
     "MESSAGE_REMOVED"),
    ("message-added", "BACKWARD", ORDER, ORDER + "message Extra { int32 v = 1; }\n", None),
    ("package-changed", "BACKWARD", ORDER, ORDER.replace("package shop", "package store"),
     "PACKAGE_CHANGED"),
    ("oneof-field-removed", "BACKWARD", ORDER, ORDER.replace(" int64 voucher = 4;", ""),
     "ONEOF_FIELD_REMOVED"),
    ("moved-to-existing-oneof", "BACKWARD", ORDER,
     ORDER.replace("int32 count = 2;\n", "").replace("int64 voucher = 4;",
                                                     "int64 voucher = 4; int32 count = 2;"),
     "FIELD_MOVED_TO_EXISTING_ONEOF"),
    ("one-moved-to-new-oneof", "BACKWARD", ORDER,
     ORDER.replace("int32 count = 2;", "oneof amount { int32 count = 2; }"), None),
    ("two-moved-to-new-oneof", "BACKWARD", ORDER,
     ORDER.replace("string id = 1;\n  int32 count = 2;",
                   "oneof head { string id = 1; int32 count = 2; }"),
     "MULTIPLE_FIELDS_MOVED_TO_ONEOF"),
    ("required-added", "BACKWARD", PROTO2,
     PROTO2.replace("optional string id = 1;", "optional string id = 1;\n  required int32 n = 2;"),
     "REQUIRED_FIELD_ADDED"),
    ("required-removed", "FORWARD", PROTO2,
     PROTO2.replace("optional string id = 1;", "optional string id = 1;\n  required int32 n = 2;"),
     "REQUIRED_FIELD_REMOVED"),
    ("required-to-optional", "BACKWARD", PROTO2.replace("optional", "required"), PROTO2, None),
    ("forward-field-removed", "FORWARD", ORDER, ORDER.replace("int32 count = 2;", ""), None),
    ("full-oneof-field-added", "FULL", ORDER,
     ORDER.replace("int64 voucher = 4;", "int64 voucher = 4; string gift = 6;"),
     "ONEOF_FIELD_REMOVED"),
]


def _check(rb, subject: str, schema_type: str, level: str, old: str, new: str,
           error_type: str | None) -> None:
    c = sr_client(rb.http)
    assert c.set_compatibility(subject, level)["compatibility"] == level
    c.register_schema(subject, Schema(old, schema_type))
    ok = error_type is None
    assert c.test_compatibility(subject, Schema(new, schema_type)) is ok
    status, doc, _ = call(rb.http, "POST",
                          f"/compatibility/subjects/{subject}/versions/latest?verbose=true",
                          {"schema": new, "schemaType": schema_type})
    assert status == 200 and doc["is_compatible"] is ok
    if ok:
        assert doc["messages"] == []
        sid = c.register_schema(subject, Schema(new, schema_type))
        assert c.get_latest_version(subject).schema_id == sid
        assert c.get_versions(subject) == [1, 2]
        return
    assert any(f"errorType:'{error_type}'" in m for m in doc["messages"]), doc["messages"]
    assert doc["messages"][-2:] == ["{oldSchemaVersion: 1}", f"{{compatibility: '{level}'}}"]
    with pytest.raises(SchemaRegistryError) as e:
        c.register_schema(subject, Schema(new, schema_type))
    assert (e.value.http_status_code, e.value.error_code) == (409, 409)
    assert error_type in e.value.error_message
    assert c.get_versions(subject) == [1]


@pytest.mark.parametrize("case,level,old,new,error_type", JSON_CASES,
                         ids=[c[0] for c in JSON_CASES])
def test_json_schema_rules(rb, case, level, old, new, error_type):
    _check(rb, f"json-{case}", "JSON", level, json.dumps(old), json.dumps(new), error_type)


@pytest.mark.parametrize("case,level,old,new,error_type", PROTO_CASES,
                         ids=[c[0] for c in PROTO_CASES])
def test_protobuf_rules(rb, case, level, old, new, error_type):
    _check(rb, f"proto-{case}", "PROTOBUF", level, old, new, error_type)


def test_protobuf_serializer_descriptor_evolves(rb):
    """Descriptors as confluent_kafka's ProtobufSerializer registers them
    (base64 FileDescriptorProto) are judged as source text is."""
    import base64

    from google.protobuf import descriptor_pb2

    def reading(value_type):
        fdp = descriptor_pb2.FileDescriptorProto(name="r.proto", package="t", syntax="proto3")
        m = fdp.message_type.add(name="Reading")
        m.field.add(name="sensor", number=1, type=descriptor_pb2.FieldDescriptorProto.TYPE_STRING,
                    label=descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL)
        m.field.add(name="value", number=2, type=value_type,
                    label=descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL)
        return base64.b64encode(fdp.SerializeToString()).decode()

    T = descriptor_pb2.FieldDescriptorProto
    c = sr_client(rb.http)
    c.register_schema("proto-serialized", Schema(reading(T.TYPE_DOUBLE), "PROTOBUF"))
    assert c.test_compatibility("proto-serialized", Schema(reading(T.TYPE_STRING),
                                                           "PROTOBUF")) is False
    assert c.test_compatibility("proto-serialized", Schema(reading(T.TYPE_DOUBLE),
                                                           "PROTOBUF")) is True


def test_transitive_json_checks_every_version(rb):
    c = sr_client(rb.http)
    subject = "json-transitive"
    c.set_compatibility(subject, "NONE")
    c.register_schema(subject, Schema(json.dumps(obj({"a": S}, additional=False)), "JSON"))
    c.register_schema(subject, Schema(json.dumps(obj({"a": I}, additional=False)), "JSON"))
    # Adds an optional property: fine against version 2; version 1's a was a string.
    v3 = Schema(json.dumps(obj({"a": I, "c": S}, additional=False)), "JSON")
    c.set_compatibility(subject, "BACKWARD")
    assert c.test_compatibility(subject, v3) is True
    assert c.test_compatibility_all_versions(subject, v3) is True
    assert c.test_compatibility(subject, v3, version=1) is False
    c.set_compatibility(subject, "BACKWARD_TRANSITIVE")
    assert c.test_compatibility_all_versions(subject, v3) is False
    with pytest.raises(SchemaRegistryError) as e:
        c.register_schema(subject, v3)
    assert e.value.http_status_code == 409 and "TYPE_CHANGED" in e.value.error_message


def test_type_change_is_refused_and_none_allows_everything(rb):
    c = sr_client(rb.http)
    subject = "json-to-proto"
    c.register_schema(subject, Schema(json.dumps(obj({"a": S})), "JSON"))
    status, doc, _ = call(rb.http, "POST", f"/subjects/{subject}/versions",
                          {"schema": ORDER, "schemaType": "PROTOBUF"})
    assert (status, doc["error_code"]) == (409, 409) and "TYPE_MISMATCH" in doc["message"]
    c.set_compatibility(subject, "NONE")
    assert c.test_compatibility(subject, Schema(json.dumps(obj({"a": I})), "JSON")) is True
    c.register_schema(subject, Schema(ORDER, "PROTOBUF"))
    assert c.get_versions(subject) == [1, 2]
