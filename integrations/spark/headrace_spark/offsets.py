"""Offsets: option parsing, the checkpoint JSON, admission control, ranges.

A partition is a ``(topic, partition)`` tuple. A set of positions is a
``dict[(topic, partition), offset]``; in Spark's checkpoint it is written in
the same JSON form Spark's Kafka source uses, ``{"topic": {"0": 42}}``.

Pure functions only (no client): everything here is deterministic, which is
what makes a replayed micro-batch read exactly the same records.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Union

from pyspark.sql.datasource import InputPartition

EARLIEST = -2   # in per-partition JSON, as in Spark and Kafka's ListOffsets
LATEST = -1

TopicPartitionKey = tuple[str, int]
Positions = dict[TopicPartitionKey, int]
# "earliest" | "latest" | {(topic, partition): offset or EARLIEST/LATEST}
OffsetSpec = Union[str, Positions]


class OffsetSpecError(ValueError):
    """A startingOffsets / endingOffsets / timestamp option that cannot be parsed."""


def parse_offset_spec(raw: Any, name: str, default: str) -> OffsetSpec:
    """'earliest', 'latest' or per-partition JSON ``{"t":{"0":23,"1":-2}}``."""
    if raw is None or str(raw).strip() == "":
        return default
    text = str(raw).strip()
    if text.lower() in ("earliest", "latest"):
        return text.lower()
    try:
        return positions_from_json(json.loads(text))
    except (ValueError, AttributeError, TypeError):
        raise OffsetSpecError(f"Option '{name}' must be 'earliest', 'latest' or JSON like "
                              f"{{\"topicA\":{{\"0\":23,\"1\":-1}}}}, got {text!r}")


def parse_timestamp_spec(all_partitions: Any, by_partition: Any) -> Any:
    """startingTimestamp (one ms value for every partition) wins over
    startingOffsetsByTimestamp (per-partition JSON), as in Spark."""
    try:
        if all_partitions is not None and str(all_partitions).strip():
            return int(str(all_partitions).strip())
        if by_partition is not None and str(by_partition).strip():
            return positions_from_json(json.loads(str(by_partition)))
    except (ValueError, AttributeError, TypeError):
        raise OffsetSpecError("Options 'startingTimestamp' (ms) / 'startingOffsetsByTimestamp' "
                              "(JSON {\"topic\":{\"0\":ms}}) cannot be parsed")
    return None


# The key under which a micro-batch's end offset carries its plan. ':' is
# not allowed in topic names, so it never collides with a topic.
PLAN_KEY = "headrace:plan"


def positions_from_json(data: dict) -> Positions:
    """``{"t": {"0": 5}}`` -> ``{("t", 0): 5}`` (a recorded plan is not a position)."""
    return {(str(t), int(p)): int(o) for t, parts in data.items() if t != PLAN_KEY
            for p, o in parts.items()}


def with_plan(offsets: dict, min_partitions: int | None) -> dict:
    """``offsets`` (checkpoint JSON) plus the plan that splits the batch
    ending there: replays of the batch split it the same way, whatever the
    options say when they run."""
    return {**offsets, PLAN_KEY: {"minPartitions": int(min_partitions or 0)}}


def recorded_min_partitions(offsets: dict, default: int | None) -> int | None:
    """The ``minPartitions`` recorded with a batch's end offsets; ``default``
    (the current option) for offsets written before plans were recorded."""
    plan = offsets.get(PLAN_KEY)
    if not isinstance(plan, dict) or "minPartitions" not in plan:
        return default
    return int(plan["minPartitions"]) or None


def positions_to_json(positions: Positions) -> dict:
    """The checkpoint form: topics and partitions sorted, partition keys as strings."""
    out: dict[str, dict[str, int]] = {}
    for (topic, part), off in sorted(positions.items()):
        out.setdefault(topic, {})[str(part)] = int(off)
    return out


def rate_limit(start: Positions, end: Positions, max_rows: int) -> Positions:
    """Caps ``end`` so that at most ``max_rows`` offsets are admitted in total,
    shared in proportion to each partition's backlog (largest remainders get
    the leftover rows; ties broken by partition, so the result is
    deterministic). A partition missing from ``start`` starts at 0.

    Invariant: start[tp] <= result[tp] <= end[tp] where end[tp] >= start[tp],
    and sum(result - start) == min(max_rows, total backlog)."""
    backlog = {tp: end[tp] - start.get(tp, 0) for tp in end if end[tp] > start.get(tp, 0)}
    total = sum(backlog.values())
    if total <= max_rows:
        return dict(end)
    share = {tp: max_rows * lag // total for tp, lag in backlog.items()}
    left = max_rows - sum(share.values())
    by_remainder = sorted(backlog, key=lambda tp: (-(max_rows * backlog[tp] % total), tp))
    for tp in by_remainder:
        if left == 0:
            break
        if share[tp] < backlog[tp]:
            share[tp] += 1
            left -= 1
    result = dict(end)
    for tp, n in share.items():
        result[tp] = start.get(tp, 0) + n
    return result


class OffsetRange(InputPartition):
    """One Spark task: records ``[from_offset, until_offset)`` of one partition."""

    def __init__(self, topic: str, partition: int, from_offset: int, until_offset: int):
        super().__init__((topic, partition, from_offset, until_offset))
        self.topic = topic
        self.partition = partition
        self.from_offset = from_offset
        self.until_offset = until_offset

    @property
    def size(self) -> int:
        return max(0, self.until_offset - self.from_offset)

    def __repr__(self) -> str:
        return f"OffsetRange({self.topic}-{self.partition} [{self.from_offset}, " \
               f"{self.until_offset}))"


def plan_ranges(start: Positions, end: Positions, min_partitions: int | None) -> list[OffsetRange]:
    """One range per partition with data between ``start`` (missing: 0) and
    ``end``; with ``min_partitions``, large ranges are cut into near-equal
    pieces so that there are at least that many tasks (where the data allows).
    The same inputs always give the same ranges."""
    ranges = [OffsetRange(t, p, start.get((t, p), 0), until)
              for (t, p), until in sorted(end.items()) if until > start.get((t, p), 0)]
    total = sum(r.size for r in ranges)
    if not min_partitions or len(ranges) >= min_partitions or total == 0:
        return ranges
    out: list[OffsetRange] = []
    for r in ranges:
        pieces = min(r.size, -(-r.size * min_partitions // total))   # ceil, at most one per offset
        step, extra = divmod(r.size, pieces)
        begin = r.from_offset
        for i in range(pieces):
            until = begin + step + (1 if i < extra else 0)
            out.append(OffsetRange(r.topic, r.partition, begin, until))
            begin = until
    return out


@dataclass(frozen=True)
class DataLoss:
    """What went missing in one partition, for the error or warning text."""

    topic: str
    partition: int
    detail: str

    def message(self) -> str:
        return (f"Data loss in {self.topic}-{self.partition}: {self.detail}. Some data may have "
                f"been lost because it is no longer available in the broker (deleted by "
                f"retention, DeleteRecords, or the topic was recreated). If you want your query "
                f"to go on in this case, set the source option 'failOnDataLoss' to 'false'.")
