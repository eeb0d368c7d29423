"""A batch read's plan, recorded in the broker under the read's ``jobId``
so that a rerun of the job reads exactly the first run's offset ranges.

The plan of job J is stored as the committed offsets of the consumer group
``<groupIdPrefix>-plan-J`` (never joined): per input partition the range's
end as the offset, and ``{"start": s, "minPartitions": n}`` as metadata.
The first read with J records it; every later read with J plans those
ranges again, whatever ``startingOffsets``, ``endingOffsets`` and
``minPartitions`` say now, and input that arrived since is left for a new
job. With the sink's ``jobId`` this is what makes a rerun write each record
of the first run's input once: the same ranges give the same Spark
partitions with the same rows.
"""
from __future__ import annotations

import json
from typing import Optional

from confluent_kafka import Consumer, KafkaException, TopicPartition

from .client_errors import ClientErrors
from .cluster import consumer_config
from .offsets import Positions
from .options import SourceOptions
from .retries import retrying


def plan_group(opts: SourceOptions) -> str:
    return f"{opts.group_id_prefix}-plan-{opts.job_id}"


def _client(opts: SourceOptions) -> tuple[Consumer, ClientErrors]:
    errors = ClientErrors(f"the plan of job {opts.job_id}")
    conf = consumer_config(opts, "plan", errors)
    conf.update({"group.id": plan_group(opts), "isolation.level": "read_committed"})
    return Consumer(conf), errors


def recorded_plan(opts: SourceOptions, partitions: list[tuple[str, int]]
                  ) -> Optional[tuple[Positions, Positions, Optional[int]]]:
    """(start, end, minPartitions) recorded for ``opts.job_id``, or None."""
    client, errors = _client(opts)
    try:
        asked = [TopicPartition(t, p) for t, p in partitions]
        got = retrying(lambda t: client.committed(asked, timeout=t),
                       f"the plan of job {opts.job_id}", opts.poll_timeout_ms, errors,
                       lambda: client.poll(0))
    finally:
        client.close()
    start: Positions = {}
    end: Positions = {}
    min_partitions = None
    for tp in got:
        if tp.error is not None:
            raise KafkaException(tp.error)
        if tp.offset < 0:
            continue
        meta = json.loads(tp.metadata or "{}")
        start[(tp.topic, tp.partition)] = int(meta["start"])
        end[(tp.topic, tp.partition)] = tp.offset
        min_partitions = int(meta.get("minPartitions") or 0) or None
    return (start, end, min_partitions) if end else None


def record_plan(opts: SourceOptions, start: Positions, end: Positions,
                min_partitions: Optional[int]) -> None:
    """Stores the plan of ``opts.job_id`` (all partitions in one commit)."""
    client, errors = _client(opts)
    try:
        offsets = [TopicPartition(t, p, end[(t, p)], metadata=json.dumps(
                       {"start": start[(t, p)], "minPartitions": min_partitions or 0}))
                   for t, p in sorted(end)]
        retrying(lambda _t: client.commit(offsets=offsets, asynchronous=False),
                 f"recording the plan of job {opts.job_id}", opts.poll_timeout_ms, errors,
                 lambda: client.poll(0))
    finally:
        client.close()
