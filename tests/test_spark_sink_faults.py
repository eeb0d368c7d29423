"""Spark sink under task faults: injected task failures (first attempts fail
part-way through their rows, Spark retries them) and speculative copies of a
slow task. Real local Spark in its own process, real broker; output counted
with a read_committed consumer."""
from __future__ import annotations

import pytest

from headrace.spark.sink_progress import sink_report
from spark_kill_harness import StreamJob, record_counts
from spark_session import create_topic, produce_values

LIMIT = 1000
TOTAL = 4000


def _job(bootstrap: str, work, name: str, master: str, extra: list[str]) -> StreamJob:
    create_topic(bootstrap, f"{name}-in", partitions=2)
    for q in ("alo", "amo", "eos"):
        create_topic(bootstrap, f"{name}-out-{q}", partitions=2)
    produce_values(bootstrap, f"{name}-in", [str(i) for i in range(TOTAL)], partitions=2)
    return StreamJob(bootstrap, f"{name}-in", f"{name}-out", work, LIMIT, master=master,
                     queries=("alo", "amo", "eos"), extra=extra)


def injected_failures(bootstrap: str, work, master: str = "local[2,4]",
                      how: str = "--fail-first-attempts") -> tuple[int, dict, dict]:
    """Every micro-batch's task (batch % 2) fails its first attempt part-way
    (``how``: raises, or ``--crash-first-attempts``: its Python worker exits);
    returns (failures injected, {query: (lost, duplicated)}, the
    at-most-once sink's report)."""
    job = _job(bootstrap, work, "tf", master, [how])
    job.finish()
    failures = len(list((work / "faults").glob("failed-*")))
    report = sink_report(bootstrap, job.query_id("amo"), "tf-out-amo", partitions=2)
    return failures, job.outcome([str(i) for i in range(TOTAL)]), report


@pytest.mark.timeout(400)
@pytest.mark.parametrize("how", ["--fail-first-attempts", "--crash-first-attempts"])
def test_injected_task_failures_each_mode(broker_factory, tmp_path, record_property, how):
    broker = broker_factory(None)
    failures, counts, report = injected_failures(broker.bootstrap, tmp_path, how=how)
    print(f"{failures} injected task failures ({how}): (lost, duplicated) {counts}, "
          f"at-most-once report {report['total_written']} written, "
          f"{report['total_dropped']} dropped")
    record_counts(record_property, counts)
    # Three queries x TOTAL/LIMIT batches, one failing task each.
    assert failures == 3 * TOTAL // LIMIT, failures
    assert counts["eos"] == (0, 0), counts
    assert counts["alo"][0] == 0, counts
    # at-most-once: a failed attempt that had claimed its (batch, partition)
    # loses that task's rows, and the retry counts them: reported = real.
    assert counts["amo"][1] == 0, counts
    assert report["total_dropped"] == counts["amo"][0], (counts, report)
    assert report["total_written"] == TOTAL - counts["amo"][0], report


SPECULATION = ["--conf", "spark.speculation=true", "--conf", "spark.speculation.interval=100ms",
               "--conf", "spark.speculation.multiplier=1.5",
               "--conf", "spark.speculation.quantile=0.5",
               "--conf", "spark.speculation.minTaskRuntime=1s"]


def speculative_copies(bootstrap: str, work, master: str) -> tuple[int, dict]:
    """Partition 0's first attempt of every batch stalls (up to 4 s per 100
    rows) until Spark launched a copy of it; returns (tasks that had a second
    attempt, {query: (lost, duplicated)}). Spark runs a copy only on another
    host than the attempt it races, so ``master`` must be a cluster with
    two worker hosts: tests/test_spark_standalone.py runs it."""
    job = _job(bootstrap, work, "sp", master, ["--slow-partition-0", "4", *SPECULATION])
    job.finish()
    copies = {p.name.rsplit("-", 1)[0] for p in (work / "faults").glob("attempt-*-1")}
    return len(copies), job.outcome([str(i) for i in range(TOTAL)])
