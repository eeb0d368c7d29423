"""Exponential back-off for failed spout tuples (after storm-kafka-client's
KafkaSpoutRetryExponentialBackoff).

The n-th retry of a tuple (n = 1, 2, ...) is due
``min(max_delay, initial_delay + delay_period * 2**(n-1))`` ms after its
n-th failure. A tuple that has failed ``max_retries + 1`` times is not
scheduled again (``schedule`` returns False); ``max_retries = -1`` retries
forever.
"""
from __future__ import annotations

import heapq
import time
from typing import Hashable


class RetrySchedule:
    """Failed message ids and when each may be emitted again. Not thread-safe."""

    def __init__(self, initial_delay_ms: int, delay_period_ms: int, max_delay_ms: int,
                 max_retries: int, clock=time.monotonic) -> None:
        self.initial_s = initial_delay_ms / 1000.0
        self.period_s = delay_period_ms / 1000.0
        self.max_s = max_delay_ms / 1000.0
        self.max_retries = max_retries
        self._clock = clock
        self._fails: dict[Hashable, int] = {}
        self._due: dict[Hashable, float] = {}
        self._heap: list[tuple[float, int, Hashable]] = []
        self._seq = 0

    def delay_s(self, failures: int) -> float:
        """Back-off before the retry that follows the ``failures``-th failure."""
        return min(self.max_s, self.initial_s + self.period_s * (2 ** (failures - 1)))

    def schedule(self, msg_id: Hashable) -> bool:
        """Records a failure; True if a retry is scheduled, False if the retry
        limit is exhausted (the id is then forgotten)."""
        n = self._fails.get(msg_id, 0) + 1
        if self.max_retries >= 0 and n > self.max_retries:
            self.forget(msg_id)
            return False
        self._fails[msg_id] = n
        due = self._clock() + self.delay_s(n)
        self._due[msg_id] = due
        self._seq += 1
        heapq.heappush(self._heap, (due, self._seq, msg_id))
        return True

    def pop_due(self) -> Hashable | None:
        """An id whose retry is due now (earliest first), or None."""
        now = self._clock()
        while self._heap and self._heap[0][0] <= now:
            due, _, msg_id = heapq.heappop(self._heap)
            if self._due.get(msg_id) == due:   # else: stale entry (acked or rescheduled)
                del self._due[msg_id]
                return msg_id
        return None

    def failures(self, msg_id: Hashable) -> int:
        return self._fails.get(msg_id, 0)

    def forget(self, msg_id: Hashable) -> None:
        """The id was acked or its partition revoked: no retry, count reset."""
        self._fails.pop(msg_id, None)
        self._due.pop(msg_id, None)

    def forget_where(self, pred) -> None:
        """forget() every id for which ``pred(id)`` is true."""
        for msg_id in [m for m in self._fails if pred(m)]:
            self.forget(msg_id)

    def __len__(self) -> int:
        return len(self._due)
