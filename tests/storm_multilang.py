"""Storm's side of the multi-lang protocol, for one shell component process.

What Storm's ShellProcess does, done here the same way:
- start the component with the command a streamparse spec declares
  (``streamparse_run <module.Class>``), in a working directory;
- send the handshake ``{"conf", "pidDir", "context"}``; the component must
  create an empty file named by its pid in pidDir and answer ``{"pid": N}``;
- every message both ways is JSON followed by a line ``end``; a message that
  is a JSON list is a list of task ids (answer to an emit).

Also the worker's view of the process: a reader thread parses stdout, stderr
is kept for failure messages; EOF on stdout means the process went away.
"""
from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

HANDSHAKE_TIMEOUT_S = 30.0
_EOF = object()


class ComponentDied(AssertionError):
    """The component's stdout closed (it exited or was killed)."""


class ProtocolError(AssertionError):
    """The component broke the multi-lang protocol (Storm would halt the worker)."""


def run_command(target: str) -> list[str]:
    """The command Storm runs for a streamparse Python component
    (``streamparse_run <target>``), run by this interpreter so that the
    component imports the same headrace as the test (a streamparse_run found
    on PATH may belong to another Python)."""
    exe = Path(sys.executable).parent / "streamparse_run"
    return [str(exe), target] if exe.is_file() else \
        [sys.executable, "-m", "streamparse.run", target]


class ShellProcess:
    """One component subprocess speaking JSON multi-lang over stdin/stdout."""

    def __init__(self, target: str, conf: dict, context: dict, workdir: Path):
        self.target, self.conf, self.context = target, conf, context
        self.workdir = Path(workdir)
        self.pid_dir = self.workdir / "pids"
        self.proc: subprocess.Popen | None = None
        self.pid: int | None = None
        self._inbox: queue.Queue = queue.Queue()
        self._write_lock = threading.Lock()
        self._stderr: list[str] = []

    # -- lifecycle -----------------------------------------------------------
    def launch(self) -> "ShellProcess":
        """Starts the process and completes the handshake."""
        self.pid_dir.mkdir(parents=True, exist_ok=True)
        self.proc = subprocess.Popen(run_command(self.target), cwd=self.workdir,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE)
        threading.Thread(target=self._read_stdout, args=(self.proc, self._inbox),
                         daemon=True).start()
        threading.Thread(target=self._read_stderr, args=(self.proc,), daemon=True).start()
        self.send({"conf": self.conf, "pidDir": str(self.pid_dir), "context": self.context})
        reply = self.read(HANDSHAKE_TIMEOUT_S)
        if not isinstance(reply, dict) or "pid" not in reply:
            raise ProtocolError(f"handshake answer {reply!r} has no pid")
        self.pid = int(reply["pid"])
        if self.pid != self.proc.pid:
            raise ProtocolError(f"component says pid {self.pid}, process is {self.proc.pid}")
        if not (self.pid_dir / str(self.pid)).is_file():
            raise ProtocolError(f"no pid file {self.pid_dir / str(self.pid)}")
        return self

    def kill(self, sig: int = signal.SIGKILL) -> int:
        """Sends ``sig`` (default SIGKILL: a crash, no cleanup) and reaps."""
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        return self.proc.wait(30)

    def wait_exit(self, timeout: float) -> int:
        return self.proc.wait(timeout)

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    @property
    def stderr(self) -> str:
        return "".join(self._stderr)

    # -- messages ------------------------------------------------------------
    def send(self, msg: Any) -> None:
        data = (json.dumps(msg) + "\nend\n").encode("utf-8")
        with self._write_lock:
            try:
                self.proc.stdin.write(data)
                self.proc.stdin.flush()
            except (BrokenPipeError, ValueError, OSError) as e:
                raise ComponentDied(f"{self.target}: write failed ({e})\n{self.stderr}") from None

    def read(self, timeout: float) -> Any:
        """The next message. ComponentDied on EOF, ProtocolError on timeout
        (Storm: 'subprocess heartbeat timeout')."""
        try:
            msg = self._inbox.get(timeout=timeout)
        except queue.Empty:
            raise ProtocolError(f"{self.target}: no message within {timeout}s "
                                f"(subprocess heartbeat timeout)\n{self.stderr}") from None
        if msg is _EOF:
            self._inbox.put(_EOF)   # stays dead for later readers
            code = self.proc.wait(10)
            raise ComponentDied(f"{self.target} exited with {code}\nstderr:\n{self.stderr}")
        return msg

    @staticmethod
    def _read_stdout(proc: subprocess.Popen, inbox: queue.Queue) -> None:
        lines: list[str] = []
        for raw in proc.stdout:
            line = raw.decode("utf-8").rstrip("\n")
            if line == "end":
                try:
                    inbox.put(json.loads("\n".join(lines)))
                except ValueError:
                    inbox.put({"command": "__garbage__", "text": "\n".join(lines)})
                lines = []
            elif line or lines:
                lines.append(line)
        inbox.put(_EOF)

    def _read_stderr(self, proc: subprocess.Popen) -> None:
        for raw in proc.stderr:
            self._stderr.append(raw.decode("utf-8", "replace"))


def base_conf(**extra: Any) -> dict:
    """A topology configuration as a Storm worker hands it over (the keys the
    components read), plus ``extra`` (headrace.* settings)."""
    conf = {"topology.name": "headrace-test", "storm.id": "headrace-test-1-1700000000",
            "topology.debug": False, "topology.message.timeout.secs": 30,
            "topology.subprocess.timeout.secs": 30, "pystorm.log.level": "info",
            "supervisor.worker.timeout.secs": 30}
    conf.update(extra)
    return conf


def context(component: str, task_id: int, fields: list[str],
            sources: dict[str, list[str]] | None = None, tasks: dict[int, str] | None = None) -> dict:
    """A topology context like Storm 0.10+ sends: tasks, this component's
    output stream and fields, and its inputs' fields (``sources``)."""
    task_map = {str(t): c for t, c in (tasks or {task_id: component}).items()}
    task_map.setdefault("99", "__acker")
    sources = sources or {}
    return {"task->component": task_map, "taskid": task_id, "componentid": component,
            "streams": ["default"], "stream->outputfields": {"default": fields},
            "stream->target->grouping": {"default": {"sink": {"type": "SHUFFLE"}}},
            "source->stream->grouping": {s: {"default": {"type": "SHUFFLE"}} for s in sources},
            "source->stream->fields": {s: {"default": f} for s, f in sources.items()}}


def env_ok() -> str | None:
    """Why the components cannot run here (None if they can)."""
    try:
        import streamparse  # noqa: F401
        import headrace.storm  # noqa: F401
    except ImportError as e:
        return f"Storm components unavailable: {e}"
    return None if os.name == "posix" else "POSIX only"
