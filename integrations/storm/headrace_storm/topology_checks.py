"""What an exactly-once topology must look like, checked by the transactional
KafkaBolt at start from the topology context Storm hands over (Storm 0.10+:
``source->stream->fields``, ``source->stream->grouping``, ``task->component``).

Contract: :func:`check_transactional_inputs` returns None when the bolt's
inputs carry the source coordinates (source_chain.SOURCE_FIELDS) and route
each source partition to one task, else raises ConfigError saying what to
change.
"""
from __future__ import annotations

from typing import Any, Mapping

from .config import ConfigError
from .source_chain import SOURCE_FIELDS

# Groupings that send every tuple of one source partition to the same task.
# Storm hands global grouping to multilang components as a fields grouping
# with no fields (that is how it is stored in the topology), so an empty
# FIELDS grouping counts as global.
_WHOLE = {"GLOBAL"}
_PARTITION_KEYS = {"topic", "partition"}


def task_index(context: Mapping[str, Any]) -> int:
    """This task's index among its component's tasks (stable across worker
    restarts; Storm numbers a component's tasks consecutively)."""
    me, task = context.get("componentid"), int(context.get("taskid", 0))
    mine = sorted(int(t) for t, c in (context.get("task->component") or {}).items() if c == me)
    return mine.index(task) if task in mine else 0


def check_transactional_inputs(context: Mapping[str, Any]) -> None:
    fields = context.get("source->stream->fields") or {}
    groupings = context.get("source->stream->grouping") or {}
    streams = {(src, s) for src, by in groupings.items() for s in by} | \
              {(src, s) for src, by in fields.items() for s in by}
    if not streams:
        raise ConfigError("headrace.transactional: the topology context names no input "
                          "stream (Storm 0.10+ with declared output fields is required)")
    me = context.get("componentid")
    tasks = sum(1 for c in (context.get("task->component") or {}).values() if c == me)
    for src, stream in sorted(streams):
        declared = (fields.get(src) or {}).get(stream)
        missing = [f for f in SOURCE_FIELDS if f not in (declared or [])]
        if missing:
            raise ConfigError(
                f"headrace.transactional: input {src}/{stream} lacks the field(s) "
                f"{', '.join(missing)}; every bolt between the exactly_once KafkaSpout and "
                f"this bolt must declare and pass on {', '.join(SOURCE_FIELDS)} unchanged")
        grouping = (groupings.get(src) or {}).get(stream) or {}
        if tasks > 1 and not _one_task_per_partition(grouping):
            raise ConfigError(
                f"headrace.transactional: input {src}/{stream} uses grouping "
                f"{grouping.get('type')} {grouping.get('fields') or ''} over {tasks} tasks; "
                f"each source partition must reach one task: use fields grouping on "
                f"['topic', 'partition'], or run one task")


def _one_task_per_partition(grouping: Mapping[str, Any]) -> bool:
    kind = str(grouping.get("type", "")).upper()
    if kind in _WHOLE:
        return True
    keys = set(grouping.get("fields") or [])
    return kind == "FIELDS" and keys <= _PARTITION_KEYS   # no keys: global
