"""Runs tests/spark_stream_job.py as its own process group on a given Spark
master, SIGKILLs it mid-stream, restarts it from its checkpoints, and counts
per sink mode what the output lost or duplicated.

Everything takes the master URL, so the same cycles run on ``local[2]`` or
on a standalone cluster (the checkpoint directory WORK must then be one that
driver and executors share).
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from confluent_kafka import Consumer, TopicPartition

from spark_session import quiet_config
from spark_sink_check import lost_and_duplicated, read_committed_values

JOB = Path(__file__).resolve().parent / "spark_stream_job.py"


@dataclass
class StreamJob:
    """The job's fixed arguments; ``start`` launches one run of it."""

    bootstrap: str
    topic: str
    out_prefix: str
    work: Path
    limit: int
    master: str = "local[2]"
    queries: tuple[str, ...] = ("idem", "alo", "amo", "eos")
    extra: list[str] = field(default_factory=list)
    partitions: int = 2

    def start(self, mode: str) -> subprocess.Popen:
        log = open(self.work / f"job-{mode}.log", "ab")
        cmd = [sys.executable, str(JOB), mode, self.bootstrap, self.topic, self.out_prefix,
               str(self.work), str(self.limit), "--master", self.master,
               "--queries", ",".join(self.queries), *self.extra]
        return subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True)

    def log_tail(self, mode: str = "run") -> str:
        path = self.work / f"job-{mode}.log"
        return path.read_text(errors="replace")[-4000:] if path.exists() else ""

    def commits(self, name: str) -> int:
        d = self.work / f"ck-{name}" / "commits"
        return len([p for p in d.iterdir() if p.name.isdigit()]) if d.is_dir() else 0

    def query_id(self, name: str) -> str:
        return json.loads((self.work / f"ck-{name}" / "metadata").read_text())["id"]

    def written(self, name: str) -> int:
        """Sum of the output topic's high watermarks (records and markers)."""
        c = Consumer(quiet_config(self.bootstrap, **{"group.id": "kill-watch"}))
        try:
            return sum(c.get_watermark_offsets(TopicPartition(f"{self.out_prefix}-{name}", p),
                                               timeout=10)[1] for p in range(self.partitions))
        finally:
            c.close()

    def finish(self, timeout: float = 300) -> None:
        """Runs the job with Trigger.AvailableNow until it exits; asserts 0."""
        job = self.start("finish")
        try:
            code = job.wait(timeout)
        finally:
            kill_group(job)
        assert code == 0, self.log_tail("finish")

    def outcome(self, want: list[str]) -> dict[str, tuple[int, int]]:
        """(lost, duplicated) per query, read as a read_committed consumer."""
        out = {}
        for name in self.queries:
            if name == "idem":
                got = [v for p in (self.work / "idem").glob("*.json")
                       for v in json.loads(p.read_text())]
            else:
                got = read_committed_values(self.bootstrap, f"{self.out_prefix}-{name}",
                                            self.partitions)
            out[name] = lost_and_duplicated(want, got)
        return out


def stall_report(proc: subprocess.Popen, broker=None) -> str:
    """What a stalled job was doing, for a test's failure message: the JVM's
    threads that run tasks or the stream (jstack), every Python process of
    the job's session (py-spy dump, when installed) and the broker's last
    stderr lines. Best effort: a tool missing or failing leaves its part out."""
    import shutil
    parts = []
    pids = subprocess.run(["pgrep", "-s", str(proc.pid)], capture_output=True,
                          text=True).stdout.split()
    for pid in pids:
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0].decode()
        except OSError:
            continue
        if cmd.endswith("java") and shutil.which("jstack"):
            out = subprocess.run(["jstack", pid], capture_output=True, text=True,
                                 timeout=60).stdout
            threads = [t for t in out.split("\n\n")
                       if "Executor task launch" in t or "stream execution" in t]
            parts.append(f"--- jstack {pid} (task and stream threads)\n" + "\n\n".join(threads))
        elif "python" in cmd and shutil.which("py-spy"):
            out = subprocess.run(["py-spy", "dump", "--pid", pid], capture_output=True,
                                 text=True, timeout=60)
            parts.append(f"--- py-spy {pid}\n{out.stdout}{out.stderr}")
    if broker is not None:
        parts.append("--- broker stderr\n" + broker.stderr[-3000:])
    return "\n".join(parts)


def kill_group(proc: subprocess.Popen) -> None:
    """SIGKILL of the job's whole session: driver, JVM, Python workers."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait(30)


def wait_mid_write(job: StreamJob, proc: subprocess.Popen, since: dict[str, int],
                   timeout: float) -> dict[str, int]:
    """Returns once every query committed a batch more than in ``since`` and
    the at-least-once query (if run) has a batch partly in its topic but not
    in its commit log - the moment a crash costs duplicates; gives up waiting
    for that moment after two more batches."""
    deadline = time.monotonic() + timeout
    done: dict[str, int] = {}
    while time.monotonic() < deadline:
        done = {n: job.commits(n) for n in job.queries}
        if all(done[n] > since.get(n, 0) for n in job.queries):
            if "alo" not in done or done["alo"] >= since.get("alo", 0) + 2 \
                    or job.written("alo") > done["alo"] * job.limit:
                return done
        assert proc.poll() is None, job.log_tail()
        time.sleep(0.1)
    raise AssertionError(f"no progress in {timeout}s: {done}\n{job.log_tail()}")


def kill_cycles(job: StreamJob, kills: int, timeout: float = 240) -> list[dict[str, int]]:
    """Starts the job ``kills`` times, each time SIGKILLs its process group
    mid-write; returns the commit counts seen at each kill."""
    seen: list[dict[str, int]] = []
    since: dict[str, int] = {}
    for _ in range(kills):
        proc = job.start("run")
        try:
            since = wait_mid_write(job, proc, since, timeout)
        finally:
            kill_group(proc)
        seen.append(since)
    return seen


def kill_when_held(job: StreamJob, mode: str = "run", queries: int = 0,
                   timeout: float = 240) -> None:
    """Runs the job (started with ``--hold-at``) until ``queries`` of its
    queries (default: all) stopped at their hold point, then SIGKILLs the
    job's process group: a driver crash at a known moment mid-batch."""
    faults = job.work / "faults"
    proc = job.start(mode)
    try:
        deadline = time.monotonic() + timeout
        while len(list(faults.glob("held-*"))) < (queries or len(job.queries)):
            assert proc.poll() is None, job.log_tail(mode)
            assert time.monotonic() < deadline, f"never held in {timeout}s\n{job.log_tail(mode)}"
            time.sleep(0.1)
    finally:
        kill_group(proc)
    for held in faults.glob("held-*"):
        held.unlink()


def record_counts(record_property, counts: dict[str, tuple[int, int]]) -> None:
    """Puts each query's (lost, duplicated) into the test's JUnit properties."""
    for name, (lost, dups) in counts.items():
        record_property(f"{name}_lost", lost)
        record_property(f"{name}_duplicates", dups)


def assert_mode_bounds(counts: dict[str, tuple[int, int]], kills: int, limit: int) -> None:
    """What each sink mode is held to after ``kills`` failures, each of
    which replays at most one micro-batch of ``limit`` offsets: exactly-once
    0 / 0, at-least-once 0 lost, at-most-once 0 duplicated."""
    assert counts["eos"] == (0, 0), counts
    assert counts["alo"][0] == 0 and counts["alo"][1] <= kills * limit, counts
    assert counts["amo"][1] == 0 and counts["amo"][0] <= kills * limit, counts
