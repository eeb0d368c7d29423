"""Sink delivery guarantees: the producer settings of each mode.

``deliveryGuarantee`` (sink option; docs/spark.md has the full contract):

- ``at-least-once`` (default): idempotent producer, acks=all; a write task
  flushes and fails if any record was not acknowledged, so Spark retries it.
  Nothing is lost; retries and replayed micro-batches write again.
- ``exactly-once``: one transactional producer per (sink, Spark partition);
  a (batch, partition)'s rows and its progress offset commit in one
  transaction (``sink_progress``). Readers use isolation.level=read_committed.
- ``at-most-once``: a (batch, partition) is claimed in the broker by a
  transaction holding only its progress offset, at the task's first row; the
  rows then go in one more transaction of the same producer (acks=all), and
  whatever a claimed attempt did not deliver is dropped and counted
  (``sink_at_most_once``). ``producer_config`` still checks the user's
  ``kafka.acks`` / ``kafka.retries`` for this mode (retries must be 0), but
  the transactional producer of ``claim_producer_config`` sends the rows.
"""
from __future__ import annotations

import logging

from .options import HeadraceOptionError, SinkOptions

_QUIET = logging.getLogger("headrace.spark.librdkafka")
DEFAULT_TRANSACTION_TIMEOUT_MS = 60_000


def _base() -> dict:
    from headrace.client_settings import KAFKA_PRODUCER_DEFAULTS

    return {**KAFKA_PRODUCER_DEFAULTS, "linger.ms": 5,
            "logger": _QUIET, "error_cb": lambda err: None}


def producer_config(opts: SinkOptions) -> dict:
    """librdkafka settings of the producer that sends the rows (the plain one
    for at-least-once and at-most-once, the transactional one for
    exactly-once without its transactional.id). ``kafka.*`` options override
    the defaults but may not contradict the guarantee. Raises
    HeadraceOptionError (called on the driver first)."""
    conf = _base()
    if opts.guarantee == "at-most-once":
        conf.update({"acks": "1", "enable.idempotence": False, "message.send.max.retries": 0})
    else:
        conf.update({"acks": "all", "enable.idempotence": True})
    if opts.guarantee == "exactly-once":
        conf["transaction.timeout.ms"] = DEFAULT_TRANSACTION_TIMEOUT_MS
    conf.update(opts.kafka_conf)
    acks = str(conf.get("acks", conf.get("request.required.acks", "all")))
    if (opts.guarantee == "at-least-once" and acks == "0") or \
            (opts.guarantee == "exactly-once" and acks not in ("all", "-1")):
        raise HeadraceOptionError(f"deliveryGuarantee '{opts.guarantee}' cannot use "
                                  f"kafka.acks={acks}")
    retries = conf.get("retries", conf.get("message.send.max.retries", 0))
    if opts.guarantee == "at-most-once" and int(retries) != 0:
        raise HeadraceOptionError("deliveryGuarantee 'at-most-once' cannot retry sends "
                                  "(kafka.retries must be 0)")
    if opts.guarantee == "exactly-once":
        _bound_message_timeout(conf)
    return conf


def claim_producer_config(opts: SinkOptions) -> dict:
    """Settings of the transactional producer that writes at-most-once claims
    (it sends no records, only the progress offset)."""
    conf = _base()
    conf.update({k: v for k, v in opts.kafka_conf.items()
                 if k not in ("acks", "request.required.acks", "retries",
                              "message.send.max.retries", "enable.idempotence")})
    conf.update({"acks": "all", "enable.idempotence": True})
    conf.setdefault("transaction.timeout.ms", DEFAULT_TRANSACTION_TIMEOUT_MS)
    _bound_message_timeout(conf)
    return conf


def _bound_message_timeout(conf: dict) -> None:
    """librdkafka refuses a transactional producer whose message.timeout.ms
    exceeds transaction.timeout.ms."""
    txn = int(conf.get("transaction.timeout.ms", DEFAULT_TRANSACTION_TIMEOUT_MS))
    msg = int(conf.get("message.timeout.ms", conf.get("delivery.timeout.ms", txn)))
    if msg > txn:
        raise HeadraceOptionError(f"kafka.message.timeout.ms ({msg}) must not exceed "
                                  f"kafka.transaction.timeout.ms ({txn})")
    conf["message.timeout.ms"] = msg
    conf.pop("delivery.timeout.ms", None)
