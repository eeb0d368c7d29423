"""Sink delivery guarantees: producer settings and the at-most-once ledger.

``deliveryGuarantee`` (sink option):

- ``at-least-once`` (default): idempotent producer, acks=all; a write task
  flushes and fails if any record was not acknowledged, so Spark retries it.
  Nothing is lost; a retried task or a micro-batch replayed after a crash
  writes its records again (duplicates).
- ``at-most-once``: no producer retries, no failure on a delivery error (the
  record is dropped and counted). Each (micro-batch, Spark partition) is
  written by at most one task attempt ever: a streaming task first claims
  ``<attemptsDir>/<batchId>/<partitionId>`` (created exclusively, fsynced);
  a task that finds the claim taken writes nothing. Batch writes skip task
  attempts after the first. Nothing is duplicated; records are lost when a
  claimed attempt dies before its records are acknowledged.
- ``exactly-once``: reserved for the transactional sink. See
  :func:`check_guarantee_built` for where it plugs in.
"""
from __future__ import annotations

import logging
import os
import shutil
from pathlib import Path

from .options import HeadraceOptionError, SinkOptions

_QUIET = logging.getLogger("headrace.spark.librdkafka")


def check_guarantee_built(opts: SinkOptions, streaming: bool) -> None:
    """Refuses guarantees this sink cannot give (called when Spark creates the
    writer, so a job fails before writing anything).

    The exactly-once sink needs Kafka transactions in the broker (the
    transactions issue). Its place is here and in ``writer.produce_rows``:
    one transactional producer per (query, Spark partition) with
    ``transactional.id`` derived from them, each micro-batch's records plus a
    marker record naming the batch id written in one transaction, committed
    before the task returns; a replayed batch finds its marker and writes
    nothing, and readers use isolation.level=read_committed."""
    if opts.guarantee == "exactly-once":
        raise HeadraceOptionError(
            "deliveryGuarantee 'exactly-once' is not built yet: it needs broker transactions "
            "(the transactions issue). Use 'at-least-once' with an idempotent consumer, or "
            "foreachBatch keyed by batch id, for exactly-once results today.")
    if opts.guarantee == "at-most-once" and streaming and not opts.attempts_dir:
        raise HeadraceOptionError(
            "deliveryGuarantee 'at-most-once' in a streaming query needs a directory to record "
            "write attempts: give 'checkpointLocation' as an option of writeStream, or the "
            "option 'attemptsDir' (a path every executor sees)")


def producer_config(opts: SinkOptions) -> dict:
    """librdkafka producer settings for the chosen guarantee; ``kafka.*``
    options override the defaults but may not contradict the guarantee."""
    conf: dict = {"partitioner": "murmur2_random", "linger.ms": 5,
                  "logger": _QUIET, "error_cb": lambda err: None}
    if opts.guarantee == "at-most-once":
        conf.update({"acks": "1", "enable.idempotence": False, "message.send.max.retries": 0})
    else:
        conf.update({"acks": "all", "enable.idempotence": True})
    conf.update(opts.kafka_conf)
    acks = str(conf.get("acks", conf.get("request.required.acks", "all")))
    if opts.guarantee == "at-least-once" and acks == "0":
        raise HeadraceOptionError("deliveryGuarantee 'at-least-once' cannot use kafka.acks=0")
    retries = conf.get("retries", conf.get("message.send.max.retries", 0))
    if opts.guarantee == "at-most-once" and int(retries) != 0:
        raise HeadraceOptionError("deliveryGuarantee 'at-most-once' cannot retry sends "
                                  "(kafka.retries must be 0)")
    return conf


class AttemptLedger:
    """Claims of (batch, partition) write attempts on a file system every
    executor shares (local mode, or a shared mount)."""

    def __init__(self, root: str):
        self.root = Path(root)

    def claim(self, batch_id: int, partition_id: int) -> bool:
        """True exactly once per (batch_id, partition_id), ever: the first
        caller creates the claim durably; later callers get False."""
        batch_dir = self.root / str(batch_id)
        batch_dir.mkdir(parents=True, exist_ok=True)
        try:
            fd = os.open(batch_dir / str(partition_id), os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            return False
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        dir_fd = os.open(batch_dir, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
        return True

    def forget_before(self, batch_id: int) -> None:
        """Drops claims of batches below ``batch_id`` (committed in Spark's
        commit log once this batch commits, so never replayed)."""
        if not self.root.is_dir():
            return
        for child in self.root.iterdir():
            if child.name.isdigit() and int(child.name) < batch_id:
                shutil.rmtree(child, ignore_errors=True)
