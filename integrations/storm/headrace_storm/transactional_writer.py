"""The transactional KafkaBolt's engine (Kafka's consume-transform-produce
pattern): writes buffered records and commits their source offsets into the
spout's consumer group in one transaction, then acks their tuples.

Contract:
- A tuple is acked only after the transaction holding its record committed,
  or at once when its source offset is below the group's committed position
  (a replay of something already written). It is failed when its transaction
  aborted or ended with an unknown outcome; the spout replays it.
- Per source partition only the ready run of :class:`PartitionChain` is
  written, and the run's end is the offset committed with it, so the output
  holds each source record once as read by read_committed consumers.
- The committed positions are read from the group (read_committed, i.e.
  stable offsets) after ``init_transactions``, which completed the previous
  incarnation's open transaction; after a transaction with an unknown
  outcome the producer is recreated (init again) and the positions of the
  partitions involved are read again.

Threads: :meth:`submit` is called by the bolt's main thread; one writer
thread runs the transactions. ``_lock`` guards ``_chains`` and
``_submitted``; Kafka calls run outside it. ``ack``/``fail`` take a list of
tuple ids (a transaction's tuples are answered in one write); they are
called from both threads, never under ``_lock`` (pystorm's writer lock keeps
messages whole).
"""
from __future__ import annotations

import logging
import threading
import time
from typing import Any, Callable

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition

from .source_chain import TP, Entry, PartitionChain

CALL_TIMEOUT_S = 30.0          # one Kafka call (init, commit)
# send_offsets_to_transaction may block past its timeout when the group
# coordinator's connection was down (librdkafka issue #5456): after this long
# the producer is abandoned (its thread stays blocked) and a new one fences it.
SEND_OFFSETS_LIMIT_S = 10.0
FETCH_TIMEOUT_S = 5.0          # one read of a committed position
RETRY_PAUSE_S = 0.5            # after a failed init or offset read
QUEUE_FULL_WAIT_S = 0.1


class TransactionalWriter:
    """Runs the bolt's transactions on its own thread; see the module doc."""

    def __init__(self, producer_conf: dict, source_group: str, brokers: str,
                 max_tuples: int, interval_s: float,
                 ack: Callable[[list[str]], None], fail: Callable[[list[str]], None],
                 logger: logging.Logger, client_conf: dict | None = None):
        """``client_conf``: connection properties (security.protocol, sasl.*,
        ssl.*) its group-metadata consumer shares with the producer."""
        self._producer_conf = producer_conf
        self._max_tuples, self._interval_s = max_tuples, interval_s
        self._ack, self._fail, self._log = ack, fail, logger
        self._consumer = Consumer({**(client_conf or {}),
                                   "bootstrap.servers": brokers, "group.id": source_group,
                                   "enable.auto.commit": False,
                                   "isolation.level": "read_committed",
                                   "client.id": producer_conf.get("client.id", "headrace-storm")})
        # Not a member: generation -1 and no member id, accepted for any group.
        self._group_metadata = self._consumer.consumer_group_metadata()
        self._producer: Producer | None = None
        self._lock = threading.Condition()
        self._chains: dict[TP, PartitionChain] = {}
        self._submitted = 0     # tuples submitted since the last transaction started
        self._stop = threading.Event()
        self.transactions = 0   # committed, for logs and tests
        self._thread = threading.Thread(target=self._run, name="headrace-txn", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def submit(self, tp: TP, offset: int, from_offset: int, record: Any, tuple_id: str) -> None:
        """Buffers one tuple's record; acks it at once if already committed."""
        with self._lock:
            chain = self._chains.setdefault(tp, PartitionChain())
            buffered = chain.add(offset, from_offset, record, tuple_id)
            if buffered:
                self._submitted += 1
                if self._submitted >= self._max_tuples:
                    self._lock.notify()
        if not buffered:
            self._ack([tuple_id])

    # -- writer thread -------------------------------------------------------
    def _run(self) -> None:
        while not self._stop.is_set():
            with self._lock:
                self._lock.wait_for(lambda: self._submitted >= self._max_tuples,
                                    self._interval_s)
                self._submitted = 0
            try:
                if self._ensure_producer() and self._read_frontiers():
                    self._transaction()
            except Exception:   # noqa: BLE001 - the writer must keep running
                self._log.exception("transactional writer")
                time.sleep(RETRY_PAUSE_S)

    def _ensure_producer(self) -> bool:
        """A producer whose init_transactions completed (fencing the previous
        incarnation), or False after a failed attempt (retried next turn)."""
        if self._producer is not None:
            return True
        producer = Producer(self._producer_conf)
        try:
            producer.init_transactions(CALL_TIMEOUT_S)
        except KafkaException as e:
            self._log.warning("init_transactions: %s (retrying)", e)
            time.sleep(RETRY_PAUSE_S)
            return False
        self._producer = producer
        return True

    def _read_frontiers(self) -> bool:
        """Reads the committed position of partitions that have none yet.
        False when a read failed (retried next turn)."""
        with self._lock:
            unknown = [tp for tp, c in self._chains.items() if c.frontier is None]
        if not unknown:
            return True
        try:
            got = self._consumer.committed([TopicPartition(t, p) for t, p in unknown],
                                           FETCH_TIMEOUT_S)
        except KafkaException as e:
            self._log.warning("reading committed offsets of %s: %s (retrying)", unknown, e)
            return False
        acks: list[str] = []
        with self._lock:
            for tp in got:
                if tp.error is None and tp.offset >= 0:
                    acks += self._chains[(tp.topic, tp.partition)].set_frontier(tp.offset)
                else:   # the spout commits its start position before emitting
                    self._log.warning("no committed offset of %s:%d in the source group yet",
                                      tp.topic, tp.partition)
        if acks:
            self._ack(acks)
        return True

    def _transaction(self) -> None:
        """One transaction over every partition's ready run, then acks or fails."""
        with self._lock:
            runs: dict[TP, tuple[list[Entry], int]] = {}
            for tp, chain in self._chains.items():
                run, end = chain.ready(self._max_tuples)
                if run:
                    runs[tp] = (run, end)
        if not runs:
            return
        outcome = self._write(runs)
        with self._lock:
            if outcome == "committed":
                ids = [t for tp, (run, end) in runs.items()
                       for t in self._chains[tp].written(run, end)]
            else:
                ids = [t for tp, (run, _) in runs.items() for t in self._chains[tp].dropped(run)]
                if outcome == "unknown":   # maybe committed: read the positions again
                    for tp in runs:
                        self._chains[tp].set_frontier(None)
        if outcome == "committed":
            self.transactions += 1
        if ids:
            (self._ack if outcome == "committed" else self._fail)(ids)

    def _write(self, runs: dict[TP, tuple[list[Entry], int]]) -> str:
        """'committed', 'aborted' (nothing written) or 'unknown' (the producer
        was dropped; the next one's init completes the transaction)."""
        p = self._producer
        try:
            p.begin_transaction()
            for run, _ in runs.values():
                for e in run:
                    self._produce(p, *e.record)
            offsets = [TopicPartition(t, part, end) for (t, part), (_, end) in runs.items()]
            if not self._bounded(lambda: self._retrying(lambda: p.send_offsets_to_transaction(
                    offsets, self._group_metadata, SEND_OFFSETS_LIMIT_S))):
                self._log.error("send_offsets_to_transaction still blocked after %.0f s; "
                                "abandoning the producer", SEND_OFFSETS_LIMIT_S)
                self._producer = None
                return "unknown"
            self._retrying(lambda: p.commit_transaction(CALL_TIMEOUT_S))
            return "committed"
        except KafkaException as e:
            err: KafkaError = e.args[0]
            if err.txn_requires_abort():
                try:
                    p.abort_transaction(CALL_TIMEOUT_S)
                    self._log.warning("transaction aborted: %s", err)
                    return "aborted"
                except KafkaException as abort_err:
                    err = abort_err.args[0]
            self._log.warning("transaction outcome unknown (%s); new producer", err)
            self._producer = None
            return "unknown"

    @staticmethod
    def _bounded(call: Callable[[], None]) -> bool:
        """Runs ``call`` on a helper thread; False if it has not returned
        after SEND_OFFSETS_LIMIT_S (+1 s), else its result or exception."""
        outcome: list = []

        def run() -> None:
            try:
                call()
                outcome.append(None)
            except BaseException as e:   # noqa: BLE001 - re-raised by the caller's thread
                outcome.append(e)
        helper = threading.Thread(target=run, name="headrace-send-offsets", daemon=True)
        helper.start()
        helper.join(SEND_OFFSETS_LIMIT_S + 1.0)
        if not outcome:
            return False
        if outcome[0] is not None:
            raise outcome[0]
        return True

    @staticmethod
    def _retrying(call: Callable[[], None]) -> None:
        """Repeats a call that failed with a retriable error (a timeout while
        the broker restarts), as librdkafka allows, for up to CALL_TIMEOUT_S."""
        deadline = time.monotonic() + CALL_TIMEOUT_S
        while True:
            try:
                return call()
            except KafkaException as e:
                if not e.args[0].retriable() or time.monotonic() > deadline:
                    raise

    @staticmethod
    def _produce(p: Producer, topic: str, key: bytes | None, value: bytes | None) -> None:
        while True:
            try:
                p.produce(topic, value=value, key=key)
                return
            except BufferError:
                p.poll(QUEUE_FULL_WAIT_S)
