"""SIGTERM/SIGINT as a threading.Event, for a process that serves until told
to stop (``headrace broker``, a foreground ``headrace cluster up``).

A Python signal handler runs in the main thread between two bytecodes,
wherever that thread is, so it must not take a lock: ``Event.set()`` takes
the Event's own lock, which the main thread holds for a few bytecodes every
time ``Event.wait(timeout)`` returns. A signal landing there deadlocks the
main thread on itself and the process ignores every later SIGTERM (a broker
did, once in a full test run). So the handler here does nothing in Python:
the interpreter's C-level handler writes the signal's number to a wakeup
pipe (async-signal-safe), and a thread reading that pipe sets the Event.
No signal mask changes, so child processes start with the usual mask.
"""
from __future__ import annotations

import os
import signal
import threading

STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)
_STOP_NUMBERS = frozenset(int(s) for s in STOP_SIGNALS)  # as the wakeup pipe carries them


def stop_event_on_signals() -> threading.Event:
    """Installs the handlers (REQUIRES: called in the main thread, once per
    process) and returns the Event that the first SIGTERM or SIGINT sets."""
    stop = threading.Event()
    r, w = os.pipe()  # non-inheritable (PEP 446)
    os.set_blocking(w, False)
    for sig in STOP_SIGNALS:
        signal.signal(sig, _noop)
    signal.set_wakeup_fd(w, warn_on_full_buffer=False)

    def _relay() -> None:
        while True:
            got = os.read(r, 64)
            if not got or _STOP_NUMBERS.intersection(got):
                stop.set()
                return

    threading.Thread(target=_relay, name="hr-stop-signals", daemon=True).start()
    return stop


def _noop(signum, frame) -> None:
    """The Python-level part of the handler: nothing (see the module doc)."""
