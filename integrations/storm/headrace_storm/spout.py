"""KafkaSpout: a streamparse spout reading Kafka topics, modelled on
storm-kafka-client's KafkaSpout.

Storm drives a shell spout synchronously (next / ack / fail, each answered by
``sync``), so everything here runs in the component's one thread, rebalance
callbacks included (they run inside ``consume()``).

Guarantees (see docs/storm.md for the precise statements):
- AT_LEAST_ONCE: each tuple is emitted with a message id
  ``"<topic>:<partition>:<offset>"``; an offset is committed only once it and
  every emitted offset below it in its partition are acked. Failed tuples are
  re-emitted from memory after an exponential back-off; one that exhausts its
  retries is logged and treated as acked.
- AT_MOST_ONCE: the offsets of a polled batch are committed synchronously
  before any of its records is emitted; tuples carry no message id.
- NONE: tuples carry no message id; the emitted position is committed every
  commit period.
- EXACTLY_ONCE: tracked like AT_LEAST_ONCE, read with read_committed, and
  never committed here: a transactional KafkaBolt commits the source offsets
  with its output. Tuples carry source_chain.SOURCE_FIELDS; a partition is
  emitted from only once its position is read from the group (stable
  offsets) or, without a commit, once its start position is committed.

Partitions are served round robin: each tuple of a ``next`` comes from the
next partition with buffered records; the buffer is topped up without
waiting while an assigned, unpaused partition has none. A ``next`` emits up
to ``emit_batch`` tuples (default 1; Storm's ShellSpout takes any number of
emits before ``sync``), tracked ones never past
``topology.max.spout.pending`` in flight (at least one per ``next``, as
Storm asked for it). Emits are written unflushed and reach Storm with the
``sync``, in one write (multilang_out.py).
"""
from __future__ import annotations

import time
from collections import deque
from typing import Any

from confluent_kafka import (OFFSET_END, Consumer, KafkaError, KafkaException, Message,
                             TopicPartition)

from . import config as cfg
from .config import ConfigError, FirstPollOffsetStrategy, ProcessingGuarantee
from .consumer import commit_metadata, consumer_config, start_offset, subscription
from .offsets import PartitionOffsets
from .retry import RetrySchedule
from .source_chain import SOURCE_FIELDS
from .spout_base import StormSpout

TP = tuple[str, int]
COMMIT_TIMEOUT_S = 10.0
POSITION_TIMEOUT_S = 5.0    # one read of committed offsets (EXACTLY_ONCE, may wait for stability)
POSITION_RETRY_S = 0.5
# A partition is paused (its prefetched records dropped, fetched again on
# resume, which takes a fetch round) once this many polls' worth of records
# are buffered; at-most-once buffers one poll, as buffered records are lost
# in a crash.
BUFFER_POLLS = 10


def message_id(tp: TP, offset: int) -> str:
    """The Storm message id of a record: ``topic:partition:offset``."""
    return f"{tp[0]}:{tp[1]}:{offset}"


def parse_message_id(msg_id: Any) -> tuple[TP, int] | None:
    """Inverse of message_id (topic names cannot contain ':'); None if foreign."""
    try:
        topic, part, off = str(msg_id).rsplit(":", 2)
        return (topic, int(part)), int(off)
    except ValueError:
        return None


class KafkaSpout(StormSpout):
    """Emits one tuple per Kafka record. Configure by subclass attributes or
    ``headrace.*`` keys of the Storm configuration (those win); see
    docs/storm.md for the table. Override :meth:`translate` (and ``outputs``)
    to shape tuples."""

    outputs = ["topic", "partition", "offset", "key", "value", "from_offset"]

    brokers: str | list[str] | None = None
    kafka: dict | None = None  # connection settings of every client (security.*, sasl.*, ssl.*)
    topics: list[str] | str | None = None
    topic_pattern: str | None = None
    group: str | None = None       # default: headrace-storm-<topology name>-<component>
    guarantee = ProcessingGuarantee.AT_LEAST_ONCE
    first_poll = FirstPollOffsetStrategy.UNCOMMITTED_EARLIEST
    max_uncommitted = 10_000_000
    commit_period_ms = 30_000
    poll_timeout_ms = 100
    max_poll_records = 500
    emit_batch = 1
    retry_initial_delay_ms = 0
    retry_delay_period_ms = 2
    retry_max_delay_ms = 10_000
    retry_max_retries = -1
    encoding = "utf-8"
    consumer: dict | None = None

    # -- lifecycle -----------------------------------------------------------
    def initialize(self, storm_conf: dict, context: dict) -> None:
        """Validates settings (fails fast with an error sent to Storm), creates
        the consumer and subscribes."""
        try:
            self.settings = self._settings(storm_conf)
            conf = consumer_config(self.settings, self.settings["group"],
                                   f"headrace-storm-{self.component_name}-{self.task_id}")
        except ConfigError as e:
            self._fail_fast(e)
        s = self.settings
        self._guarantee: ProcessingGuarantee = s["guarantee"]
        self._storm_id = str(storm_conf.get("storm.id") or storm_conf.get("topology.name", ""))
        self._metadata = commit_metadata(self._storm_id, self.task_id)
        self._offsets: dict[TP, PartitionOffsets] = {}
        self._waiting: dict[TP, deque[Message]] = {}
        self._fetched: dict[TP, int] = {}      # next offset expected from the broker
        self._emitted_pos: dict[TP, int] = {}  # one past the last emitted offset
        self._committed_pos: dict[TP, int] = {}
        self._chain_pos: dict[TP, int] = {}    # from_offset of the partition's next tuple
        self._unpositioned: set[TP] = set()     # EXACTLY_ONCE: assigned, start not known yet
        self._at_end: set[TP] = set()           # reached the log end, nothing newer polled
        self._buffer_limit = s["max_poll_records"] * (
            1 if self._guarantee is ProcessingGuarantee.AT_MOST_ONCE else BUFFER_POLLS)
        self._next_position_try = 0.0
        self._paused: set[TP] = set()
        self._acked_since: set[TP] = set()     # EXACTLY_ONCE: acked since the last next
        # (output index, index into (topic, partition, offset, from_offset))
        # of the fields the spout writes itself.
        stamped = SOURCE_FIELDS if self._guarantee is ProcessingGuarantee.EXACTLY_ONCE \
            else ("from_offset",)
        self._stamp = [(self.outputs.index(f), SOURCE_FIELDS.index(f)) for f in stamped
                       if f in self.outputs]
        self._retries = RetrySchedule(s["retry_initial_delay_ms"], s["retry_delay_period_ms"],
                                      s["retry_max_delay_ms"], s["retry_max_retries"])
        self._last_commit = time.monotonic()
        self._emit_batch = s["emit_batch"]
        self._max_pending = int(storm_conf.get("topology.max.spout.pending") or 0)
        self._decode = self.decoder(s["encoding"])
        self._consumer = Consumer(conf)
        self._consumer.subscribe(subscription(s), on_assign=self._on_assign,
                                 on_revoke=self._on_revoke, on_lost=self._on_lost)

    def _settings(self, storm_conf: dict) -> dict:
        s = cfg.resolve(self, cfg.SPOUT, storm_conf)
        cfg.require(s, "brokers", "the bootstrap servers of the cluster to read")
        if bool(s.get("topics")) == bool(s.get("topic_pattern")):
            raise ConfigError("set exactly one of headrace.topics and headrace.topic_pattern")
        if not s.get("group"):
            s["group"] = cfg.default_group(self.topology_name, self.component_name)
        if s["guarantee"] is ProcessingGuarantee.EXACTLY_ONCE:
            self._check_exactly_once(s)
        return s

    def _check_exactly_once(self, s: dict) -> None:
        if s["first_poll"] not in (FirstPollOffsetStrategy.UNCOMMITTED_EARLIEST,
                                   FirstPollOffsetStrategy.UNCOMMITTED_LATEST):
            raise ConfigError("headrace.first_poll must be uncommitted_earliest or "
                              "uncommitted_latest with exactly_once: the spout resumes where "
                              "the transactional KafkaBolt committed (a new headrace.group "
                              "starts over)")
        if s["retry_max_retries"] != -1:
            raise ConfigError("headrace.retry_max_retries must be -1 with exactly_once: a "
                              "dropped tuple is a hole the KafkaBolt can never commit past")
        missing = [f for f in SOURCE_FIELDS if f not in self.outputs]
        if missing:
            raise ConfigError(f"exactly_once: the spout's outputs {self.outputs} lack "
                              f"{', '.join(missing)}; the transactional KafkaBolt needs "
                              f"{', '.join(SOURCE_FIELDS)} on every tuple")

    def deactivate(self) -> None:
        """Storm stops calling next: commit what is safe now."""
        self._commit()

    # -- Storm commands ------------------------------------------------------
    def next_tuple(self) -> None:
        """Emits up to :meth:`_batch_size` tuples: due retries first, then
        buffered records (round robin over partitions)."""
        if self._guarantee is not ProcessingGuarantee.AT_MOST_ONCE and \
                time.monotonic() - self._last_commit >= self.settings["commit_period_ms"] / 1e3:
            self._commit()
        if self._unpositioned:
            self._position()
        if self._acked_since:
            self._forget_acked_since()
        n = self._batch_size()
        while n and self._emit_due_retry():
            n -= 1
        if not n:
            return
        self._update_pause()
        if not self._waiting:
            self._poll(self.settings["poll_timeout_ms"] / 1e3)
        elif set(self._offsets) - self._paused - set(self._waiting) - self._at_end:
            self._poll(0)   # a partition has nothing buffered: top up, do not wait
        while n and self._emit_waiting():
            n -= 1

    def _batch_size(self) -> int:
        """Tuples this ``next`` may emit: ``emit_batch``, and for tracked
        tuples no more than topology.max.spout.pending minus those in flight
        (failed ones awaiting a retry count too); at least 1, as Storm only
        calls next below its max pending."""
        n = self._emit_batch
        if n > 1 and self._max_pending and self._tracked_mode:
            in_flight = sum(po.in_flight for po in self._offsets.values())
            n = max(1, min(n, self._max_pending - in_flight))
        return n

    def _tracked(self, tup_id: Any):
        """(tp, offset, its partition's offset tracker or None), or None for
        an id this spout did not emit."""
        parsed = parse_message_id(tup_id)
        if parsed is None:
            return None
        tp, off = parsed
        return tp, off, self._offsets.get(tp)

    def ack(self, tup_id: Any) -> None:
        tracked = self._tracked(tup_id)
        if tracked is None:
            return
        tp, off, po = tracked
        if po is not None and po.ack(off):
            self._retries.forget((tp, off))
            if self._guarantee is ProcessingGuarantee.EXACTLY_ONCE:
                self._acked_since.add(tp)   # forgotten at the next ``next``, once per batch

    def _forget_acked_since(self) -> None:
        """EXACTLY_ONCE: the acked prefixes of the partitions acked since the
        last ``next`` leave memory (before anything reads their uncommitted
        count: pausing, max_uncommitted, rebalance callbacks all run in next)."""
        for tp in self._acked_since:
            po = self._offsets.get(tp)
            if po is not None:
                self._forget_acked(po)
        self._acked_since.clear()

    def _forget_acked(self, po: PartitionOffsets) -> None:
        """EXACTLY_ONCE: an acked tuple was committed by the KafkaBolt's
        transaction, so the acked prefix leaves the spout's memory."""
        if self._guarantee is ProcessingGuarantee.EXACTLY_ONCE:
            nxt = po.next_commit()
            if nxt is not None:
                po.commit_done(nxt)

    def fail(self, tup_id: Any) -> None:
        tracked = self._tracked(tup_id)
        if tracked is None:
            return
        tp, off, po = tracked
        if po is None or not po.is_in_flight(off):
            return   # acked meanwhile, or the partition was revoked
        if not self._retries.schedule((tp, off)):
            self.logger.warning("dropping %s after %d retries (headrace.retry_max_retries)",
                                tup_id, self.settings["retry_max_retries"])
            po.ack(off)

    # -- shaping tuples --------------------------------------------------------
    def translate(self, record: Message) -> list[Any] | None:
        """Record -> tuple values (must match ``outputs``); None skips the
        record (it counts as acked). Default: topic, partition, offset, key,
        value, key and value as text (headrace.encoding), from_offset. The
        spout writes from_offset itself (and, under exactly_once, all of
        source_chain.SOURCE_FIELDS) into the fields of those names."""
        decode = self._decode
        return [record.topic(), record.partition(), record.offset(),
                decode(record.key()), decode(record.value()), None]

    def _text(self, data: bytes | None) -> str | None:
        """Key or value bytes as tuple text (headrace.encoding)."""
        return self._decode(data)

    # -- emission --------------------------------------------------------------
    def _emit_due_retry(self) -> bool:
        while (key := self._retries.pop_due()) is not None:
            tp, off = key
            po = self._offsets.get(tp)
            values = po.values(off) if po is not None else None
            if values is not None:
                self.emit(values, tup_id=message_id(tp, off))
                return True
        return False

    def _has_room(self, tp: TP) -> bool:
        if not self._tracked_mode:
            return True
        return self._offsets[tp].uncommitted < self.settings["max_uncommitted"]

    def _emit_waiting(self) -> bool:
        """Emits the next waiting record of the first partition (round robin)
        that is under its max uncommitted offsets."""
        for tp in list(self._waiting):
            if not self._has_room(tp):
                continue
            queue = self._waiting.pop(tp)
            record = queue.popleft()
            if queue:
                self._waiting[tp] = queue   # re-inserted last: round robin
            self._emit_record(tp, record)
            return True
        return False

    @property
    def _tracked_mode(self) -> bool:
        return self._guarantee in (ProcessingGuarantee.AT_LEAST_ONCE,
                                   ProcessingGuarantee.EXACTLY_ONCE)

    def _emit_record(self, tp: TP, record: Message) -> None:
        off = record.offset()
        values = self.translate(record)
        self._emitted_pos[tp] = off + 1
        if values is not None:
            values = list(values)
            coords = (tp[0], tp[1], off, self._chain_pos.get(tp, off))
            for i, k in self._stamp:
                values[i] = coords[k]
            self._chain_pos[tp] = off + 1
        if self._tracked_mode:
            po = self._offsets[tp]
            po.emitted(off, values)
            if values is None:
                po.ack(off)
                self._forget_acked(po)
                return
            self.emit(values, tup_id=message_id(tp, off))
        elif values is not None:
            self.emit(values)   # unanchored: Storm never acks or fails it

    # -- polling -------------------------------------------------------------
    def _poll(self, timeout_s: float) -> None:
        """One consume(); serves rebalance callbacks; buffers new records.
        AT_MOST_ONCE commits the batch before any of it is emitted."""
        records = self._consumer.consume(self.settings["max_poll_records"], timeout_s)
        first: dict[TP, int] = {}
        last: dict[TP, int] = {}
        for r in records:
            tp = (r.topic(), r.partition())
            if r.error() is not None:
                if r.error().code() == KafkaError._PARTITION_EOF:
                    self._at_end.add(tp)
                else:
                    self.logger.warning("consumer: %s", r.error())
                continue
            self._at_end.discard(tp)
            if tp not in self._offsets or tp in self._unpositioned or \
                    r.offset() < self._fetched.get(tp, -1):
                continue   # revoked meanwhile, not positioned yet, or already buffered
            self._fetched[tp] = r.offset() + 1
            self._waiting.setdefault(tp, deque()).append(r)
            first.setdefault(tp, r.offset())
            last[tp] = r.offset()
        if last and self._guarantee is ProcessingGuarantee.AT_MOST_ONCE:
            self._commit_before_emit(first, last)

    def _update_pause(self) -> None:
        """Pauses partitions at max uncommitted offsets or with a full buffer."""
        limit = self._buffer_limit
        want = {tp for tp in self._offsets
                if not self._has_room(tp) or len(self._waiting.get(tp, ())) >= limit}
        want |= self._unpositioned
        if want - self._paused:
            self._consumer.pause([TopicPartition(*tp) for tp in want - self._paused])
        if self._paused - want:
            self._consumer.resume([TopicPartition(*tp) for tp in self._paused - want])
        self._paused = want

    # -- commits -------------------------------------------------------------
    def _commit_sync(self, positions: dict[TP, int]) -> set[TP]:
        """Commits ``positions``; returns the partitions stored. Errors are logged."""
        if not positions:
            return set()
        tps = [TopicPartition(t, p, off, metadata=self._metadata)
               for (t, p), off in positions.items()]
        try:
            result = self._consumer.commit(offsets=tps, asynchronous=False)
        except KafkaException as e:
            self.logger.warning("commit of %s failed: %s", positions, e)
            return set()
        done = {(r.topic, r.partition) for r in result if r.error is None}
        for tp in done:
            self._committed_pos[tp] = positions[tp]
        return done

    def _commit_before_emit(self, first: dict[TP, int], last: dict[TP, int]) -> None:
        done = self._commit_sync({tp: off + 1 for tp, off in last.items()})
        for tp in set(last) - done:   # not committed: must not be emitted; re-read later
            self._waiting[tp] = deque(r for r in self._waiting.get(tp, ())
                                      if r.offset() < first[tp])
            if not self._waiting[tp]:
                del self._waiting[tp]
            self._fetched[tp] = first[tp]
            self._consumer.seek(TopicPartition(tp[0], tp[1], first[tp]))

    def _commit(self, only: set[TP] | None = None) -> None:
        """The periodic commit: acked prefixes (AT_LEAST_ONCE) or emitted
        positions (NONE)."""
        self._last_commit = time.monotonic()
        if self._guarantee is ProcessingGuarantee.AT_LEAST_ONCE:
            self._commit_acked(only)
        elif self._guarantee is ProcessingGuarantee.NONE:
            pos = {tp: off for tp, off in self._emitted_pos.items()
                   if (only is None or tp in only) and self._committed_pos.get(tp) != off}
            self._commit_sync(pos)

    def _commit_acked(self, only: set[TP] | None) -> None:
        want = {}
        for tp, po in self._offsets.items():
            nxt = po.next_commit()
            if nxt is not None and (only is None or tp in only):
                want[tp] = nxt
        for tp in self._commit_sync(want):
            self._offsets[tp].commit_done(want[tp])

    # -- rebalance callbacks (run inside consume()) ----------------------------
    def _on_assign(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        if self._guarantee is ProcessingGuarantee.EXACTLY_ONCE:
            self._assign_unpositioned(consumer, partitions)
            return
        committed = consumer.committed(partitions, timeout=COMMIT_TIMEOUT_S) if partitions else []
        strategy: FirstPollOffsetStrategy = self.settings["first_poll"]
        for p, c in zip(partitions, committed):
            p.offset = start_offset(strategy, c, self._storm_id)
            tp = (p.topic, p.partition)
            self._offsets[tp] = PartitionOffsets()
            if c.offset >= 0:
                self._committed_pos[tp] = c.offset
            if p.offset >= 0:
                self._chain_pos[tp] = p.offset
        consumer.assign(partitions)
        self.logger.info("assigned %s", [(p.topic, p.partition, p.offset) for p in partitions])

    def _assign_unpositioned(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        """EXACTLY_ONCE: assigned paused at a placeholder; :meth:`_position`
        seeks to the real start once the group's stable offsets are read (they
        may wait for a transaction of the KafkaBolt to end)."""
        for p in partitions:
            p.offset = OFFSET_END
            self._offsets[(p.topic, p.partition)] = PartitionOffsets()
        consumer.assign(partitions)
        if partitions:
            consumer.pause(partitions)
        tps = {(p.topic, p.partition) for p in partitions}
        self._unpositioned |= tps
        self._paused |= tps
        self._next_position_try = 0.0
        self.logger.info("assigned %s (positioning)", sorted(tps))

    def _position(self) -> None:
        """Starts unpositioned partitions at the group's committed offset or,
        without one, at the log start/end (first_poll), committed first so the
        KafkaBolt's chain starts where this spout does."""
        if time.monotonic() < self._next_position_try:
            return
        self._next_position_try = time.monotonic() + POSITION_RETRY_S
        tps = sorted(self._unpositioned)
        try:
            got = self._consumer.committed([TopicPartition(*tp) for tp in tps],
                                           timeout=POSITION_TIMEOUT_S)
            start, origin = {}, {}
            earliest = self.settings["first_poll"] is FirstPollOffsetStrategy.UNCOMMITTED_EARLIEST
            for c in got:
                tp = (c.topic, c.partition)
                if c.error is not None:
                    continue
                if c.offset >= 0:
                    start[tp] = c.offset
                else:
                    low, high = self._consumer.get_watermark_offsets(
                        TopicPartition(*tp), timeout=POSITION_TIMEOUT_S)
                    origin[tp] = low if earliest else high
        except KafkaException as e:
            self.logger.warning("reading the start of %s: %s (retrying)", tps, e)
            return
        for tp in self._commit_sync(origin):
            start[tp] = origin[tp]
        for tp, off in start.items():
            try:
                self._consumer.seek(TopicPartition(tp[0], tp[1], off))
            except KafkaException as e:   # stays paused; tried again
                self.logger.warning("seek of %s to %d: %s (retrying)", tp, off, e)
                continue
            self._chain_pos[tp] = self._fetched[tp] = off
            self._unpositioned.discard(tp)
            self.logger.info("positioned %s at %d", tp, off)

    def _on_revoke(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        """Commits what is safe for the revoked partitions, then drops their state."""
        tps = {(p.topic, p.partition) for p in partitions}
        if self._guarantee is ProcessingGuarantee.AT_MOST_ONCE:
            # Polled-but-unemitted records were committed already: move the
            # commit back to the first of them, so the next owner emits them.
            self._commit_sync({tp: q[0].offset() for tp, q in self._waiting.items()
                               if tp in tps and q})
        else:
            self._commit(only=tps)
        self._drop(tps)
        self.logger.info("revoked %s", sorted(tps))

    def _on_lost(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        """Ownership already gone (session expired): drop without committing."""
        self._drop({(p.topic, p.partition) for p in partitions})

    def _drop(self, tps: set[TP]) -> None:
        for state in (self._offsets, self._waiting, self._fetched, self._emitted_pos,
                      self._committed_pos, self._chain_pos):
            for tp in tps:
                state.pop(tp, None)
        self._paused -= tps
        self._acked_since -= tps
        self._unpositioned -= tps
        self._at_end -= tps
        self._retries.forget_where(lambda key: key[0] in tps)
