"""What a write task does when the sink's progress says its (batch, Spark
partition) is already written or claimed: check that the progress describes
this task's rows before skipping them. Never skip silently.

A (sink, Spark partition) progress entry is only meaningful if a replay of
batch B puts the same rows in partition P as the attempt that recorded it.
The source makes that true for its own batches (each micro-batch's split is
recorded with its end offsets, see ``offsets.with_plan``); what this module
catches is everything else: a sink id taken over by another query (another
checkpoint), a batch job rerun over grown input, a plan recorded before
plans were recorded. Each is refused with a one-line reason.
"""
from __future__ import annotations

from .sink_progress import Progress


class SinkReplayError(RuntimeError):
    """The sink's recorded progress does not describe the rows of this task."""


def check_replay(guarantee: str, progress: Progress, sink_id: str, query_id: str,
                 batch_id: int, partition: int, rows_now: int) -> None:
    """REQUIRES: ``progress.done(batch_id)``. Raises SinkReplayError if the
    progress was recorded by another query, or by an attempt of this
    (batch, partition) that took a different number of rows from Spark."""
    meta = progress.meta
    owner = meta.get("query")
    if owner is not None and owner != query_id:
        raise SinkReplayError(
            f"headrace {guarantee} sink '{sink_id}' holds the progress of query {owner} "
            f"(batches up to {progress.next_batch - 1}); query {query_id}, from another "
            f"checkpoint, would skip its batch {batch_id}: use a new sinkId, or restart "
            f"from that query's checkpoint")
    if meta.get("batch") == batch_id and "rows_in" in meta and int(meta["rows_in"]) != rows_now:
        raise SinkReplayError(
            f"headrace {guarantee} sink '{sink_id}': batch {batch_id}, Spark partition "
            f"{partition} was written from {meta['rows_in']} rows and its rerun has "
            f"{rows_now}: the input behind it changed (a batch job reread with a later "
            f"endingOffsets, or another plan); refusing to skip or rewrite it. Rerun the "
            f"job over the first run's offsets, and give new input a new jobId")
