"""The Spark sink's guarantees on a real Spark standalone cluster: a master
and two workers (tests/spark_standalone.py), so executors are separate JVMs
with their own Python workers, and the job's driver is one more process.
The checkpoint lives in a directory every process shares; the sink's
progress and claims live in the broker, so nothing here leans on local
mode.

- driver kills: the local kill scenario (tests/test_spark_kill.py) with the
  driver's whole process group SIGKILLed three times mid-write;
- executor kill: one executor JVM SIGKILLed mid-write while the driver keeps
  running; Spark re-runs the lost tasks on the surviving or a replacement
  executor;
- speculation: a slow task races a speculative copy on the other worker
  host (Spark never speculates on the same host, so only a cluster can).
Counted with a read_committed consumer over uniquely numbered records (20 k
for the driver kills, 9 k for the executor kill, 4 k for speculation).
"""
from __future__ import annotations

import os
import signal
import time

import pytest

from spark_kill_harness import (StreamJob, assert_mode_bounds, kill_group, record_counts,
                                wait_mid_write)
from spark_session import create_topic, produce_values
from spark_standalone import StandaloneCluster
from test_spark_kill import sigkill_cycles_then_finish
from test_spark_sink_faults import speculative_copies

LIMIT = 1500
TOTAL = 20_000        # the driver-kill scenario (test_spark_kill.py)
EXECUTOR_KILL_TOTAL = 9_000


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    # Two cores per worker: the three queries of a job run at once, and a
    # speculative copy needs a free slot on the other worker host.
    with StandaloneCluster(tmp_path_factory.mktemp("spark-standalone"), cores=2) as c:
        yield c


@pytest.mark.slow   # the same scenario runs on local[2] in every run (test_spark_kill.py)
@pytest.mark.timeout(900)
def test_driver_sigkill_three_times_on_standalone_cluster(cluster, broker_factory, tmp_path,
                                                         record_property):
    seen, counts = sigkill_cycles_then_finish(broker_factory(None).bootstrap, tmp_path,
                                              master=cluster.master_url)
    record_counts(record_property, counts)
    print(f"standalone, 3 driver SIGKILLs at commits {seen}: (lost, duplicated) {counts}")
    assert all(min(s.values()) * LIMIT < TOTAL for s in seen), f"finished before a kill: {seen}"
    assert counts["idem"] == (0, 0), counts
    assert_mode_bounds(counts, kills=3, limit=LIMIT)


@pytest.mark.slow   # ~3 min; the default run keeps speculation on this cluster
@pytest.mark.timeout(900)
def test_executor_sigkill_mid_write_on_standalone_cluster(cluster, broker_factory, tmp_path,
                                                          record_property):
    bs = broker_factory(None).bootstrap
    create_topic(bs, "exkill-in", partitions=2)
    for name in ("alo", "amo", "eos"):
        create_topic(bs, f"exkill-out-{name}", partitions=2)
    produce_values(bs, "exkill-in", [str(i) for i in range(EXECUTOR_KILL_TOTAL)], partitions=2)
    job = StreamJob(bs, "exkill-in", "exkill-out", tmp_path, LIMIT, master=cluster.master_url,
                    queries=("alo", "amo", "eos"))
    proc = job.start("run")
    try:
        before = wait_mid_write(job, proc, {}, timeout=300)
        executors = cluster.executors()
        assert executors, "the job runs no executor on the cluster"
        os.kill(executors[0], signal.SIGKILL)
        killed_at = time.monotonic()
        # The driver survives and the queries go on committing batches.
        after = wait_mid_write(job, proc, before, timeout=300)
        assert proc.poll() is None, job.log_tail()
        assert executors[0] not in cluster.executors()
    finally:
        kill_group(proc)
    job.finish(timeout=600)
    counts = job.outcome([str(i) for i in range(EXECUTOR_KILL_TOTAL)])
    record_counts(record_property, counts)
    print(f"standalone, executor {executors[0]} SIGKILLed at commits {before}, "
          f"{time.monotonic() - killed_at:.0f}s to commits {after}: (lost, duplicated) {counts}")
    assert_mode_bounds(counts, kills=2, limit=LIMIT)   # the executor kill, then the driver stop


@pytest.mark.timeout(600)
def test_speculative_copies_on_standalone_cluster(cluster, broker_factory, tmp_path,
                                                  record_property):
    copies, counts = speculative_copies(broker_factory(None).bootstrap, tmp_path,
                                        cluster.master_url)
    record_counts(record_property, counts)
    print(f"standalone, {copies} tasks raced a speculative copy: (lost, duplicated) {counts}")
    assert copies >= 3, f"only {copies} speculative copies were launched"
    assert counts["eos"] == (0, 0), counts
    assert counts["alo"][0] == 0, counts
    assert counts["amo"][1] == 0, counts
