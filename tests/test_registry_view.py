"""The registry's view of ``_schemas`` (headrace.registry.view) applied
from records as Confluent's registry writes them, including the rules that
keep ids unique: a record naming an id another schema holds is ignored,
and a permanent delete never lowers the highest id."""
from __future__ import annotations

from headrace.registry import records as R
from headrace.registry.view import View


def schema(subject, version, id_, text='"string"', deleted=False):
    rec = R.SchemaRecord(subject, version, id_, text, deleted=deleted)
    return R.schema_key(subject, version), R.schema_value(rec)


def apply_all(view, recs):
    for offset, (k, v) in enumerate(recs):
        view.apply(k, v, offset)


def test_confluent_written_records_are_read():
    v = View()
    apply_all(v, [
        (b'{"keytype":"SCHEMA","subject":"Kafka-key","version":1,"magic":1}',
         b'{"subject":"Kafka-key","version":1,"id":1,"schema":"\\"string\\"","deleted":false}'),
        (b'{"keytype":"CONFIG","subject":null,"magic":0}', b'{"compatibilityLevel":"FULL"}'),
        (b'{"keytype":"NOOP","magic":0}', None),
    ])
    assert v.skipped == 0
    assert v.subject_names() == ["Kafka-key"]
    assert v.schema(1).schema == '"string"'
    assert v.config(None) == "FULL"


def test_an_id_taken_by_another_schema_is_ignored():
    v = View()
    apply_all(v, [schema("a", 1, 5, '"string"'), schema("b", 1, 5, '"int"')])
    assert v.subject_names() == ["a"]
    assert v.skipped == 1
    assert v.schema(5).schema == '"string"'


def test_delete_subject_and_tombstones():
    v = View()
    apply_all(v, [schema("s", 1, 1), schema("s", 2, 2, '"int"'),
                  (R.delete_subject_key("s"), R.delete_subject_value("s", 2))])
    assert v.subject_names() == [] and v.subject_names(deleted=True) == ["s"]
    apply_all(v, [(R.schema_key("s", 1), None), (R.schema_key("s", 2), None)])
    assert v.subject_names(deleted=True) == []
    assert v.schema(1) is None and v.max_id == 2  # never lowered


def test_malformed_records_are_skipped():
    v = View()
    apply_all(v, [(b"not json", b"{}"), (b'{"keytype":"SCHEMA","subject":"x"}', b"{}"),
                  (R.schema_key("x", 1), b'{"subject":"x"}'), schema("ok", 1, 1)])
    assert v.skipped == 3
    assert v.subject_names() == ["ok"]


def test_id_floor_record_raises_max_id_without_schemas():
    """What a compacted topic holds after the highest id's versions were
    permanently deleted: the floor record, not their SCHEMA records."""
    v = View()
    apply_all(v, [schema("kept", 1, 1), (R.id_floor_key(), R.id_floor_value(7))])
    assert (v.max_id, v.floor, v.skipped) == (7, 7, 0)
    assert v.schema(7) is None and v.subject_names() == ["kept"]
    apply_all(v, [(R.id_floor_key(), R.id_floor_value(3)), (R.id_floor_key(), b'{}')])
    assert (v.max_id, v.floor, v.skipped) == (7, 7, 1)  # never lowered; malformed skipped
