"""The multi-lang ceiling of bench/storm_bench.py: a streamparse spout and
bolt that do nothing but speak the protocol, with tuples of the shape and
size KafkaSpout emits (topic, partition, offset, key, value, from_offset;
message id ``topic:partition:offset`` when tracked).

Storm configuration keys (set by the bench):
- ``bench.tracked``: emit with a message id (acks come back) or without.
- ``bench.per_next``: tuples emitted per ``next`` (Storm accepts any number
  before ``sync``); tracked tuples never exceed ``topology.max.spout.pending``
  in flight.
- ``bench.value_size``: characters of the value field.
"""
from __future__ import annotations

from streamparse.storm.bolt import Bolt
from streamparse.storm.spout import Spout


class NoopSpout(Spout):
    outputs = ["topic", "partition", "offset", "key", "value", "from_offset"]

    def initialize(self, storm_conf: dict, context: dict) -> None:
        self._tracked = bool(storm_conf.get("bench.tracked", True))
        self._per_next = int(storm_conf.get("bench.per_next", 1))
        self._max_pending = int(storm_conf.get("topology.max.spout.pending") or 0)
        self._value = "x" * int(storm_conf.get("bench.value_size", 100))
        self._offset = 0
        self._in_flight = 0

    def next_tuple(self) -> None:
        n = self._per_next
        if self._tracked and self._max_pending:
            n = min(n, self._max_pending - self._in_flight)
        for _ in range(n):
            off = self._offset
            self._offset += 1
            values = ["bench", 0, off, None, self._value, off]
            if self._tracked:
                self._in_flight += 1
                self.emit(values, tup_id=f"bench:0:{off}")
            else:
                self.emit(values)

    def ack(self, tup_id) -> None:
        self._in_flight -= 1

    def fail(self, tup_id) -> None:
        self._in_flight -= 1


class NoopBolt(Bolt):
    """Acks every tuple as it arrives (streamparse's auto_ack)."""
    outputs: list[str] = []

    def process(self, tup) -> None:
        pass
