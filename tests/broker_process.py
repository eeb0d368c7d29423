"""A real `headrace broker` process for end-to-end tests.

BrokerProcess runs the installed command line (`python -m headrace.cli broker`)
on 127.0.0.1 with an OS-chosen port, and parses the port from the one line the
broker prints on stdout once it accepts connections (its log format; with
--log-format json the same message as the "msg" of a JSON object):

    2026-11-25T12:00:00.123Z INFO headrace: listening on 127.0.0.1:PORT (advertised ...,
        node 0, data DIR, epoll)

Fixtures (imported into conftest.py):
- `broker`: function-scoped, fresh data dir, stopped (and exit 0 checked) at teardown.
- `module_broker`: one broker per test module, for speed.
- `broker_factory`: start(data_dir, *extra_args) -> BrokerProcess, all stopped at teardown.
"""
from __future__ import annotations

import gc
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

START_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 60.0
_LISTEN_RE = re.compile(
    r"^listening on (?P<host>[^\s:]+):(?P<port>\d+) \(advertised (?P<adv>\S+), "
    r"node (?P<node>-?\d+), data (?P<data>.*), (?P<backend>\w+)\)\s*$")
_TEXT_PREFIX_RE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z INFO headrace: ")


def log_message(line: str) -> str | None:
    """The message of one broker log line (text or JSON), None if the line
    is not one."""
    if line.startswith("{"):
        try:
            obj = json.loads(line)
        except ValueError:
            return None
        return obj.get("msg") if isinstance(obj, dict) else None
    m = _TEXT_PREFIX_RE.match(line)
    return line[m.end():] if m else None


def _listen_message(line: str) -> str | None:
    msg = log_message(line)
    return msg if msg is not None and msg.startswith("listening on ") else None


class BrokerProcess:
    """One `headrace broker` process. Not thread-safe; one test drives it."""

    def __init__(self, data_dir, *extra_args: str, listen: str = "127.0.0.1:0",
                 preexec_fn=None):
        self.data_dir = Path(data_dir)
        self.extra_args = list(extra_args)
        self.listen = listen
        self.preexec_fn = preexec_fn  # run in the child before exec (e.g. setrlimit)
        self.proc: subprocess.Popen | None = None
        self.host = "127.0.0.1"
        self.port: int | None = None
        self.backend: str | None = None
        self.listen_line: str | None = None
        self._stderr_chunks: list[str] = []
        self._stderr_thread: threading.Thread | None = None
        self._stdout_lines: list[str] = []

    # -- lifecycle -----------------------------------------------------------
    def command(self) -> list[str]:
        return [sys.executable, "-m", "headrace.cli", "broker", "--data-dir", str(self.data_dir),
                "--listen", self.listen, *self.extra_args]

    def start(self, timeout: float = START_TIMEOUT_S) -> "BrokerProcess":
        """Spawns the broker and waits for its listening line. On failure the
        process is killed and the assertion message holds its stderr."""
        assert self.proc is None or self.proc.poll() is not None, "broker already running"
        self._stderr_chunks = []
        self._stdout_lines = []
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        # The HTTP listener on a free port: brokers of several tests (and
        # several test runs) share this host. --http in extra_args wins.
        env.setdefault("HEADRACE_HEADRACE_HTTP_LISTEN", "127.0.0.1:0")
        self.proc = subprocess.Popen(self.command(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     stdin=subprocess.DEVNULL, env=env, text=True, bufsize=1,
                                     preexec_fn=self.preexec_fn)
        self._stderr_thread = threading.Thread(target=self._drain_stderr, args=(self.proc,),
                                               daemon=True)
        self._stderr_thread.start()
        line = self._read_listen_line(timeout)
        m = _LISTEN_RE.match(_listen_message(line or "") or "")
        if m is None:
            self.kill()
            raise AssertionError(f"broker did not start (timeout {timeout}s, exit code "
                                 f"{self.proc.returncode}); stdout line {line!r}\n"
                                 f"command: {' '.join(self.command())}\nstderr:\n{self.stderr}")
        self.listen_line = line.strip()
        self.host, self.port = m["host"], int(m["port"])
        self.backend = m["backend"]
        # Keep draining stdout so the broker never blocks on a full pipe.
        threading.Thread(target=self._drain_stdout, args=(self.proc,), daemon=True).start()
        if self.listen.endswith(":0") and "," not in self.listen:
            # A restart reuses the port so clients' bootstrap stays valid.
            self.listen = f"{self.host}:{self.port}"
        return self

    def _read_listen_line(self, timeout: float) -> str | None:
        result: list[str] = []

        def _reader(proc):
            for line in proc.stdout:
                self._stdout_lines.append(line)
                if _listen_message(line):
                    result.append(line)
                    return

        t = threading.Thread(target=_reader, args=(self.proc,), daemon=True)
        t.start()
        t.join(timeout)
        return result[0] if result else None

    def _drain_stdout(self, proc):
        for line in proc.stdout:
            self._stdout_lines.append(line)

    def _drain_stderr(self, proc):
        for line in proc.stderr:
            self._stderr_chunks.append(line)

    def stop(self, timeout: float = STOP_TIMEOUT_S, expect_code: int = 0) -> int:
        """SIGTERM, wait, and assert the exit code (0 = clean shutdown)."""
        assert self.proc is not None, "broker never started"
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            code = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)
            raise AssertionError(f"broker ignored SIGTERM for {timeout}s\nstderr:\n{self.stderr}")
        self._join_stderr()
        assert code == expect_code, f"broker exit code {code}, expected {expect_code}\n" \
                                    f"stderr:\n{self.stderr}"
        return code

    def kill(self) -> None:
        """SIGKILL: no shutdown work at all (a crash)."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(30)
        self._join_stderr()

    def restart(self, timeout: float = START_TIMEOUT_S) -> "BrokerProcess":
        """Clean stop (exit 0 asserted) then start on the same data dir and port."""
        self.stop()
        return self.start_again(timeout)

    def start_again(self, timeout: float = START_TIMEOUT_S) -> "BrokerProcess":
        """Starts after a stop/kill on the same data dir, on the same port; if
        that port is taken meanwhile, on a fresh one."""
        try:
            return self.start(timeout)
        except AssertionError:
            if "in use" not in self.stderr.lower():
                raise
        self.listen = f"{self.host}:0"
        return self.start(timeout)

    def _join_stderr(self):
        if self._stderr_thread is not None:
            self._stderr_thread.join(10)

    # -- state ---------------------------------------------------------------
    @property
    def bootstrap(self) -> str:
        assert self.port is not None, "broker not started"
        return f"{self.host}:{self.port}"

    @property
    def address(self) -> tuple[str, int]:
        assert self.port is not None, "broker not started"
        return (self.host, self.port)

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    @property
    def stderr(self) -> str:
        return "".join(self._stderr_chunks)

    def assert_alive(self) -> None:
        """The process runs and accepts a TCP connection."""
        assert self.running, f"broker exited with {self.proc.returncode}\nstderr:\n{self.stderr}"
        with socket.create_connection(self.address, timeout=10):
            pass

    def __repr__(self):
        return f"BrokerProcess({self.data_dir}, port={self.port}, running={self.running})"


def _finish(procs: list[BrokerProcess]) -> None:
    """Stops every broker still running; a broker that dies uncleanly fails the test.
    Client handles caught in reference cycles are collected first, while their
    broker still answers (otherwise librdkafka logs reconnect failures later)."""
    gc.collect()
    errors = []
    for b in procs:
        if b.running:
            try:
                b.stop()
            except AssertionError as e:
                errors.append(str(e))
    if errors:
        pytest.fail("\n".join(errors))


@pytest.fixture
def broker_factory(tmp_path):
    """start(data_dir=None, *extra_args) -> a started BrokerProcess."""
    procs: list[BrokerProcess] = []
    counter = [0]

    def _start(data_dir=None, *extra_args, **kw) -> BrokerProcess:
        if data_dir is None:
            counter[0] += 1
            data_dir = tmp_path / f"broker-data-{counter[0]}"
        b = BrokerProcess(data_dir, *extra_args, **kw)
        procs.append(b)
        return b.start()

    yield _start
    _finish(procs)


@pytest.fixture
def broker(broker_factory):
    """A fresh broker for this test (own data dir)."""
    return broker_factory()


# Broker flags for consumer-group tests: a new group's first rebalance
# completes at once, and short member sessions are allowed.
GROUP_ARGS = ("--set", "group.initial.rebalance.delay.ms=0",
              "--set", "group.min.session.timeout.ms=1000")


def shared_broker(tmp_path_factory, name: str, *extra_args: str):
    """Body of a module-scoped broker fixture (`yield from` it): one broker in
    a fresh directory named `name`, stopped after the module's tests."""
    b = BrokerProcess(tmp_path_factory.mktemp(name), *extra_args)
    b.start()
    yield b
    _finish([b])


@pytest.fixture(scope="module")
def module_broker(tmp_path_factory):
    """One broker shared by the tests of a module; tests use unique topic names."""
    yield from shared_broker(tmp_path_factory, "module-broker")


HTTP_LINE_RE = re.compile(r"\bheadrace: http on (?P<host>[^\s]+):(?P<port>\d+) ")


def http_address(b: BrokerProcess, timeout: float = 10.0) -> tuple[str, int]:
    """(host, port) of the broker's HTTP listener, from its announcement
    line ("... headrace: http on HOST:PORT ...", after the log timestamp)."""
    import time
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for line in list(b._stdout_lines):
            m = HTTP_LINE_RE.search(line)
            if m:
                return m["host"], int(m["port"])
        time.sleep(0.05)
    raise AssertionError(f"no 'headrace: http on' line; stdout {b._stdout_lines!r}")
