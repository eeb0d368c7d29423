"""ShareSpout: a streamparse spout reading a share group (KIP-932,
docs/share-groups.md), so that Storm's per-tuple ack and fail are the
broker's per-record ACCEPT and RELEASE.

Contract:
- Every tuple carries the message id ``"<topic>:<partition>:<offset>"``
  (tracked). Its record is acknowledged ACCEPT when Storm acks the tuple,
  RELEASE when Storm fails it (``headrace.fail_as=release``, the default:
  the broker delivers the record again, to any task of the group, with a
  higher delivery count, and archives it once
  ``share.delivery.count.limit`` deliveries were not accepted) or REJECT
  (``fail_as=reject``: archived, never delivered again). A record whose
  tuple is neither acked nor failed within the group's
  ``share.record.lock.duration.ms`` is delivered again too; so is every
  record a task held when it died. Records are therefore processed at
  least once; what is in flight lives in the broker, not in the spout.
- Any number of tasks may read one partition: the broker hands each
  acquisition to one member.
- A task polls again only once every tuple of its last poll is acked or
  failed (the share consumer's explicit mode requires it); the
  acknowledgements reach the broker with that poll. Storm calls ``next``
  only below ``topology.max.spout.pending``; a ``next`` emits up to
  ``emit_batch`` tuples, never past that limit.
- Where a new share group starts is the group's
  ``share.auto.offset.reset`` (latest unless set: `headrace config set
  --group G share.auto.offset.reset=earliest`).

Storm drives a shell spout synchronously (next / ack / fail, each answered
by ``sync``), so everything here runs in the component's one thread.
"""
from __future__ import annotations

import time
from collections import deque
from typing import Any

from confluent_kafka import AcknowledgeType, KafkaException, Message, ShareConsumer

from . import config as cfg
from .config import ConfigError
from .consumer import share_consumer_config
from .spout import message_id
from .spout_base import StormSpout

WARN_EVERY_S = 10.0  # the same poll error is logged at most this often


class ShareSpout(StormSpout):
    """Emits one tracked tuple per record of a share group's topics.
    Configure by subclass attributes or ``headrace.*`` keys of the Storm
    configuration (docs/storm.md, "ShareSpout"). Override :meth:`translate`
    (and ``outputs``) to shape tuples."""

    outputs = ["topic", "partition", "offset", "key", "value", "delivery_count"]

    brokers: str | list[str] | None = None
    kafka: dict | None = None
    topics: list[str] | str | None = None
    group: str | None = None  # default: headrace-storm-<topology name>-<component>
    poll_timeout_ms = 100
    max_poll_records = 500
    emit_batch = 1
    fail_as = "release"
    encoding = "utf-8"
    consumer: dict | None = None

    def initialize(self, storm_conf: dict, context: dict) -> None:
        """Validates settings (fails fast with an error sent to Storm),
        creates the share consumer and subscribes."""
        try:
            s = cfg.resolve(self, cfg.SHARE_SPOUT, storm_conf)
            cfg.require(s, "brokers", "the bootstrap servers of the cluster to read")
            cfg.require(s, "topics", "the topics the share group reads")
            s["group"] = s["group"] or cfg.default_group(self.topology_name, self.component_name)
            conf = share_consumer_config(s, s["group"],
                                         f"headrace-storm-{self.component_name}-{self.task_id}")
        except ConfigError as e:
            self._fail_fast(e)
        self.settings = s
        self._decode = self.decoder(s["encoding"])
        self._fail_type = AcknowledgeType.REJECT if s["fail_as"] == "reject" \
            else AcknowledgeType.RELEASE
        self._max_pending = int(storm_conf.get("topology.max.spout.pending") or 0)
        self._polled: deque[Message] = deque()    # acquired, not emitted yet
        self._in_flight: dict[str, Message] = {}  # emitted, neither acked nor failed
        self._last_warning: tuple[str, float] = ("", 0.0)
        self._consumer = ShareConsumer(conf)
        self._consumer.subscribe(list(s["topics"]))

    # -- Storm commands ------------------------------------------------------
    def next_tuple(self) -> None:
        if not self._polled and not self._in_flight:
            self._poll()
        n = self.settings["emit_batch"]
        if self._max_pending:
            n = max(1, min(n, self._max_pending - len(self._in_flight)))
        while n and self._polled:
            record = self._polled.popleft()
            values = self.translate(record)
            if values is None:   # skipped: done with it
                self._acknowledge(record, AcknowledgeType.ACCEPT)
                continue
            tup_id = message_id((record.topic(), record.partition()), record.offset())
            self._in_flight[tup_id] = record
            self.emit(values, tup_id=tup_id)
            n -= 1

    def ack(self, tup_id: Any) -> None:
        record = self._in_flight.pop(str(tup_id), None)
        if record is not None:
            self._acknowledge(record, AcknowledgeType.ACCEPT)

    def fail(self, tup_id: Any) -> None:
        record = self._in_flight.pop(str(tup_id), None)
        if record is not None:
            self._acknowledge(record, self._fail_type)

    def deactivate(self) -> None:
        """Storm stops calling next: the acknowledgements made so far go now."""
        try:
            self._consumer.commit_async()
        except KafkaException as e:
            self._warn(f"cannot send acknowledgements: {e}")

    # -- shaping tuples --------------------------------------------------------
    def translate(self, record: Message) -> list[Any] | None:
        """Record -> tuple values (must match ``outputs``); None skips the
        record (it is accepted). Default: topic, partition, offset, key and
        value as text (headrace.encoding), the record's delivery count."""
        decode = self._decode
        return [record.topic(), record.partition(), record.offset(),
                decode(record.key()), decode(record.value()), record.delivery_count()]

    # -- the share consumer ----------------------------------------------------
    def _poll(self) -> None:
        """Acquires the next records (sending the acknowledgements made
        since the last poll)."""
        try:
            records = self._consumer.poll(self.settings["poll_timeout_ms"] / 1e3)
        except KafkaException as e:
            self._warn(f"poll failed: {e}")
            return
        for r in records:
            if r.error() is not None:
                self._warn(f"poll: {r.error()}")
            else:
                self._polled.append(r)

    def _acknowledge(self, record: Message, kind: AcknowledgeType) -> None:
        try:
            self._consumer.acknowledge(record, kind)
        except Exception as e:  # noqa: BLE001 - e.g. its lock expired: the broker redelivers it
            self._warn(f"cannot acknowledge {record.topic()}:{record.partition()}:"
                       f"{record.offset()} ({e}); the broker delivers it again")

    def _warn(self, text: str) -> None:
        last, at = self._last_warning
        now = time.monotonic()
        if text != last or now - at >= WARN_EVERY_S:
            self.logger.warning(text)
            self._last_warning = (text, now)
