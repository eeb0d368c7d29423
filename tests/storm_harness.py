"""Plays a Storm worker and its acker for shell spouts and bolts (over
storm_multilang.ShellProcess), as Storm's ShellSpout, ShellBolt, spout
executor and acker behave:

- Spouts are synchronous: each command (activate, deactivate, next, ack,
  fail) is answered by any number of emit/log/error/metrics messages and then
  ``sync``. An emit with ``need_task_ids`` (default true) gets the list of
  receiving task ids. A component silent for ``topology.subprocess.timeout.secs``
  while Storm waits on it is a heartbeat timeout.
- The spout executor calls next only while fewer than
  ``topology.max.spout.pending`` tracked tuples (emitted with an id) are
  pending, and fails a pending tuple after ``topology.message.timeout.secs``.
- The acker tracks each tracked spout tuple by XOR of random 64-bit edge ids:
  the tuple is fully processed (spout gets ``ack``) when the XOR is back to 0,
  failed (spout gets ``fail``) when any downstream fail arrives.
- Bolts are asynchronous: tuples ``{"id","comp","stream","task","tuple"}``
  are written without waiting; every second a ``__heartbeat`` tuple (task -1)
  is sent, which the bolt must answer with ``sync``. Acking or failing an id
  twice, or an id never sent, or anchoring on an acked tuple is a protocol
  error (ShellBolt halts the worker on these).
"""
from __future__ import annotations

import random
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from storm_multilang import ComponentDied, ProtocolError, ShellProcess

DOWNSTREAM_TASK = 7


@dataclass
class Emit:
    values: list
    msg_id: Any           # None: an unreliable (untracked) emit
    stream: str
    at: float = field(default_factory=time.monotonic)


class SpoutTask:
    """Storm's ShellSpout for one task."""

    def __init__(self, proc: ShellProcess):
        self.proc = proc
        self.timeout_s = float(proc.conf.get("topology.subprocess.timeout.secs", 30))
        self.logs: list[str] = []
        self.errors: list[str] = []
        self.emits: list[Emit] = []

    def query(self, command: str, msg_id: Any = "") -> list[Emit]:
        self.proc.send({"command": command, "id": msg_id})
        out: list[Emit] = []
        while True:
            msg = self.proc.read(self.timeout_s)
            cmd = msg.get("command") if isinstance(msg, dict) else None
            if cmd == "sync":
                self.emits.extend(out)
                return out
            if cmd == "emit":
                e = Emit(msg["tuple"], msg.get("id"), msg.get("stream") or "default")
                out.append(e)
                if msg.get("need_task_ids", True) and not msg.get("task"):
                    self.proc.send([DOWNSTREAM_TASK])
            elif cmd == "log":
                self.logs.append(msg.get("msg", ""))
            elif cmd == "error":
                self.errors.append(msg.get("msg", ""))
            elif cmd != "metrics":
                raise ProtocolError(f"spout sent {msg!r} (expected emit/log/error/sync)")

    def next(self) -> list[Emit]:
        return self.query("next")



@dataclass
class InFlight:
    """A tracked spout tuple delivered downstream as one edge."""
    emit: Emit
    root: int
    edge: int


class SpoutExecutor:
    """Storm's spout executor plus acker for one SpoutTask (one downstream edge
    per tuple). The test plays the downstream bolt: ``ack``/``fail`` edges."""

    def __init__(self, task: SpoutTask, max_pending: int | None = None,
                 message_timeout_s: float | None = None):
        self.task = task
        conf = task.proc.conf
        self.max_pending = max_pending or conf.get("topology.max.spout.pending")
        self.message_timeout_s = message_timeout_s or conf["topology.message.timeout.secs"]
        self.pending: dict[int, tuple[Any, float, int]] = {}   # root -> (msg id, t0, ackval)
        self.acked: list[Any] = []
        self.failed: list[Any] = []
        self._outbox: list[InFlight] = []
        self._track(self.task.query("activate"))

    def step(self) -> list[InFlight]:
        """One executor turn: time out old tuples, then next() unless max
        pending is reached. Returns the tracked tuples delivered downstream."""
        now = time.monotonic()
        for root, (msg_id, t0, _) in list(self.pending.items()):
            if now - t0 > self.message_timeout_s:
                self._fail_root(root, msg_id)
        if not self.max_pending or len(self.pending) < self.max_pending:
            self._track(self.task.next())
        out, self._outbox = self._outbox, []
        return out

    def _track(self, emits: list[Emit]) -> None:
        """Acker init for each tracked emit: a new root with one edge."""
        for e in emits:
            if e.msg_id is None:
                continue
            root, edge = random.getrandbits(63), random.getrandbits(63)
            self.pending[root] = (e.msg_id, e.at, edge)   # ackval = XOR of open edges
            self._outbox.append(InFlight(e, root, edge))

    def ack(self, t: InFlight) -> None:
        msg_id, t0, val = self.pending.get(t.root, (None, 0.0, None))
        if val is None:
            return   # timed out or failed meanwhile: Storm drops the ack
        val ^= t.edge
        if val == 0:
            del self.pending[t.root]
            self.acked.append(msg_id)
            self._track(self.task.query("ack", msg_id))
        else:
            self.pending[t.root] = (msg_id, t0, val)

    def fail(self, t: InFlight) -> None:
        if t.root in self.pending:
            self._fail_root(t.root, self.pending[t.root][0])

    def _fail_root(self, root: int, msg_id: Any) -> None:
        del self.pending[root]
        self.failed.append(msg_id)
        self._track(self.task.query("fail", msg_id))


class BoltTask:
    """Storm's ShellBolt for one task: async writes, a reader thread, heartbeats."""

    def __init__(self, proc: ShellProcess, heartbeat_s: float = 1.0):
        self.proc = proc
        self.timeout_s = float(proc.conf.get("topology.subprocess.timeout.secs", 30))
        self.pending: dict[str, list] = {}
        self.acked: list[str] = []
        self.failed: list[str] = []
        self.logs: list[str] = []
        self.errors: list[str] = []
        self.violations: list[str] = []
        # ("emit", values, anchors) / ("ack", id) / ("fail", id) in arrival
        # order, for a router that must see a child's emit before its anchor's ack.
        self.events: list[tuple] = []
        self.heartbeats_sent = 0
        self.syncs = 0
        self._last_msg = time.monotonic()
        self._cond = threading.Condition()
        self._stop = threading.Event()
        self._died: str | None = None
        threading.Thread(target=self._reader, daemon=True).start()
        threading.Thread(target=self._heartbeats, args=(heartbeat_s,), daemon=True).start()

    def send_tuple(self, values: list, comp: str = "spout", stream: str = "default",
                   task: int = 1) -> str:
        tup_id = str(random.getrandbits(63))
        with self._cond:
            self.pending[tup_id] = values
        self.proc.send({"id": tup_id, "comp": comp, "stream": stream, "task": task,
                        "tuple": values})
        return tup_id

    def events_since(self, n: int) -> list[tuple]:
        """Events after the first ``n`` (safe against the reader thread)."""
        with self._cond:
            return self.events[n:]

    def acked_since(self, n: int) -> list[str]:
        """Ids acked after the first ``n`` acks (safe against the reader thread)."""
        with self._cond:
            return self.acked[n:]

    def failed_since(self, n: int) -> list[str]:
        """Ids failed after the first ``n`` fails (safe against the reader thread)."""
        with self._cond:
            return self.failed[n:]

    def wait_for(self, pred: Callable[[], bool], timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        with self._cond:
            while not pred():
                left = deadline - time.monotonic()
                if left <= 0 or self._died:
                    raise AssertionError(f"timeout waiting for {what}: acked {len(self.acked)} "
                                         f"failed {len(self.failed)} pending {len(self.pending)}"
                                         f" died={self._died}\n{self.proc.stderr}")
                self._cond.wait(min(left, 0.2))

    def close(self) -> None:
        self._stop.set()
        self.proc.kill()

    def _reader(self) -> None:
        try:
            while True:
                self._handle(self.proc.read(3600))
        except (ComponentDied, ProtocolError) as e:
            with self._cond:
                self._died = str(e).splitlines()[0]
                self._cond.notify_all()

    def _handle(self, msg: Any) -> None:
        with self._cond:
            self._last_msg = time.monotonic()
            cmd = msg.get("command") if isinstance(msg, dict) else None
            if cmd in ("ack", "fail"):
                if self.pending.pop(str(msg.get("id")), None) is None:
                    self.violations.append(f"{cmd} of unknown or finished id {msg.get('id')}")
                (self.acked if cmd == "ack" else self.failed).append(str(msg["id"]))
                self.events.append((cmd, str(msg["id"])))
            elif cmd == "emit":
                for a in msg.get("anchors") or []:
                    if str(a) not in self.pending:
                        self.violations.append(f"anchored onto {a} after ack/fail")
                self.events.append(("emit", msg.get("tuple"),
                                    [str(a) for a in msg.get("anchors") or []]))
                if msg.get("need_task_ids", True) and not msg.get("task"):
                    self.proc.send([DOWNSTREAM_TASK])
            elif cmd == "sync":
                self.syncs += 1
            elif cmd == "log":
                self.logs.append(msg.get("msg", ""))
            elif cmd == "error":
                self.errors.append(msg.get("msg", ""))
            elif cmd != "metrics":
                self.violations.append(f"unexpected message {msg!r}")
            self._cond.notify_all()

    def _heartbeats(self, period: float) -> None:
        while not self._stop.wait(period):
            if time.monotonic() - self._last_msg > self.timeout_s:
                self.violations.append("subprocess heartbeat timeout")
            try:
                self.proc.send({"id": str(random.getrandbits(63)), "comp": None,
                                "stream": "__heartbeat", "task": -1, "tuple": []})
                self.heartbeats_sent += 1
            except ComponentDied:
                return
