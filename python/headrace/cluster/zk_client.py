"""A kazoo client whose every wait has a deadline.

kazoo's synchronous calls (``zk.get``, ``zk.create``, a transaction's
``commit``...) wait on an ``AsyncResult`` with no timeout. While the client
is disconnected (ZooKeeper killed, paused with SIGSTOP, partitioned away)
kazoo queues the request and the caller waits until a session is
re-established: forever if ZooKeeper does not come back. That is how a
broker ignored SIGTERM (issue 33): its main thread sat in such a call.

``BoundedHandler`` is kazoo's threading handler whose results' ``get()``
never waits longer than

- ``request_timeout_s`` (the session timeout: a request not answered by
  then would not be answered by that session anyway), and
- the handler's ``deadline`` (monotonic seconds; ``None``: none), which the
  member moves forward as it shuts down: past it, every wait, including
  those other threads are blocked in, ends at once, and
- ``cancel`` (an Event, e.g. SIGTERM while starting), when set.

A wait that ends so raises ``ZooKeeperWaitTimeout``, which is both kazoo's
``OperationTimeoutError`` (a KazooException: the handlers of "ZooKeeper
unavailable" catch it) and the handler's timeout exception.

``stop_client`` stops and closes a client within a timeout: kazoo's own
``stop()`` waits up to the session timeout for its connection thread (which
may be inside a connection attempt to a paused server) and then joins it
with no timeout.
"""
from __future__ import annotations

import logging
import threading
import time

from kazoo.client import KazooClient
from kazoo.exceptions import OperationTimeoutError
from kazoo.handlers.threading import AsyncResult, KazooTimeoutError, SequentialThreadingHandler
from kazoo.retry import KazooRetry

log = logging.getLogger("headrace.cluster.member")

_SLICE_S = 0.1  # how often a waiting call looks at the deadline and the cancel event


class ZooKeeperWaitTimeout(OperationTimeoutError, KazooTimeoutError):
    """A ZooKeeper call did not complete within its bound (request timeout,
    shutdown deadline or cancellation)."""


class _BoundedResult(AsyncResult):
    def get(self, block=True, timeout=None):
        if not block or self.ready():
            return super().get(block=False)
        handler = self._handler
        start = time.monotonic()
        bound = start + (handler.request_timeout_s if timeout is None
                         else min(timeout, handler.request_timeout_s))
        while True:
            if self.ready():
                return super().get(block=False)
            now = time.monotonic()
            why = handler.stop_reason(now)
            if why is None and now >= bound:
                why = f"no answer within {now - start:.1f} s"
            if why is not None:
                raise ZooKeeperWaitTimeout(f"ZooKeeper request abandoned: {why}")
            self.wait(min(_SLICE_S, max(0.001, bound - now)))


class BoundedHandler(SequentialThreadingHandler):
    """kazoo's threading handler with bounded waits (see the module docstring)."""

    name = "bounded_threading"
    timeout_exception = ZooKeeperWaitTimeout

    def __init__(self, request_timeout_s: float, cancel: threading.Event | None = None):
        super().__init__()
        self.request_timeout_s = float(request_timeout_s)
        self.deadline: float | None = None
        self.cancel = cancel

    def stop_reason(self, now: float | None = None) -> str | None:
        """Why waits must end now (None: they need not)."""
        if self.cancel is not None and self.cancel.is_set():
            return "cancelled"
        if self.deadline is not None and (now or time.monotonic()) >= self.deadline:
            return "shutting down"
        return None

    def async_result(self):
        return _BoundedResult(self)


def bounded_client(hosts: str, session_timeout_s: float,
                   cancel: threading.Event | None = None) -> KazooClient:
    """A KazooClient (not started) with a ``BoundedHandler``: reconnects
    forever (the member outlives an outage), each call bounded."""
    return KazooClient(hosts=hosts, timeout=session_timeout_s,
                       handler=BoundedHandler(session_timeout_s, cancel),
                       connection_retry=KazooRetry(max_tries=-1, max_delay=1.0),
                       command_retry=KazooRetry(max_tries=3, max_delay=1.0))


def stop_client(zk: KazooClient, timeout_s: float) -> bool:
    """``zk.stop(); zk.close()`` within ``timeout_s`` (on a daemon thread;
    left to finish on its own after that). True when it finished. A session
    that could not be closed (ZooKeeper unreachable) expires on its own
    after the session timeout, taking its ephemeral znodes with it."""
    def _stop():
        try:
            zk.stop()
            zk.close()
        except Exception as e:  # noqa: BLE001 - best effort
            log.debug("closing the ZooKeeper client: %s", e)

    t = threading.Thread(target=_stop, name="zookeeper-close", daemon=True)
    t.start()
    t.join(max(0.0, timeout_s))
    return not t.is_alive()
