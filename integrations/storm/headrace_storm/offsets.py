"""Per-partition bookkeeping of the spout for AT_LEAST_ONCE (storm-kafka-client's
OffsetManager idea): which offsets were emitted, which of them are acked, and
which offset can be committed.

Invariant: ``_emitted`` holds, in increasing order, every offset emitted and
not yet covered by a commit; ``_acked`` is a subset of it. The committable
offset is one past the longest prefix of ``_emitted`` that is entirely acked,
so a commit never passes a tuple that is still in flight or failed. Offsets
the broker never returned (compacted away, transaction markers) are not in
``_emitted`` and do not block the prefix.
"""
from __future__ import annotations

import bisect
from typing import Any


class PartitionOffsets:
    """Emitted/acked offsets of one assigned partition. Not thread-safe."""

    def __init__(self) -> None:
        self._emitted: list[int] = []
        self._acked: set[int] = set()
        self._values: dict[int, list[Any]] = {}
        self.committed: int | None = None  # last offset committed by this task (next to read)

    def emitted(self, offset: int, values: list[Any] | None) -> None:
        """Records a first emission; ``values`` are kept for re-emission."""
        if offset in self._values or offset in self._acked:
            return
        if not self._emitted or offset > self._emitted[-1]:
            self._emitted.append(offset)
        else:
            bisect.insort(self._emitted, offset)
        self._values[offset] = values if values is not None else []

    def values(self, offset: int) -> list[Any] | None:
        """The tuple values of an in-flight offset (None once acked)."""
        return self._values.get(offset)

    def ack(self, offset: int) -> bool:
        """Marks an emitted offset acked. False if it is unknown (a late ack
        after a commit or a revocation): the caller ignores it."""
        if offset not in self._values:
            return False
        del self._values[offset]
        self._acked.add(offset)
        return True

    def is_in_flight(self, offset: int) -> bool:
        return offset in self._values

    @property
    def uncommitted(self) -> int:
        """Emitted offsets not yet covered by a commit (acked or not)."""
        return len(self._emitted)

    @property
    def in_flight(self) -> int:
        """Emitted offsets neither acked nor committed."""
        return len(self._values)

    def next_commit(self) -> int | None:
        """One past the acked prefix, or None when nothing new can be committed."""
        n = 0
        while n < len(self._emitted) and self._emitted[n] in self._acked:
            n += 1
        return self._emitted[n - 1] + 1 if n else None

    def commit_done(self, offset: int) -> None:
        """The broker stored ``offset``: forget everything below it."""
        cut = bisect.bisect_left(self._emitted, offset)
        for o in self._emitted[:cut]:
            self._acked.discard(o)
            self._values.pop(o, None)
        del self._emitted[:cut]
        self.committed = offset
