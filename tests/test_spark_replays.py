"""Replays that are not split like the attempt they replay. A streaming job
SIGKILLed mid-batch, restarted with the source split differently
(``minPartitions`` changed), run to the end with Trigger.AvailableNow: the
exactly-once sink loses and duplicates nothing, the at-most-once sink
duplicates nothing and its report counts every record it dropped. A batch
job SIGKILLed mid-write and rerun with the same ``jobId`` after its input
grew writes exactly the first run's input once. A reused ``sinkId`` under a
new checkpoint is refused, not silently skipped. Real local Spark in its own process group, real broker,
output read with a read_committed consumer."""
from __future__ import annotations

import pytest

from headrace.spark.sink_progress import sink_report
from spark_kill_harness import StreamJob, kill_group, kill_when_held, record_counts
from spark_session import create_topic, produce_values

LIMIT = 2000          # maxOffsetsPerTrigger: 1,000 per input partition and batch
TOTAL = 8000
WANT = [str(i) for i in range(TOTAL)]


def _job(bootstrap: str, work, name: str, queries: tuple[str, ...]) -> StreamJob:
    create_topic(bootstrap, f"{name}-in", partitions=2)
    for q in queries:
        create_topic(bootstrap, f"{name}-out-{q}", partitions=2)
    produce_values(bootstrap, f"{name}-in", WANT, partitions=2)
    return StreamJob(bootstrap, f"{name}-in", f"{name}-out", work, LIMIT, queries=queries)


def changed_plan(bootstrap: str, work, before: int, after: int) -> tuple[StreamJob, dict]:
    """Kills the job while the last Spark partition of micro-batch 1 (split
    into ``before`` tasks) is held at its first row, then finishes with
    ``minPartitions`` ``after``; returns the job and {query: (lost, dup)}."""
    job = _job(bootstrap, work, f"cp{before}to{after}", ("amo", "eos"))
    job.extra = ["--min-partitions", str(before), "--hold-at", f"1:{before - 1}"]
    kill_when_held(job)
    job.extra = ["--min-partitions", str(after)]
    job.finish()
    return job, job.outcome(WANT)


def amo_report(job: StreamJob, partitions: int) -> tuple[int, int]:
    """(total_written, total_dropped) of the at-most-once query's sink."""
    rep = sink_report(job.bootstrap, job.query_id("amo"), f"{job.out_prefix}-amo", partitions)
    return rep["total_written"], rep["total_dropped"]


@pytest.mark.timeout(400)
@pytest.mark.parametrize("before, after", [(4, 8), pytest.param(8, 4, marks=pytest.mark.slow)])
def test_min_partitions_changed_after_a_kill_mid_batch(broker_factory, tmp_path,
                                                        record_property, before, after):
    job, counts = changed_plan(broker_factory(None).bootstrap, tmp_path, before, after)
    record_counts(record_property, counts)
    written, dropped = amo_report(job, max(before, after))
    print(f"minPartitions {before} -> {after}: (lost, duplicated) {counts}, "
          f"at-most-once reported {written} written, {dropped} dropped")
    assert counts["eos"] == (0, 0), counts
    assert counts["amo"][1] == 0, counts
    assert (written, dropped) == (TOTAL - counts["amo"][0], counts["amo"][0]), counts


@pytest.mark.timeout(300)
def test_reused_sink_id_under_a_new_checkpoint_is_refused(broker_factory, tmp_path):
    """The first checkpoint wrote everything under sinkId; a new checkpoint
    with the same sinkId would start at batch 0, which the sink's progress
    says is written: the query fails with the reason instead of skipping."""
    import shutil
    bs = broker_factory(None).bootstrap
    job = _job(bs, tmp_path, "reuse", ("eos",))
    job.extra = ["--sink-id", "shared"]
    job.finish()
    shutil.rmtree(tmp_path / "ck-eos")
    produce_values(bs, "reuse-in", [str(i) for i in range(TOTAL, TOTAL + 1000)], partitions=2)
    proc = job.start("finish")
    try:
        assert proc.wait(300) == 1, job.log_tail("finish")
    finally:
        kill_group(proc)
    assert "holds the progress of query" in job.log_tail("finish")
    assert job.outcome(WANT)["eos"] == (0, 0)


@pytest.mark.slow
@pytest.mark.timeout(400)
def test_batch_rerun_with_the_same_job_id_after_the_input_grew(broker_factory, tmp_path):
    bs = broker_factory(None).bootstrap
    job = _job(bs, tmp_path, "grown", ("eos",))
    job.extra = ["--min-partitions", "4", "--hold-at", "0:3"]
    kill_when_held(job, "batch", queries=1)
    produce_values(bs, "grown-in", [str(i) for i in range(TOTAL, TOTAL + 4000)], partitions=2)
    job.extra = ["--min-partitions", "8"]
    proc = job.start("batch")
    try:
        assert proc.wait(300) == 0, job.log_tail("batch")
    finally:
        kill_group(proc)
    # Exactly the first run's input, once; the 4,000 new records are a new job's.
    assert job.outcome(WANT)["eos"] == (0, 0)
