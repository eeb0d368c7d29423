"""Streamparse components the Storm tests run between or instead of the
headrace ones (started by ``streamparse_run storm_components.<Class>`` with
this directory on PYTHONPATH, see storm_topology.components_on_path).

- ``UpperWithSource``: the intermediate bolt of an exactly-once topology: it
  upper-cases the value and passes the source coordinates (topic,
  partition, offset, from_offset) on unchanged, anchored to its input.
  With the Storm setting ``test.fail_offsets_mod: k`` it fails, the first
  time it sees them, the tuples whose offset % k == 1 (a transient failure).
- ``NarrowSpout``: a KafkaSpout whose outputs lack the source coordinates
  (refused under exactly_once).
"""
from __future__ import annotations

from streamparse import Bolt

from headrace.storm import KafkaSpout


class UpperWithSource(Bolt):
    outputs = ["topic", "partition", "offset", "from_offset", "key", "message"]
    auto_ack = False

    def initialize(self, storm_conf, context):
        self.fail_mod = int(storm_conf.get("test.fail_offsets_mod", 0))
        self.failed_once: set[tuple] = set()

    def process(self, tup):
        v = tup.values
        coords = (v.topic, v.partition, v.offset)
        if self.fail_mod and v.offset % self.fail_mod == 1 and coords not in self.failed_once:
            self.failed_once.add(coords)
            self.fail(tup)
            return
        self.emit([v.topic, v.partition, v.offset, v.from_offset, v.key,
                   (v.value or "").upper()], anchors=[tup])
        self.ack(tup)


class NarrowSpout(KafkaSpout):
    outputs = ["key", "value"]

    def translate(self, record):
        return [self._text(record.key()), self._text(record.value())]
