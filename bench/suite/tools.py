"""Running the native tools (headrace-loadgen, headrace-reference) and a raw
Metadata request, each returning parsed figures."""
from __future__ import annotations

import json
import socket
import struct
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path


class ToolError(RuntimeError):
    """A tool crashed or printed no result line."""


@dataclass
class Tools:
    loadgen: Path
    reference: Path
    # Environment of the load generator (None: inherited), e.g. an
    # LD_LIBRARY_PATH that picks another librdkafka (run_suite.py --compare).
    loadgen_env: dict[str, str] | None = None

    @classmethod
    def find(cls, build_dir: Path) -> "Tools":
        bench = build_dir / "bench"
        tools = cls(bench / "headrace-loadgen", bench / "headrace-reference")
        for p in (tools.loadgen, tools.reference):
            if not p.exists():
                raise ToolError(f"{p} not found: build with -DHEADRACE_BUILD_BENCH=ON "
                                f"(cmake --build {build_dir} --target headrace-loadgen "
                                f"headrace-reference)")
        return tools


def _json_lines(cmd: list[str], timeout: float, env: dict[str, str] | None = None) -> list[dict]:
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    lines = [json.loads(l) for l in proc.stdout.splitlines() if l.startswith("{")]
    # loadgen exits 1 when some messages failed: still a result, errors counted.
    if proc.returncode not in (0, 1) or not lines:
        raise ToolError(f"{' '.join(cmd)} exited {proc.returncode}\n{proc.stderr[-3000:]}")
    return lines


def raw_fetch(bootstrap: str, topic: str, value_size: int) -> dict:
    """One pass of bench/raw_fetch.py (a bare Fetch reader, no client
    library) over partition 0 of `topic`: {'msgs', 'seconds', 'fetches',
    'mb_per_s'}."""
    script = Path(__file__).resolve().parents[1] / "raw_fetch.py"
    return _json_lines([sys.executable, str(script), "--bootstrap", bootstrap, "--topic", topic,
                        "--value-size", str(value_size)], timeout=600)[0]


def reference(tools: Tools, seconds: float, file_dir: Path) -> dict[str, float]:
    """{'tcp': MB/s, 'sendfile': MB/s, 'tcp-file': MB/s} from one
    headrace-reference run; tcp-file writes into a file in `file_dir`
    (where the brokers under test keep their logs)."""
    lines = _json_lines([str(tools.reference), "all", "--seconds", str(seconds),
                         "--dir", str(file_dir), "--json"],
                        timeout=seconds * 6 + 60)
    return {l["reference"]: l["mb_per_s"] for l in lines}


def loadgen(tools: Tools, mode: str, bootstrap: str, topic: str, broker_pid: int,
            *args: str, timeout: float = 600) -> dict:
    """One headrace-loadgen run; its JSON result."""
    cmd = [str(tools.loadgen), mode, "--bootstrap", bootstrap, "--topic", topic,
           "--broker-pid", str(broker_pid), "--json", *args]
    return _json_lines(cmd, timeout, tools.loadgen_env)[-1]


def _metadata_request(correlation_id: int) -> bytes:
    # Metadata v4 (non-flexible): header v1 (key, version, correlation id,
    # client id), body: topics = null (all topics), allow_auto_topic_creation.
    client = b"headrace-bench"
    body = struct.pack(">hhih", 3, 4, correlation_id, len(client)) + client
    body += struct.pack(">i?", -1, False)
    return struct.pack(">i", len(body)) + body


def _read_exact(sock: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(min(n - len(buf), 1 << 20))
        if not chunk:
            raise ToolError("broker closed the connection")
        buf += chunk
    return bytes(buf)


def metadata_all_ms(host: str, port: int, repeats: int) -> tuple[list[float], int]:
    """Times (ms) of `repeats` Metadata requests for all topics on one
    connection, from sending the request to having read the whole response,
    and the response size in bytes."""
    times, size = [], 0
    with socket.create_connection((host, port), timeout=60) as sock:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        for i in range(repeats):
            t0 = time.perf_counter()
            sock.sendall(_metadata_request(i + 1))
            size = struct.unpack(">i", _read_exact(sock, 4))[0]
            _read_exact(sock, size)
            times.append((time.perf_counter() - t0) * 1e3)
    return times, size
