"""The registry's copy of ``_schemas`` and its one way of writing to it.

Every broker runs a Store: a reader thread consumes ``_schemas`` partition 0
from the beginning into a View (headrace.registry.view) through
confluent-kafka, and reads answer from that view. Writes go through
:meth:`Store.write` on the writer only (headrace.registry.writer decides
who that is): an idempotent producer with acks=all.

Contracts:

- ``applied`` is the offset after the last record (or partition end) the
  view has applied; it only grows. ``wait_applied(o)`` returns once
  ``applied > o``.
- :meth:`sync` makes the view hold every record acknowledged before it was
  called: it appends a NOOP marker (acks=all, so it lands after every
  acknowledged record, on whichever broker leads now) and waits until the
  reader has applied it. A writer calls it before assigning an id.
- :meth:`catch_up` (cheaper, for reads that missed) waits until the view
  has reached the partition's high watermark as of the call.
"""
from __future__ import annotations

import logging
import threading
import time
from typing import Callable

from headrace.registry import errors as E
from headrace.registry import records as R
from headrace.registry.view import View

log = logging.getLogger("headrace.registry")

WRITE_TIMEOUT_S = 15.0
CATCH_UP_TIMEOUT_S = 10.0
TOPIC_CONFIG = {"cleanup.policy": "compact"}


class Store:
    def __init__(self, bootstrap: Callable[[], str], client_settings: dict[str, str] | None = None,
                 registered_brokers: Callable[[], int] = lambda: 0):
        """``bootstrap()``: the local listener to reach the cluster through
        ("" until the broker listens); ``client_settings``: further librdkafka
        properties (e.g. TLS or SASL for that listener);
        ``registered_brokers()``: how many brokers the cluster has
        registered (ZooKeeper), 0 when unknown."""
        self._bootstrap = bootstrap
        self._registered_brokers = registered_brokers
        self._settings = dict(client_settings or {})
        self.view = View()
        self.applied = 0
        self._cond = threading.Condition()
        self._stop = threading.Event()
        self._topic_seen = threading.Event()
        self._thread: threading.Thread | None = None
        self._clients_lock = threading.Lock()
        self._start_lock = threading.Lock()  # start() once
        self._producer = None
        self._meta = None  # a Consumer for metadata and watermarks (never polled)

    # -- lifecycle -----------------------------------------------------------------
    def start(self) -> "Store":
        """Starts the reader, once (later calls do nothing). The API starts
        it on its first request: a broker whose registry is never used runs
        no client against itself (no Metadata every second while _schemas
        does not exist)."""
        if self._thread is not None:  # the common case, without a lock
            return self
        with self._start_lock:
            if self._thread is None and not self._stop.is_set():
                self._thread = threading.Thread(target=self._read_loop,
                                                name="hr-registry-reader", daemon=True)
                self._thread.start()
        return self

    def close(self) -> None:
        self._stop.set()
        self._topic_seen.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        with self._clients_lock:
            if self._producer is not None:
                self._producer.flush(2)
            if self._meta is not None:
                self._meta.close()
            self._producer = self._meta = None

    def _conf(self) -> dict:
        bootstrap = self._bootstrap()
        if not bootstrap:
            raise E.RegistryError(503, E.STORE_ERROR, "the broker is not listening yet")
        return {"bootstrap.servers": bootstrap, "log_level": 0, **self._settings}

    # -- reading -------------------------------------------------------------------
    def _read_loop(self) -> None:
        """Reads until close(); a failure (logged) starts the consumer over
        from where the view stands, a second later."""
        last = ""
        while not self._stop.is_set():
            try:
                self._read()
            except Exception as e:  # noqa: BLE001 - logged; reads answer from what was applied
                if repr(e) != last:  # once per distinct failure, not once a second
                    log.warning("schema registry reader failed (%r); starting over every 1 s",
                                e)
                    last = repr(e)
                self._stop.wait(1.0)

    def _read(self) -> None:
        from confluent_kafka import Consumer, KafkaError, TopicPartition

        if not self._bootstrap():
            self._stop.wait(0.2)
            return
        consumer = Consumer({**self._conf(), "group.id": "headrace-registry",
                             "enable.auto.commit": False, "enable.partition.eof": True,
                             # an offset below the log start (never 0 after a restart
                             # over a view; defensive) reads from the start, not the end
                             "auto.offset.reset": "earliest"})
        try:
            while not self._stop.is_set() and not self._topic_exists(consumer):
                self._topic_seen.wait(1.0)
                self._topic_seen.clear()
            consumer.assign([TopicPartition(R.TOPIC, 0, self.applied)])
            while not self._stop.is_set():
                msg = consumer.poll(0.5)
                if msg is None:
                    continue
                if msg.error() is not None:
                    if msg.error().code() == KafkaError._PARTITION_EOF:
                        self._advance(msg.offset())
                    continue
                self.view.apply(msg.key(), msg.value(), msg.offset())
                self._advance(msg.offset() + 1)
        finally:
            consumer.close()

    @staticmethod
    def _topic_exists(client) -> bool:
        try:
            md = client.list_topics(R.TOPIC, timeout=5)
        except Exception:  # noqa: BLE001 - the broker not reachable yet: try again
            return False
        t = md.topics.get(R.TOPIC)
        return t is not None and t.error is None and 0 in t.partitions

    def _advance(self, offset: int) -> None:
        with self._cond:
            if offset > self.applied:
                self.applied = offset
                self._cond.notify_all()

    def wait_applied(self, offset: int, timeout: float = WRITE_TIMEOUT_S) -> None:
        """Returns once the view has applied the record at ``offset``;
        RegistryError 50002 after ``timeout``."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while self.applied <= offset:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise E.RegistryError(500, E.OPERATION_TIMEOUT,
                                          f"the registry's reader did not reach _schemas offset "
                                          f"{offset} within {timeout:g}s")
                self._cond.wait(left)

    def catch_up(self, timeout: float = CATCH_UP_TIMEOUT_S) -> None:
        """Waits until the view has reached the high watermark of now (no-op
        while ``_schemas`` does not exist)."""
        from confluent_kafka import TopicPartition

        try:
            with self._clients_lock:
                meta = self._meta_client()
                if not self._topic_exists(meta):
                    return
                _, high = meta.get_watermark_offsets(TopicPartition(R.TOPIC, 0), timeout=5,
                                                     cached=False)
        except E.RegistryError:
            raise
        except Exception as e:  # noqa: BLE001 - KafkaException: the broker's reason
            raise E.store_error(f"cannot read the end of {R.TOPIC}: {e}") from None
        if high > 0:
            self.wait_applied(high - 1, timeout)

    # -- metadata ------------------------------------------------------------------
    def _meta_client(self):
        """REQUIRES: _clients_lock held."""
        from confluent_kafka import Consumer

        if self._meta is None:
            self._meta = Consumer({**self._conf(), "group.id": "headrace-registry-meta",
                                   "enable.auto.commit": False})
        return self._meta

    def leader(self) -> int | None:
        """The broker leading ``_schemas`` partition 0 as the cluster's
        metadata says now; None when the topic does not exist or has no
        leader."""
        with self._clients_lock:
            try:
                md = self._meta_client().list_topics(R.TOPIC, timeout=5)
            except Exception as e:  # noqa: BLE001
                raise E.store_error(f"cannot read the metadata of {R.TOPIC}: {e}") from None
        t = md.topics.get(R.TOPIC)
        if t is None or t.error is not None or 0 not in t.partitions:
            return None
        leader = t.partitions[0].leader
        return leader if leader >= 0 else None

    def ensure_topic(self) -> None:
        """Creates ``_schemas`` (1 partition, compacted, replication factor
        min(3, brokers)) unless it exists. The brokers are counted in
        ZooKeeper when in a cluster (a broker's metadata may not list every
        broker yet), else in the metadata."""
        from confluent_kafka import KafkaError, KafkaException
        from confluent_kafka.admin import AdminClient, NewTopic

        admin = AdminClient(self._conf())
        md = admin.list_topics(timeout=10)
        if R.TOPIC in md.topics and md.topics[R.TOPIC].error is None:
            return
        rf = min(3, max(1, len(md.brokers), self._registered_brokers()))
        fut = admin.create_topics([NewTopic(R.TOPIC, 1, rf, config=TOPIC_CONFIG)],
                                  operation_timeout=15, request_timeout=20)[R.TOPIC]
        try:
            fut.result(30)
            log.info("created %s (1 partition, replication factor %d, compacted)", R.TOPIC, rf)
        except KafkaException as e:
            if e.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
                raise E.store_error(f"cannot create {R.TOPIC}: {e.args[0].str()}") from None
        self._topic_seen.set()

    # -- writing -------------------------------------------------------------------
    def write(self, records: list[tuple[bytes, bytes | None]]) -> int:
        """Appends ``records`` in order (idempotent, acks=all) and waits until
        the view has applied them. Returns the last one's offset.
        RegistryError 50001 when the cluster refuses or does not answer."""
        from confluent_kafka import Producer

        results: list = []
        with self._clients_lock:
            if self._producer is None:
                self._producer = Producer({**self._conf(), "enable.idempotence": True,
                                           "acks": "all", "linger.ms": 0,
                                           "message.timeout.ms": int(WRITE_TIMEOUT_S * 1000)})
            producer = self._producer
        for key, value in records:
            producer.produce(R.TOPIC, value=value, key=key, partition=0,
                             on_delivery=lambda err, msg: results.append((err, msg)))
        left = producer.flush(WRITE_TIMEOUT_S)
        if left or len(results) != len(records):
            raise E.RegistryError(500, E.OPERATION_TIMEOUT,
                                  f"{R.TOPIC}: a write was not acknowledged within "
                                  f"{WRITE_TIMEOUT_S:g}s")
        for err, _ in results:
            if err is not None:
                raise E.store_error(f"cannot write to {R.TOPIC}: {err.str()}")
        last = max(msg.offset() for _, msg in results)
        self.wait_applied(last)
        return last

    def sync(self) -> None:
        """See the module's contract: every record acknowledged before the
        call is in the view on return."""
        self.write([(R.noop_key(), None)])
