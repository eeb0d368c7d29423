"""Ctrl-C for the client commands: always answered, never a traceback.

librdkafka calls (metadata, admin futures, flush, a blocking read of stdin)
keep the main thread in C where Python's own SIGINT handler cannot run. So
:func:`install` blocks SIGINT in every thread and a watcher thread waits for
it with ``sigwait``: the first SIGINT sets :func:`requested` so that loops
that check it stop cleanly (a consumer closes and commits, a producer
flushes what it sent) and ``main`` returns 130; if the main thread has not
finished ``GRACE_S`` later, or at a second SIGINT, the process exits 130 at
once (``os._exit``; output still in Python buffers is lost).

REQUIRES: :func:`install` is called before any other thread is started
(threads inherit the signal mask) and only by commands that start no child
processes (children would inherit the blocked mask too).
"""
from __future__ import annotations

import os
import signal
import sys
import threading

EXIT_CODE = 130
GRACE_S = 1.0

_requested = threading.Event()


def install() -> None:
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    threading.Thread(target=_watch, name="headrace-sigint", daemon=True).start()


def requested() -> bool:
    """True once SIGINT arrived; loops stop at their next check."""
    return _requested.is_set()


def _watch() -> None:
    signal.sigwait({signal.SIGINT})
    _requested.set()
    signal.sigtimedwait({signal.SIGINT}, GRACE_S)
    try:
        sys.stderr.flush()
    finally:
        os._exit(EXIT_CODE)
