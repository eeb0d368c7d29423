"""A linear Storm topology under the harness: one spout task -> an optional
middle bolt -> a sink bolt, each a real component process, routed as a
Storm worker routes them, with Storm's acker:

- a tracked spout emit opens a root with one edge (a random 64-bit id) to the
  first bolt; a bolt's emit anchored to its input adds a new edge to the next
  bolt, and the input's ack carries ``its edge XOR its children's edges``;
  the root is complete (spout gets ``ack``) when the XOR is back to 0, failed
  (spout gets ``fail``) on any fail or after ``message_timeout_s``;
- the spout is asked for ``next`` only below ``max_pending`` open roots;
- a killed component loses what was sent to it: its tuples time out. A
  restarted spout task starts with no open roots (the acker's roots of the
  dead task are dropped, as a worker restart drops them; late acks of their
  edges are ignored).

Bolt events are consumed in arrival order (storm_harness.BoltTask.events),
so a child's emit is always seen before its anchor's ack.
"""
from __future__ import annotations

import os
import random
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from storm_harness import BoltTask, SpoutTask
from storm_multilang import ComponentDied, ProtocolError

TESTS_DIR = Path(__file__).resolve().parent


def components_on_path(monkeypatch) -> None:
    """Lets component processes import storm_components (streamparse_run
    imports the class by module name)."""
    old = os.environ.get("PYTHONPATH")
    monkeypatch.setenv("PYTHONPATH", str(TESTS_DIR) + (os.pathsep + old if old else ""))


@dataclass
class Root:
    msg_id: Any
    t0: float
    val: int


@dataclass
class Stage:
    """One bolt task and the routes of the tuples sent to it."""
    start: Callable[[], BoltTask]
    name: str
    task: BoltTask | None = None
    seen: int = 0                                            # events consumed
    sent: int = 0                                            # tuples delivered to it
    routes: dict[str, tuple[int, int]] = field(default_factory=dict)   # id -> (root, edge)
    children: dict[str, int] = field(default_factory=dict)  # id -> XOR of child edges
    held: bool = False    # its events wait (acks not seen: its tuples stay in flight)


class LinearTopology:
    def __init__(self, start_spout: Callable[[], SpoutTask], bolts: list[tuple[str, Callable]],
                 max_pending: int, message_timeout_s: float):
        self.start_spout = start_spout
        self.stages = [Stage(start, name) for name, start in bolts]
        self.max_pending, self.timeout_s = max_pending, message_timeout_s
        self.roots: dict[int, Root] = {}
        self.spout: SpoutTask | None = None
        self.emitted: list[Any] = []     # every tracked spout emit's message id
        self.untracked = 0               # spout emits without a message id
        self.acked: list[Any] = []
        self.failed: list[Any] = []
        self.violations: list[str] = []

    # -- lifecycle -------------------------------------------------------------
    def start(self) -> "LinearTopology":
        for st in self.stages:
            self.restart_bolt(st.name)
        self.restart_spout()
        return self

    def restart_spout(self) -> None:
        self.roots.clear()
        self.spout = self.start_spout()
        self._track(self._spout_query("activate"))

    def kill_spout(self) -> None:
        self.spout.proc.kill()

    def stage(self, name: str) -> Stage:
        return next(st for st in self.stages if st.name == name)

    def kill_bolt(self, name: str) -> None:
        st = self.stage(name)
        self.violations += st.task.violations
        st.task.close()

    def restart_bolt(self, name: str) -> None:
        st = self.stage(name)
        st.task, st.seen, st.routes, st.children, st.held = st.start(), 0, {}, {}, False

    def close(self) -> None:
        for st in self.stages:
            if st.task is not None:
                self.violations += st.task.violations
                st.task.close()
        if self.spout is not None:
            self.spout.proc.kill()

    def recent_logs(self, n: int = 15) -> str:
        parts = [f"spout: {self.spout.logs[-n:]} errors {self.spout.errors[-n:]}"]
        parts += [f"{st.name}: {st.task.logs[-n:]} errors {st.task.errors[-n:]}"
                  for st in self.stages]
        return "\n".join(parts)

    # -- running ---------------------------------------------------------------
    def run_until(self, done: Callable[[], bool], timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        while not done():
            assert time.monotonic() < deadline, \
                f"timeout waiting for {what}: emitted {len(self.emitted)} acked " \
                f"{len(self.acked)} failed {len(self.failed)} pending {len(self.roots)}\n" \
                + self.recent_logs()
            if not self.turn():
                time.sleep(0.002)

    def turn(self) -> bool:
        """One worker turn; True if anything happened."""
        busy = self._expire()
        if len(self.roots) < self.max_pending:
            emits = self._spout_query("next")
            busy |= bool(emits)
            self._track(emits)
        for i, st in enumerate(self.stages):
            busy |= self._drain(i, st)
        return busy

    def _spout_query(self, command: str, msg_id: Any = "") -> list:
        try:
            return self.spout.query(command, msg_id)
        except (ComponentDied, ProtocolError):
            if self.spout.proc.alive:
                raise
            return []   # killed by the test: it is restarted by the test

    def _track(self, emits) -> None:
        for e in emits:
            if e.msg_id is None:   # unreliable: delivered, never acked to the spout
                self.untracked += 1
                self._send(0, e.values, "kafka-spout", 0, 0)
                continue
            root, edge = random.getrandbits(63), random.getrandbits(63)
            self.roots[root] = Root(e.msg_id, e.at, edge)
            self.emitted.append(e.msg_id)
            self._send(0, e.values, "kafka-spout", root, edge)

    def _send(self, i: int, values: list, comp: str, root: int, edge: int) -> None:
        st = self.stages[i]
        try:
            st.routes[st.task.send_tuple(values, comp=comp)] = (root, edge)
            st.sent += 1
        except ComponentDied:
            pass   # lost with the dead bolt: the root times out

    def _drain(self, i: int, st: Stage) -> bool:
        if st.held:
            return False
        events = st.task.events_since(st.seen)
        st.seen += len(events)
        for ev in events:
            if ev[0] == "emit":
                _, values, anchors = ev
                for a in anchors:
                    if a in st.routes and i + 1 < len(self.stages):
                        root, _ = st.routes[a]
                        child = random.getrandbits(63)
                        st.children[a] = st.children.get(a, 0) ^ child
                        self._send(i + 1, values, st.name, root, child)
            elif ev[0] == "ack" and ev[1] in st.routes:
                root, edge = st.routes.pop(ev[1])
                self._xor(root, edge ^ st.children.pop(ev[1], 0))
            elif ev[0] == "fail" and ev[1] in st.routes:
                root, _ = st.routes.pop(ev[1])
                st.children.pop(ev[1], None)
                if root in self.roots:
                    self._fail(root)
        return bool(events)

    def _xor(self, root: int, val: int) -> None:
        r = self.roots.get(root)
        if r is None:
            return   # timed out, failed, or of a dead spout task: Storm drops it
        r.val ^= val
        if r.val == 0:
            del self.roots[root]
            self.acked.append(r.msg_id)
            self._track(self._spout_query("ack", r.msg_id))

    def _fail(self, root: int) -> None:
        r = self.roots.pop(root)
        self.failed.append(r.msg_id)
        self._track(self._spout_query("fail", r.msg_id))

    def _expire(self) -> bool:
        now = time.monotonic()
        old = [root for root, r in self.roots.items() if now - r.t0 > self.timeout_s]
        for root in old:
            if root in self.roots:
                self._fail(root)
        return bool(old)
