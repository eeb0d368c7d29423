"""Broker calls of the source (and the sink's progress reads), retried
through a leader or coordinator failover.

Contract: :func:`retrying` runs ``call(timeout_s)`` and, while it raises a
KafkaException whose error is transient (a broker gone, a partition without
a leader or led elsewhere, a time-out), calls it again after a backoff
(100 ms doubling to 2 s) until ``timeout_ms`` has passed since the first
try; then, or on any other error, it raises the last error. librdkafka
refreshes its metadata on these errors, so the next try asks the new
leader. The bound is the source option ``kafkaConsumer.pollTimeoutMs``.

Each try waits ``timeout_s``: 1 s at first, doubling to 30 s. After a
transient failure the client's callbacks are served (``serve``) and its
``ClientErrors`` checked: an authentication failure (which librdkafka
reports only there, while the call itself just times out) fails at once
with its reason (see ``client_errors``).
"""
from __future__ import annotations

import logging
import time
from typing import Callable, Optional, TypeVar

from confluent_kafka import KafkaError, KafkaException

from .client_errors import ClientErrors

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
              KafkaError._UNKNOWN_PARTITION,
              # A group coordinator failover (offset reads of the sink's
              # progress and of a jobId's plan).
              KafkaError.NOT_COORDINATOR, KafkaError.COORDINATOR_NOT_AVAILABLE,
              KafkaError.COORDINATOR_LOAD_IN_PROGRESS}
FIRST_BACKOFF_S = 0.1
MAX_BACKOFF_S = 2.0
FIRST_TRY_S = 1.0
MAX_TRY_S = 30.0


def transient(err: KafkaError) -> bool:
    """An error a leader failover or a broker restart causes, and ends."""
    return not err.fatal() and (err.code() in _TRANSIENT or err.retriable())


def retrying(call: Callable[[float], T], what: str, timeout_ms: int,
             errors: Optional[ClientErrors] = None,
             serve: Optional[Callable[[], object]] = None) -> T:
    """``call(timeout_s)``, retried on transient errors for up to
    ``timeout_ms``; ``errors`` (the client's ``error_cb``) checked after each
    failed try, once ``serve`` has served the client's callbacks."""
    deadline = time.monotonic() + timeout_ms / 1000.0
    backoff = FIRST_BACKOFF_S
    try_s = FIRST_TRY_S
    if errors is not None:
        errors.reset()
    while True:
        try:
            return call(max(0.1, min(try_s, deadline - time.monotonic())))
        except KafkaException as e:
            err = e.args[0] if e.args else None
            if errors is not None:
                errors.check(serve)
                why = errors.explain(e)
                if why is not e:
                    raise why from e
            if not isinstance(err, KafkaError) or not transient(err) \
                    or time.monotonic() + backoff > deadline:
                raise
            log.info("headrace: %s failed (%s); retrying in %.1f s", what, err.str(), backoff)
        time.sleep(backoff)
        backoff = min(backoff * 2, MAX_BACKOFF_S)
        try_s = min(try_s * 2, MAX_TRY_S)
