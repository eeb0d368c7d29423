"""Source coordinates of exactly-once tuples, and the chain a transactional
KafkaBolt builds from them to know which source offsets it may commit.

Every tuple a KafkaSpout emits carries its record's ``topic``, ``partition``
and ``offset`` and ``from_offset``: the partition position before the
record, i.e. one past the previous tuple the spout emitted from that
partition, or the position the spout started the partition at. The tuples of
one partition therefore form a chain of intervals ``[from_offset, offset+1)``
that covers every offset, including the records the spout skipped
(``translate()`` returned None, aborted records, transaction markers). The
intervals are deterministic: a replay, or a restarted spout starting at a
committed position, yields the same ``from_offset`` for a record or a
smaller one that still meets the chain.

:class:`PartitionChain` is the bolt's view of one source partition.
Invariant: ``frontier`` (when known) is the partition's position committed
in the spout's group, and every buffered entry has ``offset >= frontier``.
The ready run is the longest sequence of buffered entries, in offset order,
each starting at or before the end of the previous one (the first at or
before the frontier). Writing exactly that run and committing its end never
skips an offset and never writes an offset below the committed position.

Not thread-safe: the owner serialises calls.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

TP = tuple[str, int]
SOURCE_FIELDS = ("topic", "partition", "offset", "from_offset")


@dataclass
class Entry:
    """One source record waiting to be written: its output ``record`` and the
    ids of every tuple that carried it (a replay adds its id here)."""
    offset: int
    from_offset: int
    record: Any
    tuple_ids: list[str] = field(default_factory=list)


class PartitionChain:
    """Buffered entries and the committed frontier of one source partition."""

    def __init__(self) -> None:
        self.frontier: int | None = None   # None: not read from the group yet
        self._entries: dict[int, Entry] = {}

    def __len__(self) -> int:
        return len(self._entries)

    def add(self, offset: int, from_offset: int, record: Any, tuple_id: str) -> bool:
        """Buffers a tuple. False when its offset is already committed: the
        caller acks it without writing (a replay of something written)."""
        if self.frontier is not None and offset < self.frontier:
            return False
        entry = self._entries.get(offset)
        if entry is None:
            entry = self._entries[offset] = Entry(offset, from_offset, record)
        entry.tuple_ids.append(tuple_id)
        return True

    def set_frontier(self, frontier: int | None) -> list[str]:
        """Sets (or, with None, forgets) the committed position; returns the
        tuple ids of entries now below it (to ack: already committed)."""
        self.frontier = frontier
        if frontier is None:
            return []
        done = [o for o in self._entries if o < frontier]
        return [tid for o in done for tid in self._entries.pop(o).tuple_ids]

    def ready(self, limit: int) -> tuple[list[Entry], int]:
        """The ready run from the frontier (at most ``limit`` entries) and the
        position one past it. Entries stay buffered until :meth:`written` or
        :meth:`dropped`; a tuple added meanwhile for one of them joins it."""
        if self.frontier is None:
            return [], -1
        run, pos = [], self.frontier
        for off in sorted(self._entries):
            entry = self._entries[off]
            if entry.from_offset > pos or len(run) >= limit:
                break
            run.append(entry)
            pos = off + 1
        return run, pos

    def written(self, run: list[Entry], end: int) -> list[str]:
        """The run was committed up to ``end``: the new frontier. Returns the
        ids to ack (every tuple that carried one of its records)."""
        self.frontier = end
        return [tid for e in run for tid in self._entries.pop(e.offset).tuple_ids]

    def dropped(self, run: list[Entry]) -> list[str]:
        """The run's transaction failed: forget it; returns the ids to fail
        (the spout replays them)."""
        return [tid for e in run for tid in self._entries.pop(e.offset).tuple_ids]
