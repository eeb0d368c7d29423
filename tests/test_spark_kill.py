"""SIGKILL a streaming job mid-stream, restart it from its checkpoints, and
count what each delivery mode lost or duplicated in uniquely numbered
records, read with a read_committed consumer: once over 8 k records in the
default run, three times over 20 k behind `slow` (each kill costs a new
Spark JVM, ~40 s on a loaded 2-core machine).

The job (tests/spark_stream_job.py, driven by tests/spark_kill_harness.py)
runs as its own process group: the Python driver, Spark's JVM and its Python
workers die at once, as in a machine crash of the driver. What each mode is
held to (a restart replays at most the micro-batch in flight):
- foreachBatch keyed by batch id, and the exactly-once sink: 0 lost, 0 dup;
- at-least-once: 0 lost; duplicates <= kills * maxOffsetsPerTrigger;
- at-most-once: 0 duplicated; losses <= kills * maxOffsetsPerTrigger.
"""
from __future__ import annotations

import pytest

from spark_kill_harness import (StreamJob, assert_mode_bounds, kill_cycles, kill_group,
                                record_counts, stall_report)
from spark_session import create_topic, produce_values

LIMIT = 1500        # maxOffsetsPerTrigger
TOTAL = 20_000      # records for three kills (the slow run and the standalone cluster's)
KILLS = 3
# (kills, records): a kill comes within two micro-batches of a start, so
# 8 k records (5+ batches) leave the final run a batch or more to replay.
SCENARIOS = [pytest.param(1, 8_000, id="once"),
             pytest.param(KILLS, TOTAL, id="three-times", marks=pytest.mark.slow)]


def sigkill_cycles_then_finish(bootstrap: str, work, master: str = "local[2]",
                               kills: int = KILLS, total: int = TOTAL) -> tuple[list, dict]:
    """The whole scenario on ``master``: topics, ``total`` records,
    ``kills`` SIGKILLs mid-write, a final AvailableNow run; returns (commit
    counts at each kill, {query: (lost, duplicated)})."""
    create_topic(bootstrap, "kill-in", partitions=2)
    for name in ("alo", "amo", "eos"):
        create_topic(bootstrap, f"kill-out-{name}", partitions=2)
    produce_values(bootstrap, "kill-in", [str(i) for i in range(total)], partitions=2)
    job = StreamJob(bootstrap, "kill-in", "kill-out", work, LIMIT, master=master)
    seen = kill_cycles(job, kills)
    job.finish()
    return seen, job.outcome([str(i) for i in range(total)])


@pytest.mark.timeout(600)
@pytest.mark.parametrize("kills, total", SCENARIOS)
def test_sigkill_mid_write_then_restart_counts_per_mode(broker_factory, tmp_path,
                                                        record_property, kills, total):
    broker = broker_factory(None)
    seen, counts = sigkill_cycles_then_finish(broker.bootstrap, tmp_path, kills=kills,
                                              total=total)
    record_counts(record_property, counts)
    print(f"after {kills} SIGKILLs at commits {seen}: (lost, duplicated) {counts}")
    assert all(min(s.values()) * LIMIT < total for s in seen), f"finished before a kill: {seen}"
    assert counts["idem"] == (0, 0), counts
    assert_mode_bounds(counts, kills, LIMIT)


def broker_sigkill_mid_stream(broker, work, master: str = "local[2]", kills: int = 1,
                              total: int = 8000) -> tuple[int, dict]:
    """Exactly-once, at-least-once and at-most-once queries run while the broker is
    SIGKILLed ``kills`` times mid-stream and restarted on the same data
    directory and port. A query that fails meanwhile is restarted from its
    checkpoint like a crashed driver; a final AvailableNow run drains the
    rest. Returns (job restarts needed, {query: (lost, duplicated)})."""
    import time
    bs = broker.bootstrap
    create_topic(bs, "bk-in", partitions=2)
    for name in ("alo", "amo", "eos"):
        create_topic(bs, f"bk-out-{name}", partitions=2)
    produce_values(bs, "bk-in", [str(i) for i in range(total)], partitions=2)
    job = StreamJob(bs, "bk-in", "bk-out", work, LIMIT, master=master, queries=("alo", "amo", "eos"))
    restarts = 0
    since: dict = {}
    proc = job.start("run")
    try:
        for round_ in range(kills + 1):
            # Every query commits a batch more; a job whose query failed
            # (a task outlived its timeouts while the broker was down) is
            # restarted from its checkpoint, as a crashed driver would be.
            deadline = time.monotonic() + 240
            while not all(job.commits(n) > since.get(n, 0) for n in job.queries):
                assert time.monotonic() < deadline, \
                    f"no progress: {since}\n{job.log_tail()}\n{stall_report(proc, broker)}"
                if proc.poll() is not None:
                    restarts += 1
                    proc = job.start("run")
                time.sleep(0.2)
            since = {n: job.commits(n) for n in job.queries}
            if round_ < kills:
                broker.kill()
                time.sleep(1.0)
                broker.start_again()
                assert broker.bootstrap == bs, "the broker came back on another port"
    finally:
        kill_group(proc)
    job.finish()
    return restarts, job.outcome([str(i) for i in range(total)])


@pytest.mark.timeout(600)
def test_broker_sigkill_mid_stream_each_mode(broker_factory, tmp_path, record_property):
    restarts, counts = broker_sigkill_mid_stream(broker_factory(None),
                                                 tmp_path)
    record_counts(record_property, counts)
    print(f"broker SIGKILLed mid-stream, job restarted {restarts} times: "
          f"(lost, duplicated) {counts}")
    assert counts["eos"] == (0, 0), counts
    assert counts["alo"][0] == 0, counts
    assert counts["amo"][1] == 0, counts
