"""``ZooKeeperServer``: Debian's ZooKeeper (package ``zookeeper``) as a child
process, standalone, for tests, ``EmbeddedCluster`` and ``headrace cluster up``.

It writes its own ``zoo.cfg`` into ``data_dir``, starts
``java ... org.apache.zookeeper.server.quorum.QuorumPeerMain zoo.cfg`` and
waits until the server answers the ``ruok`` four-letter word with ``imok``.
"""
from __future__ import annotations

import atexit
import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

from headrace.errors import HeadraceError

ZOOKEEPER_JAR = "/usr/share/java/zookeeper.jar"
ZOOKEEPER_CONF_DIR = "/etc/zookeeper/conf"  # log4j.properties
MAIN_CLASS = "org.apache.zookeeper.server.quorum.QuorumPeerMain"
START_TIMEOUT_S = 30.0


class ZooKeeperUnavailable(HeadraceError, RuntimeError):
    """Java or the ZooKeeper jar is missing, or the server did not start."""


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def four_letter_word(host: str, port: int, word: str = "ruok", timeout: float = 1.0) -> str:
    """Sends a ZooKeeper four-letter command; returns the answer ('' on failure)."""
    try:
        with socket.create_connection((host, port), timeout=timeout) as s:
            s.sendall(word.encode())
            chunks = []
            while True:
                data = s.recv(4096)
                if not data:
                    break
                chunks.append(data)
            return b"".join(chunks).decode(errors="replace")
    except OSError:
        return ""


def find_java() -> str:
    java = shutil.which("java")
    if java is None:
        raise ZooKeeperUnavailable(
            "ZooKeeper needs a Java runtime: `java` is not on PATH "
            "(scripts/setup.sh installs Debian's openjdk-17-jre-headless and zookeeper)")
    return java


def find_jar() -> str:
    jar = os.environ.get("HEADRACE_ZOOKEEPER_JAR", ZOOKEEPER_JAR)
    if not os.path.exists(jar):
        raise ZooKeeperUnavailable(
            f"ZooKeeper is not installed: {jar} is missing "
            "(apt-get install zookeeper; scripts/setup.sh does it)")
    return jar


class ZooKeeperServer:
    """A standalone ZooKeeper server in a child process.

    ``port=0`` picks a free port. ``start()`` returns once the server answers
    ``ruok``; ``stop()`` ends it with SIGTERM, ``kill()`` with SIGKILL. The
    data directory is kept (a restart on it keeps every znode).
    """

    def __init__(self, data_dir: str | os.PathLike, port: int = 0, host: str = "127.0.0.1",
                 tick_ms: int = 500, min_session_timeout_ms: int = 1000,
                 max_session_timeout_ms: int = 60000, stop_at_exit: bool = True):
        self.data_dir = Path(data_dir)
        self.host = host
        self.port = port or free_port(host)
        self.tick_ms = tick_ms
        self.min_session_timeout_ms = min_session_timeout_ms
        self.max_session_timeout_ms = max_session_timeout_ms
        self.proc: subprocess.Popen | None = None
        # The server runs in its own session (a Ctrl-C meant for the parent
        # does not reach it), so it is stopped at this interpreter's exit
        # unless it should outlive it (`headrace cluster up --detach`).
        self.stop_at_exit = stop_at_exit

    @property
    def connect_string(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def _write_config(self) -> Path:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        (self.data_dir / "data").mkdir(exist_ok=True)
        cfg = self.data_dir / "zoo.cfg"
        cfg.write_text(
            f"tickTime={self.tick_ms}\n"
            f"dataDir={self.data_dir / 'data'}\n"
            f"clientPort={self.port}\n"
            f"clientPortAddress={self.host}\n"
            f"minSessionTimeout={self.min_session_timeout_ms}\n"
            f"maxSessionTimeout={self.max_session_timeout_ms}\n"
            "admin.enableServer=false\n"
            "4lw.commands.whitelist=ruok,stat,srvr,mntr,cons\n"
            "maxClientCnxns=0\n"
            "autopurge.purgeInterval=0\n")
        return cfg

    def start(self, timeout: float = START_TIMEOUT_S) -> "ZooKeeperServer":
        if self.running:
            return self
        java, jar = find_java(), find_jar()
        cfg = self._write_config()
        log_dir = self.data_dir / "logs"
        log_dir.mkdir(exist_ok=True)
        cp = f"{ZOOKEEPER_CONF_DIR}:{jar}" if os.path.isdir(ZOOKEEPER_CONF_DIR) else jar
        cmd = [java, "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
               "-cp", cp, f"-Dzookeeper.log.dir={log_dir}",
               "-Dzookeeper.root.logger=INFO,ROLLINGFILE", "-Dzookeeper.log.file=zookeeper.log",
               "-Dzookeeper.jmx.log4j.disable=true", MAIN_CLASS, str(cfg)]
        self._out = open(log_dir / "zookeeper.out", "ab")
        self.proc = subprocess.Popen(cmd, stdout=self._out, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, start_new_session=True)
        if self.stop_at_exit:
            atexit.register(self.kill)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                break
            if four_letter_word(self.host, self.port, "ruok", 0.5) == "imok":
                return self
            time.sleep(0.1)
        code = self.proc.poll()
        self.kill()
        tail = _tail(log_dir / "zookeeper.out")
        raise ZooKeeperUnavailable(
            f"ZooKeeper did not start on {self.connect_string} within {timeout}s "
            f"(exit code {code}); {log_dir / 'zookeeper.out'}:\n{tail}")

    def stop(self, timeout: float = 10.0) -> None:
        """SIGTERM and wait (SIGKILL after ``timeout``). Idempotent."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGCONT)  # a paused server handles SIGTERM only then
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self._close_out()

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)
        self._close_out()

    def _close_out(self) -> None:
        out = getattr(self, "_out", None)
        if out is not None:
            out.close()
            self._out = None

    def __enter__(self) -> "ZooKeeperServer":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def __repr__(self) -> str:
        return f"ZooKeeperServer({self.connect_string}, running={self.running})"


def _tail(path: Path, lines: int = 20) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""
