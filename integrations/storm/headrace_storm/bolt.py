"""KafkaBolt: a streamparse bolt writing each tuple as one Kafka record
(after storm-kafka-client's KafkaBolt).

Acked mode (default): a tuple is acked only when the broker acknowledged its
record (the producer's delivery report), and failed when the delivery failed
(e.g. ``message.timeout.ms`` elapsed with the broker down), so the spout can
replay it. Records are produced asynchronously (no broker round trip per
tuple). Delivery reports are served by a background thread calling
``Producer.poll``; the acks of one poll are written unflushed and flushed
together after it (multilang_out.py); pystorm's writer lock keeps messages
whole.

Fire-and-forget mode: the tuple is acked as soon as the record is handed to
the producer; a record the broker never stores is lost (logged).

Transactional mode (``headrace.transactional``, with an ``exactly_once``
KafkaSpout upstream): tuples are buffered and written in transactions that
also commit their source offsets into the spout's consumer group
(transactional_writer.py); a tuple is acked once its transaction committed.
"""
from __future__ import annotations

import json
import threading
from functools import partial
from typing import Any

from confluent_kafka import KafkaError, Message, Producer
from streamparse.storm.bolt import Bolt

from . import config as cfg
from . import multilang_out
from .config import ConfigError
from .source_chain import SOURCE_FIELDS
from .topology_checks import check_transactional_inputs, task_index
from .transactional_writer import TransactionalWriter

POLL_INTERVAL_S = 0.05
QUEUE_FULL_WAIT_S = 0.5
_OWNED = {"bootstrap.servers": "use headrace.brokers",
          "transactional.id": "use headrace.transactional_id"}


class KafkaBolt(Bolt):
    """Writes tuples to a topic. Configure by subclass attributes or
    ``headrace.*`` keys of the Storm configuration (those win); override
    :meth:`select_topic` and :meth:`map_record` for other mappings."""

    auto_ack = False    # acks follow the broker's acknowledgement
    auto_fail = True    # an exception inside process() fails the tuple
    outputs: list[str] = []

    brokers: str | list[str] | None = None
    kafka: dict | None = None  # connection settings of every client (security.*, sasl.*, ssl.*)
    topic: str | None = None
    topic_field: str | None = None
    key_field = "key"
    message_field = "message"
    fire_and_forget = False
    producer: dict | None = None
    transactional = False
    source_group: str | None = None      # or source_spout: the group is derived
    source_spout: str | None = None
    transactional_id: str | None = None  # default headrace-storm-<topology>-<component>-<index>
    transaction_max_tuples = 1000
    transaction_interval_ms = 100

    def initialize(self, storm_conf: dict, context: dict) -> None:
        """Validates settings (fails fast with an error sent to Storm) and
        starts the producer and, in acked mode, its delivery-report thread."""
        try:
            self.settings = self._settings(storm_conf)
        except ConfigError as e:
            msg = f"{type(self).__name__} configuration error: {e}"
            self.log(msg, level="error")
            self.send_message({"command": "error", "msg": msg})
            self._exit(1)
        s = self.settings
        from headrace.client_settings import KAFKA_PRODUCER_DEFAULTS

        conf = {**KAFKA_PRODUCER_DEFAULTS,  # murmur2 keys, as Kafka's Java producer
                "client.id": f"headrace-storm-{self.component_name}-{self.task_id}",
                "acks": "all"}
        conf.update(s["kafka"] or {})  # headrace.kafka: security settings of every client
        conf.update(s["producer"] or {})
        conf["bootstrap.servers"] = s["brokers"]
        conf["error_cb"] = self._on_client_error
        self._writer: TransactionalWriter | None = None
        if s["transactional"]:
            conf["transactional.id"] = s["transactional_id"]
            self._writer = TransactionalWriter(
                conf, s["source_group"], s["brokers"], s["transaction_max_tuples"],
                s["transaction_interval_ms"] / 1e3, self._ack_ids, self._fail_ids, self.logger,
                client_conf=s["kafka"])
            self._writer.start()
            return
        self._producer = Producer(conf)
        self._stop = threading.Event()
        if not s["fire_and_forget"]:
            threading.Thread(target=self._serve_reports, name="headrace-delivery",
                             daemon=True).start()

    def _settings(self, storm_conf: dict) -> dict:
        s = cfg.resolve(self, cfg.BOLT, storm_conf)
        cfg.require(s, "brokers", "the bootstrap servers of the cluster to write")
        if not s.get("topic") and not s.get("topic_field"):
            raise ConfigError("set headrace.topic (or headrace.topic_field)")
        for key, why in _OWNED.items():
            if key in (s.get("producer") or {}):
                raise ConfigError(f"headrace.producer: {key} cannot be set ({why})")
        s["fire_and_forget"] = bool(s.get("fire_and_forget"))
        s["transactional"] = bool(s.get("transactional"))
        if s["transactional"]:
            self._transactional_settings(s)
        return s

    def _transactional_settings(self, s: dict) -> None:
        """Completes and checks the settings of transactional mode."""
        if s["fire_and_forget"]:
            raise ConfigError("headrace.transactional and headrace.fire_and_forget exclude "
                              "each other")
        if not s.get("source_group"):
            if not s.get("source_spout"):
                raise ConfigError("headrace.transactional needs the exactly_once spout's "
                                  "consumer group: set headrace.source_group, or "
                                  "headrace.source_spout (the spout's component id) when the "
                                  "spout uses its default group")
            s["source_group"] = cfg.default_group(self.topology_name, s["source_spout"])
        if not s.get("transactional_id"):
            s["transactional_id"] = (f"headrace-storm-{self.topology_name}-"
                                     f"{self.component_name}-{task_index(self.context)}")
        check_transactional_inputs(self.context)

    # -- mapping -------------------------------------------------------------
    def _field(self, tup: Any, name: str | None, position: int) -> Any:
        """A field by name (tuples of a declared stream are namedtuples), else
        by position in [key, message] tuples of an undeclared stream."""
        values = tup.values
        if name and hasattr(values, "_fields"):
            if name not in values._fields:
                raise KeyError(f"tuple from {tup.component}/{tup.stream} has no field "
                               f"{name!r} (fields: {', '.join(values._fields)})")
            return getattr(values, name)
        return values[position] if position < len(values) else None

    def select_topic(self, tup: Any) -> str:
        """The topic of the tuple's record: headrace.topic_field's value if
        set and not empty, else headrace.topic."""
        if self.settings.get("topic_field"):
            name = self._field(tup, self.settings["topic_field"], 2)
            if name:
                return str(name)
        if not self.settings.get("topic"):
            raise KeyError("tuple names no topic and headrace.topic is not set")
        return self.settings["topic"]

    def map_record(self, tup: Any) -> tuple[Any, Any]:
        """(key, value) of the tuple's record: fields headrace.key_field and
        headrace.message_field (default ``key`` and ``message``)."""
        return (self._field(tup, self.settings["key_field"], 0),
                self._field(tup, self.settings["message_field"], 1))

    def source_coordinates(self, tup: Any) -> tuple[tuple[str, int], int, int]:
        """((topic, partition), offset, from_offset) of the spout record the
        tuple derives from (fields source_chain.SOURCE_FIELDS)."""
        if not hasattr(tup.values, "_fields"):
            raise KeyError(f"tuple from undeclared stream {tup.component}/{tup.stream} "
                           f"carries no {', '.join(SOURCE_FIELDS)}")
        topic, part, off, from_off = (self._field(tup, f, 0) for f in SOURCE_FIELDS)
        return (str(topic), int(part)), int(off), int(from_off)

    @staticmethod
    def to_bytes(v: Any) -> bytes | None:
        """None stays None; str is UTF-8; bytes as is; anything else as JSON."""
        if v is None or isinstance(v, bytes):
            return v
        if isinstance(v, str):
            return v.encode("utf-8")
        return json.dumps(v, separators=(",", ":")).encode("utf-8")

    # -- Storm tuples ----------------------------------------------------------
    def process(self, tup: Any) -> None:
        """Produces the tuple's record; acks now (fire-and-forget), when the
        broker acknowledged it, or (transactional) when its transaction
        committed. A tuple that cannot be mapped is failed."""
        try:
            topic = self.select_topic(tup)
            key, value = self.map_record(tup)
            key, value = self.to_bytes(key), self.to_bytes(value)
            if self._writer is not None:
                tp, off, from_off = self.source_coordinates(tup)
        except (KeyError, TypeError, ValueError) as e:
            self.send_message({"command": "error", "msg": f"cannot map tuple {tup.id}: {e}"})
            self.fail(tup)
            return
        if self._writer is not None:
            self._writer.submit(tp, off, from_off, (topic, key, value), tup.id)
            return
        callback = None if self.settings["fire_and_forget"] else partial(self._delivered, tup.id)
        self._produce(topic, key, value, callback)
        if callback is None:
            self.ack(tup)
            self._producer.poll(0)

    def _produce(self, topic: str, key: bytes | None, value: bytes | None, callback) -> None:
        while True:
            try:
                self._producer.produce(topic, value=value, key=key, on_delivery=callback)
                return
            except BufferError:   # local queue full: wait for deliveries to drain it
                if self._producer.poll(QUEUE_FULL_WAIT_S):
                    multilang_out.flush(self)   # the acks its reports wrote

    def _ack_ids(self, ids: list[str]) -> None:
        """Acks ``ids`` in one write (a committed transaction's tuples)."""
        multilang_out.write_all(self, [{"command": "ack", "id": i} for i in ids])

    def _fail_ids(self, ids: list[str]) -> None:
        multilang_out.write_all(self, [{"command": "fail", "id": i} for i in ids])

    def _delivered(self, tup_id: str, err: KafkaError | None, msg: Message) -> None:
        """Delivery report (on the report thread, inside poll): the ack is
        written unflushed; :meth:`_serve_reports` flushes after the poll."""
        if err is None:
            multilang_out.write(self, {"command": "ack", "id": tup_id})
        else:
            self.logger.warning("record of tuple %s not written to %s: %s", tup_id,
                                msg.topic(), err)
            self.fail(tup_id)

    def _serve_reports(self) -> None:
        while not self._stop.is_set():
            if self._producer.poll(POLL_INTERVAL_S):
                multilang_out.flush(self)

    def _on_client_error(self, err: KafkaError) -> None:
        if self.settings.get("fire_and_forget") or err.fatal():
            self.logger.warning("producer: %s", err)
