"""Broker calls of the source, retried through a leader failover.

Contract: :func:`retrying` runs ``call`` and, while it raises a
KafkaException whose error is transient (a broker gone, a partition without
a leader or led elsewhere, a time-out), calls it again after a backoff
(100 ms doubling to 2 s) until ``timeout_ms`` has passed since the first
try; then, or on any other error, it raises the last error. librdkafka
refreshes its metadata on these errors, so the next try asks the new
leader. The bound is the source option ``kafkaConsumer.pollTimeoutMs``.
"""
from __future__ import annotations

import logging
import time
from typing import Callable, TypeVar

from confluent_kafka import KafkaError, KafkaException

log = logging.getLogger("headrace.spark")
T = TypeVar("T")

_TRANSIENT = {KafkaError._DESTROY_BROKER, KafkaError._TRANSPORT, KafkaError._ALL_BROKERS_DOWN,
              KafkaError._TIMED_OUT, KafkaError._WAIT_COORD, KafkaError._RESOLVE,
              KafkaError.NOT_LEADER_FOR_PARTITION, KafkaError.LEADER_NOT_AVAILABLE,
              KafkaError.REQUEST_TIMED_OUT, KafkaError.FENCED_LEADER_EPOCH,
              KafkaError.UNKNOWN_LEADER_EPOCH, KafkaError.OFFSET_NOT_AVAILABLE,
              KafkaError.REPLICA_NOT_AVAILABLE, KafkaError.BROKER_NOT_AVAILABLE,
              KafkaError.NETWORK_EXCEPTION, KafkaError.NOT_ENOUGH_REPLICAS,
              # librdkafka's answer to a watermark query for a partition its
              # metadata lists without a leader (seen while a leader's
              # session expires); the plan's partitions exist.
              KafkaError._UNKNOWN_PARTITION}
FIRST_BACKOFF_S = 0.1
MAX_BACKOFF_S = 2.0


def transient(err: KafkaError) -> bool:
    """An error a leader failover or a broker restart causes, and ends."""
    return not err.fatal() and (err.code() in _TRANSIENT or err.retriable())


def retrying(call: Callable[[], T], what: str, timeout_ms: int) -> T:
    """``call()``, retried on transient errors for up to ``timeout_ms``."""
    deadline = time.monotonic() + timeout_ms / 1000.0
    backoff = FIRST_BACKOFF_S
    while True:
        try:
            return call()
        except KafkaException as e:
            err = e.args[0] if e.args else None
            if not isinstance(err, KafkaError) or not transient(err) \
                    or time.monotonic() + backoff > deadline:
                raise
            log.info("headrace: %s failed (%s); retrying in %.1f s", what, err.str(), backoff)
        time.sleep(backoff)
        backoff = min(backoff * 2, MAX_BACKOFF_S)
