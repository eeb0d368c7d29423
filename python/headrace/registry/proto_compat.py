"""Protobuf schema compatibility over parsed descriptors (``protobuf``'s
FileDescriptorProto, as headrace.registry.schema_types parses them; no
``.proto`` text is read here), with Confluent Schema Registry's documented
Protobuf rules and its names for each kind of difference.

Contract: ``differences(original, update)`` lists what changes from
``original`` to ``update`` as (errorType, description) pairs, incompatible
ones only, for a reader of ``update`` that must read data written with
``original``. The registry's BACKWARD asks ``differences(old, new)``,
FORWARD ``differences(new, old)``, FULL both.

Messages are matched by full name (package and nesting), fields by number
(what the wire carries). Rules covered, with Confluent's errorType:

- PACKAGE_CHANGED: the file's package differs (incompatible).
- MESSAGE_REMOVED: a message of ``original`` has no message of that full
  name in ``update`` (incompatible). Added messages are compatible.
- FIELD_KIND_CHANGED: a field number changes between scalar, message and
  enum kinds (incompatible; enum <-> a varint scalar is wire-compatible
  and allowed).
- FIELD_SCALAR_KIND_CHANGED: a scalar field's type changes across wire
  groups (incompatible). Within a group it is compatible: varint
  {int32, uint32, int64, uint64, bool}, zigzag {sint32, sint64}, 32-bit
  {fixed32, sfixed32}, 64-bit {fixed64, sfixed64}, length-delimited
  {string, bytes}; float and double stand alone.
- FIELD_NAMED_TYPE_CHANGED: a message or enum field names another type
  (incompatible).
- FIELD_LABEL_CHANGED: singular <-> repeated for a field that is not
  length-delimited (string, bytes, message) (incompatible).
- REQUIRED_FIELD_ADDED / REQUIRED_FIELD_REMOVED: a proto2 ``required``
  field appears (a field added as required, or optional made required) or
  disappears (incompatible); required -> optional is compatible.
- ONEOF_FIELD_REMOVED: a field that was in a oneof is gone (incompatible).
- FIELD_MOVED_TO_EXISTING_ONEOF: a field outside any oneof moves into a
  oneof ``original`` already had (incompatible).
- MULTIPLE_FIELDS_MOVED_TO_ONEOF: more than one existing field moves into
  one new oneof (incompatible; a single one is compatible).

Compatible and so never listed: fields added or removed (outside oneofs),
renamed fields, enum values added or removed, enums added or removed,
syntax (proto2/proto3) and options, services.
"""
from __future__ import annotations

from google.protobuf import descriptor_pb2

F = descriptor_pb2.FieldDescriptorProto
_GROUPS = [
    {F.TYPE_INT32, F.TYPE_UINT32, F.TYPE_INT64, F.TYPE_UINT64, F.TYPE_BOOL},
    {F.TYPE_SINT32, F.TYPE_SINT64},
    {F.TYPE_FIXED32, F.TYPE_SFIXED32},
    {F.TYPE_FIXED64, F.TYPE_SFIXED64},
    {F.TYPE_STRING, F.TYPE_BYTES},
    {F.TYPE_FLOAT},
    {F.TYPE_DOUBLE},
]
_VARINT = _GROUPS[0]
_LENGTH_DELIMITED = {F.TYPE_STRING, F.TYPE_BYTES, F.TYPE_MESSAGE}


def _messages(fdp) -> dict[str, descriptor_pb2.DescriptorProto]:
    """Every message of the file (nested ones too) by full name."""
    out = {}

    def walk(prefix: str, msgs):
        for m in msgs:
            name = f"{prefix}.{m.name}" if prefix else m.name
            out[name] = m
            walk(name, m.nested_type)

    walk(fdp.package, fdp.message_type)
    return out


def _kind(f) -> str:
    if f.type in (F.TYPE_MESSAGE, F.TYPE_GROUP):
        return "MESSAGE"
    if f.type == F.TYPE_ENUM:
        return "ENUM"
    return "SCALAR"


def _type_name(f) -> str:
    if f.type_name:
        return f.type_name.lstrip(".")
    return descriptor_pb2.FieldDescriptorProto.Type.Name(f.type).removeprefix("TYPE_").lower()


def _oneof(m, f) -> str | None:
    """The name of the real oneof ``f`` is in (proto3 ``optional``'s
    synthetic oneof is not one), else None."""
    if not f.HasField("oneof_index") or f.proto3_optional:
        return None
    return m.oneof_decl[f.oneof_index].name


def differences(original, update) -> list[tuple[str, str]]:
    """See the module's contract."""
    out: list[tuple[str, str]] = []
    if original.package != update.package:
        out.append(("PACKAGE_CHANGED", f"The package changed from '{original.package}' to "
                                       f"'{update.package}'"))
    old_msgs, new_msgs = _messages(original), _messages(update)
    for name, old in old_msgs.items():
        new = new_msgs.get(name)
        if new is None:
            out.append(("MESSAGE_REMOVED", f"The message '{name}' in the old schema is missing "
                                           f"in the new schema"))
            continue
        out += _message_differences(name, old, new)
    return out


def _message_differences(name: str, old, new) -> list[tuple[str, str]]:
    out = []
    old_fields = {f.number: f for f in old.field}
    new_fields = {f.number: f for f in new.field}
    old_oneofs = {o.name for o in old.oneof_decl}
    moved_to_new_oneof: dict[str, int] = {}
    for number, f in old_fields.items():
        at = f"'{name}' field {number} ('{f.name}')"
        g = new_fields.get(number)
        if g is None:
            if f.label == F.LABEL_REQUIRED:
                out.append(("REQUIRED_FIELD_REMOVED", f"The required field {at} is missing in "
                                                      f"the new schema"))
            elif _oneof(old, f) is not None:
                out.append(("ONEOF_FIELD_REMOVED", f"The field {at} of oneof "
                                                   f"'{_oneof(old, f)}' is missing in the new "
                                                   f"schema"))
            continue
        out += _field_differences(at, f, g)
        if g.label == F.LABEL_REQUIRED and f.label != F.LABEL_REQUIRED:
            out.append(("REQUIRED_FIELD_ADDED", f"The field {at} is required in the new schema "
                                                f"only"))
        was, now = _oneof(old, f), _oneof(new, g)
        if was is None and now is not None:
            if now in old_oneofs:
                out.append(("FIELD_MOVED_TO_EXISTING_ONEOF", f"The field {at} moved into the "
                                                             f"existing oneof '{now}'"))
            else:
                moved_to_new_oneof[now] = moved_to_new_oneof.get(now, 0) + 1
    for oneof, count in sorted(moved_to_new_oneof.items()):
        if count > 1:
            out.append(("MULTIPLE_FIELDS_MOVED_TO_ONEOF", f"{count} existing fields of "
                                                          f"'{name}' moved into the new oneof "
                                                          f"'{oneof}'"))
    for number, g in new_fields.items():
        if number not in old_fields and g.label == F.LABEL_REQUIRED:
            out.append(("REQUIRED_FIELD_ADDED", f"The required field '{name}' field {number} "
                                                f"('{g.name}') is missing in the old schema"))
    return out


def _field_differences(at: str, f, g) -> list[tuple[str, str]]:
    kf, kg = _kind(f), _kind(g)
    if kf != kg:
        if {kf, kg} == {"ENUM", "SCALAR"} and ({f.type, g.type} - {F.TYPE_ENUM}) <= _VARINT:
            pass  # an enum is a varint on the wire
        else:
            return [("FIELD_KIND_CHANGED", f"The field {at} changed from a {kf.lower()} "
                                           f"({_type_name(f)}) to a {kg.lower()} "
                                           f"({_type_name(g)})")]
    elif kf == "SCALAR" and f.type != g.type and \
            not any(f.type in grp and g.type in grp for grp in _GROUPS):
        return [("FIELD_SCALAR_KIND_CHANGED", f"The field {at} changed from {_type_name(f)} to "
                                              f"{_type_name(g)}, which the wire does not carry "
                                              f"alike")]
    elif kf != "SCALAR" and f.type_name.lstrip(".") != g.type_name.lstrip("."):
        return [("FIELD_NAMED_TYPE_CHANGED", f"The field {at} changed from type "
                                             f"'{f.type_name.lstrip('.')}' to "
                                             f"'{g.type_name.lstrip('.')}'")]
    repeated = (f.label == F.LABEL_REPEATED, g.label == F.LABEL_REPEATED)
    if repeated[0] != repeated[1] and not {f.type, g.type} <= _LENGTH_DELIMITED:
        return [("FIELD_LABEL_CHANGED", f"The field {at} changed between singular and repeated "
                                        f"({_type_name(f)} is not length-delimited)")]
    return []
