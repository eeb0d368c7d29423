"""Fail fast on a bootstrap list no broker can be reached at.

librdkafka retries refused connections until its timeout, so a typo in
``--brokers`` or a stopped broker used to cost the whole ``--timeout``. Before a
client is created, :func:`check_bootstrap` opens (and closes) one TCP
connection to each bootstrap address in parallel: as soon as one connects the
command goes on; when every address is refused or cannot be resolved, it
raises :class:`BootstrapError` naming each address and why, typically within
milliseconds. An address that neither connects nor refuses (a dropped SYN)
is waited for up to the command's timeout.
"""
from __future__ import annotations

import socket
import threading
import time

from headrace.errors import HeadraceError


class BootstrapError(HeadraceError):
    """No bootstrap address accepted a TCP connection."""


def split_bootstrap(brokers: str) -> list[tuple[str, int]]:
    """"h1:9092,PLAINTEXT://[::1]:9093" -> [("h1", 9092), ("::1", 9093)]."""
    out = []
    for item in brokers.split(","):
        item = item.strip()
        if not item:
            continue
        if "://" in item:
            item = item.split("://", 1)[1]
        host, sep, port = item.rpartition(":")
        if not sep or not port.isdigit():
            raise BootstrapError(f"bad bootstrap address {item!r} (expected HOST:PORT)")
        out.append((host.strip("[]") or "127.0.0.1", int(port)))
    if not out:
        raise BootstrapError("no bootstrap address given (--brokers HOST:PORT)")
    return out


def _why(e: BaseException) -> str:
    if isinstance(e, socket.gaierror):
        return "cannot resolve host"
    if isinstance(e, ConnectionRefusedError):
        return "connection refused"
    if isinstance(e, TimeoutError):
        return "no answer"
    return getattr(e, "strerror", None) or str(e) or type(e).__name__


def check_bootstrap(brokers: str, timeout: float) -> None:
    """Returns once one address of ``brokers`` accepts a TCP connection;
    raises BootstrapError when all of them failed or ``timeout`` passed."""
    addresses = split_bootstrap(brokers)
    done = threading.Condition()
    failures: dict[str, str] = {}
    connected = []

    def attempt(host: str, port: int) -> None:
        name = f"{host}:{port}"
        try:
            socket.create_connection((host, port), timeout=timeout).close()
            result = None
        except OSError as e:
            result = _why(e)
        with done:
            if result is None:
                connected.append(name)
            else:
                failures[name] = result
            done.notify()

    for host, port in addresses:
        threading.Thread(target=attempt, args=(host, port), daemon=True).start()
    deadline = time.monotonic() + timeout
    with done:
        while not connected and len(failures) < len(addresses):
            left = deadline - time.monotonic()
            if left <= 0:
                break
            done.wait(left)
        if connected:
            return
        for host, port in addresses:
            failures.setdefault(f"{host}:{port}", f"no answer within {timeout:g}s")
    detail = ", ".join(f"{name} ({why})" for name, why in failures.items())
    raise BootstrapError(f"broker unreachable: {detail}")
