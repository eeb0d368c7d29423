"""SIGKILL a streaming job mid-stream, restart it from its checkpoints, and
count what each delivery mode lost or duplicated.

The job (tests/spark_stream_job.py) runs as its own process group: the
Python driver, Spark's JVM and its Python workers all die at once, as in a
machine crash of the driver. Bounds the test holds each mode to (at most one
micro-batch, the one in flight, is replayed after a restart):
- foreachBatch keyed by batch id: every record exactly once;
- headrace sink at-least-once: no loss; duplicates <= maxOffsetsPerTrigger;
- headrace sink at-most-once: no duplicates; losses <= maxOffsetsPerTrigger.
"""
from __future__ import annotations

import collections
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from confluent_kafka import Consumer, TopicPartition

from spark_session import create_topic, produce_values, quiet_config, read_all

JOB = Path(__file__).resolve().parent / "spark_stream_job.py"
LIMIT = 100         # maxOffsetsPerTrigger
FIRST, SECOND = 300, 100


def _start_job(mode: str, bootstrap: str, work: Path) -> subprocess.Popen:
    log = open(work / f"job-{mode}.log", "ab")
    return subprocess.Popen([sys.executable, str(JOB), mode, bootstrap, "kill-in", "kill-out",
                             str(work), str(LIMIT)], stdout=log, stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL, start_new_session=True)


def _commits(work: Path, name: str) -> int:
    d = work / f"ck-{name}" / "commits"
    return len([p for p in d.iterdir() if p.name.isdigit()]) if d.is_dir() else 0


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)   # the job's own session: driver, JVM, workers
    except ProcessLookupError:
        pass
    proc.wait(30)


def _written(bs: str, topic: str) -> int:
    c = Consumer(quiet_config(bs, **{"group.id": "kill-watch"}))
    try:
        return sum(c.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1] for p in (0, 1))
    finally:
        c.close()


def _wait_for_progress(proc: subprocess.Popen, bs: str, work: Path, timeout: float) -> dict:
    """Returns once every query has committed a batch and the at-least-once
    query has a batch in flight whose records are (partly) in its topic but
    not yet in its commit log - the moment a crash costs duplicates. Gives
    up waiting for that moment after a few batches."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        done = {n: _commits(work, n) for n in ("idem", "alo", "amo")}
        if min(done.values()) >= 1:
            in_flight = _written(bs, "kill-out-alo") > done["alo"] * LIMIT
            if in_flight or done["alo"] >= 2:
                return done
        assert proc.poll() is None, (work / "job-run.log").read_text()[-4000:]
        time.sleep(0.1)
    raise AssertionError(f"no progress in {timeout}s: {done}\n"
                         + (work / "job-run.log").read_text()[-4000:])


@pytest.mark.timeout(420)
def test_sigkill_mid_stream_then_restart_from_checkpoint(broker, tmp_path, record_property):
    bs = broker.bootstrap
    create_topic(bs, "kill-in", partitions=2)
    for name in ("alo", "amo"):
        create_topic(bs, f"kill-out-{name}", partitions=2)
    produce_values(bs, "kill-in", [str(i) for i in range(FIRST)], partitions=2)

    job = _start_job("run", bs, tmp_path)
    try:
        progress = _wait_for_progress(job, bs, tmp_path, timeout=240)
    finally:
        _kill_group(job)
    assert min(progress.values()) * LIMIT < FIRST, \
        f"every query had finished before the kill: {progress}"

    produce_values(bs, "kill-in", [str(i) for i in range(FIRST, FIRST + SECOND)], partitions=2)
    job = _start_job("finish", bs, tmp_path)
    try:
        code = job.wait(300)
    finally:
        _kill_group(job)
    assert code == 0, (tmp_path / "job-finish.log").read_text()[-4000:]

    want = collections.Counter(str(i) for i in range(FIRST + SECOND))
    idem = collections.Counter(v for p in (tmp_path / "idem").glob("*.json")
                               for v in json.loads(p.read_text()))
    assert idem == want, "foreachBatch keyed by batch id must see every record exactly once"

    counts = {}
    for name in ("alo", "amo"):
        got = collections.Counter(m.value().decode() for m in read_all(bs, f"kill-out-{name}", 2))
        assert set(got) <= set(want)
        lost = len(set(want) - set(got))
        dups = sum(n - 1 for n in got.values())
        counts[name] = (lost, dups)
        record_property(f"{name}_lost", lost)
        record_property(f"{name}_duplicates", dups)
    print(f"after SIGKILL at {progress}: at-least-once lost/dup {counts['alo']}, "
          f"at-most-once lost/dup {counts['amo']}")
    assert counts["alo"][0] == 0 and counts["alo"][1] <= LIMIT, counts
    assert counts["amo"][1] == 0 and counts["amo"][0] <= LIMIT, counts
