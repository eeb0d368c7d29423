"""A consumer-group member run as a child process, for group tests.

The child (a test file run as a script) prints one JSON object per line
(``_emit``); the parent's :class:`MemberProcess` reads them on a thread and
hands each to ``on_event`` under ``lock``. Subclasses keep what their test
needs (assignments, values). ``members`` is the fixture that stops every
member a test started; ``wait_for`` polls with each member's history in the
failure message.
"""
from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import time


def emit(obj) -> None:
    """Child side: one event line on stdout."""
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


class MemberProcess:
    """Parent side: runs ``cmd`` and feeds its JSON lines to on_event."""

    def __init__(self, cmd: list[str]):
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     stdin=subprocess.DEVNULL, text=True, bufsize=1)
        self.lock = threading.Lock()
        threading.Thread(target=self._read, daemon=True).start()

    def on_event(self, ev: dict) -> None:  # called with self.lock held
        raise NotImplementedError

    def history(self) -> str:
        """What a timeout message shows about this member."""
        return ""

    def _read(self):
        for line in self.proc.stdout:
            try:
                ev = json.loads(line)
            except ValueError:
                continue
            with self.lock:
                self.on_event(ev)

    def stop(self):
        """SIGTERM (the member commits and closes), then SIGKILL after 30 s."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)

    def kill(self):
        self.proc.kill()
        self.proc.wait(10)

    def stderr(self):
        return self.proc.stderr.read() if self.proc.poll() is not None else ""


def member_fixture(member_class):
    """A function-scoped fixture: ``start(*args)`` makes a member_class and
    every member started is stopped at the end of the test."""
    import pytest  # the member processes themselves do not need it

    @pytest.fixture
    def members():
        started: list[MemberProcess] = []

        def _start(*args, **kw):
            m = member_class(*args, **kw)
            started.append(m)
            return m

        yield _start
        for m in started:
            m.stop()
    return members


def wait_for(pred, what, timeout, ms=(), poll=0.05):
    """Polls ``pred``; on timeout the message lists each member's history."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return
        time.sleep(poll)
    history = "; ".join(f"member {i}: {m.history()}" for i, m in enumerate(ms))
    raise AssertionError(f"timed out waiting for {what}" + (f" ({history})" if history else ""))
