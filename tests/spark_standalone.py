"""A real Spark standalone cluster for tests: one master and N workers, each
its own JVM started from pyspark's own ``bin/spark-class`` (no Spark
download). Applications submitted to ``master_url`` get executors in
separate JVMs, launched by the workers, with their own Python workers: no
guarantee a test shows on this cluster can lean on local mode (one JVM, one
file system view, one process group).

Every process of the cluster runs in its own session, so killing a test's
driver does not touch it and ``stop()`` kills the whole tree. Executors are
children of their worker; ``executors()`` finds them by their main class.
"""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pyspark

SPARK_HOME = Path(pyspark.__file__).resolve().parent
EXECUTOR_MAIN = "org.apache.spark.executor.CoarseGrainedExecutorBackend"
START_TIMEOUT_S = 120


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _pids_with(needle: str) -> list[int]:
    """PIDs of processes whose command line contains ``needle``."""
    out = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if needle in cmd:
            out.append(int(entry.name))
    return out


class StandaloneCluster:
    """``with StandaloneCluster(work_dir) as c: ... c.master_url ...``"""

    def __init__(self, work_dir: Path, workers: int = 2, cores: int = 1, memory: str = "1g"):
        self.work = Path(work_dir)
        self.workers = workers
        self.cores = cores
        self.memory = memory
        self.port = _free_port()
        self.master_url = f"spark://127.0.0.1:{self.port}"
        self._procs: list[subprocess.Popen] = []

    def env(self, host: str = "127.0.0.1") -> dict:
        """Environment of the cluster's processes on ``host`` (and what
        executors inherit)."""
        return dict(os.environ, SPARK_HOME=str(SPARK_HOME), SPARK_LOCAL_IP=host,
                    SPARK_NO_DAEMONIZE="1", PYSPARK_PYTHON=sys.executable,
                    SPARK_WORKER_OPTS="-XX:TieredStopAtLevel=1 -XX:+UseSerialGC",
                    SPARK_DAEMON_JAVA_OPTS="-XX:TieredStopAtLevel=1 -XX:+UseSerialGC")

    def _spawn(self, name: str, host: str, *args: str) -> Path:
        log = self.work / f"{name}.log"
        self._procs.append(subprocess.Popen(
            [str(SPARK_HOME / "bin" / "spark-class"), *args], env=self.env(host),
            stdout=open(log, "ab"), stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            start_new_session=True))
        return log

    @staticmethod
    def _wait_for(log: Path, text: str, proc: subprocess.Popen) -> None:
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if log.exists() and text in log.read_text(errors="replace"):
                return
            if proc.poll() is not None:
                break
            time.sleep(0.2)
        raise AssertionError(f"{log.name}: no {text!r} within {START_TIMEOUT_S}s:\n"
                             f"{log.read_text(errors='replace')[-3000:]}")

    def start(self) -> "StandaloneCluster":
        self.work.mkdir(parents=True, exist_ok=True)
        log = self._spawn("master", "127.0.0.1", "org.apache.spark.deploy.master.Master",
                          "--host", "127.0.0.1", "--port", str(self.port), "--webui-port",
                          str(_free_port()))
        self._wait_for(log, "I have been elected leader", self._procs[-1])
        for i in range(self.workers):
            work_dir = self.work / f"worker-{i}"
            host = self.worker_host(i)
            log = self._spawn(f"worker-{i}", host, "org.apache.spark.deploy.worker.Worker",
                              self.master_url, "--host", host, "--cores",
                              str(self.cores), "--memory", self.memory, "--work-dir",
                              str(work_dir), "--webui-port", str(_free_port()))
            self._wait_for(log, "Successfully registered with master", self._procs[-1])
        return self

    @staticmethod
    def worker_host(i: int) -> str:
        """Worker i listens on its own loopback address (127.0.0.2, .3, ...):
        to Spark each worker is another host, which speculative execution
        needs (a copy never runs on the host of the attempt it races)."""
        return f"127.0.0.{2 + i}"

    def executors(self) -> list[int]:
        """PIDs of this cluster's executor JVMs running now (each runs in a
        directory under its worker's work dir)."""
        out = []
        for pid in _pids_with(EXECUTOR_MAIN):
            try:
                cwd = Path(os.readlink(f"/proc/{pid}/cwd"))
            except OSError:
                continue
            if self.work.resolve() in cwd.parents:
                out.append(pid)
        return out

    def stop(self) -> None:
        for proc in reversed(self._procs):
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait(30)
        for pid in self.executors():   # in their worker's session, but be sure
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self._procs = []

    def __enter__(self) -> "StandaloneCluster":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
