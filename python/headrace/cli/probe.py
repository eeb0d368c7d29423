"""Fail fast on a bootstrap list no broker can be reached at.

librdkafka retries refused connections until its timeout, so a typo in
``--brokers`` or a stopped broker used to cost the whole ``--timeout``. Before a
client is created, :func:`check_bootstrap` opens (and closes) one TCP
connection to each bootstrap address in parallel: as soon as one connects the
command goes on; when every address is refused or cannot be resolved, it
raises :class:`BootstrapError` naming each address and why, typically within
milliseconds. An address that neither connects nor refuses (a dropped SYN)
is waited for up to the command's timeout.

Then :func:`check_handshake` has librdkafka connect with the command's
client settings and ask for metadata: an authentication or TLS failure, or
a broker that closes every connection at once, raises
:class:`HandshakeError` with librdkafka's reason within milliseconds
instead of the command waiting for its timeout.
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


# -- the first handshake, through librdkafka ----------------------------------------
# librdkafka retries a failed authentication or TLS handshake until the
# command's timeout and then reports "broker transport failure". Its own
# error callback and log lines name the cause at once (kcat prints them):
# check_handshake asks for metadata with the command's client settings and
# stops at the first conclusive failure, with librdkafka's words.
DISCONNECTS_CONCLUSIVE = 3  # closed right after connecting, again and again
SLICE_S = 0.05              # metadata is asked for in slices this long


class HandshakeError(HeadraceError):
    """Authentication, TLS or protocol failure on the first connection."""


def _protocol(settings) -> str:
    return str(settings.get("security.protocol", "plaintext")).upper()


def _closed(text: str, settings) -> str:
    """The line for a broker that closes every connection at once: during
    ApiVersions (the first request) a TLS listener reads garbage; after
    it, a SASL listener refuses any request before authentication."""
    proto = _protocol(settings)
    where = _address(text)
    if "APIVERSION_QUERY" in text and proto in ("PLAINTEXT", "SASL_PLAINTEXT"):
        want = "SSL" if proto == "PLAINTEXT" else "SASL_SSL"
        return (f"{where} closed the connection during the first request: a TLS listener? "
                f"(security.protocol is {proto}; try -X security.protocol={want})")
    if proto in ("PLAINTEXT", "SSL"):
        want = "SASL_PLAINTEXT" if proto == "PLAINTEXT" else "SASL_SSL"
        return (f"{where} closed the connection at once: a SASL listener? (security.protocol "
                f"is {proto}; try -X security.protocol={want} with sasl.mechanism, "
                f"sasl.username and sasl.password)")
    return f"{where} closed the connection at once (security.protocol is {proto})"


def _strip_broker(text: str) -> str:
    """"sasl_plaintext://h:1/bootstrap: SASL authentication error: ..." ->
    ("sasl_plaintext://h:1/bootstrap", "SASL authentication error: ...")."""
    head, sep, rest = text.partition(": ")
    return rest if sep and "/" in head else text


def _address(text: str) -> str:
    head = text.partition(": ")[0]
    head = head.split("://", 1)[-1]
    return head.split("/", 1)[0] if "/" in head else "?"


def check_handshake(brokers: str, settings, timeout: float) -> None:
    """Returns once librdkafka, configured with ``settings``, got metadata
    from a bootstrap broker (a few ms on a healthy cluster), or when
    ``timeout`` passed (the command then reports what it sees itself);
    raises HandshakeError at the first authentication or TLS failure, or
    when the broker closes every connection at once (a TLS or SASL listener
    spoken to in PLAINTEXT), naming the broker and librdkafka's reason."""
    import logging

    from confluent_kafka import KafkaError, KafkaException
    from confluent_kafka.admin import AdminClient

    from headrace.admin import client_config

    state = threading.Condition()
    found: list[str] = []
    disconnects: list[str] = []

    def conclude(message: str) -> None:
        with state:
            if not found:
                found.append(message)
            state.notify_all()

    def on_error(err) -> None:
        text = err.str() or err.name()
        code = err.code()
        if code == KafkaError._AUTHENTICATION:
            conclude(f"authentication failed at {_address(text)}: {_strip_broker(text)}")
        elif code == KafkaError._SSL or (code == KafkaError._TRANSPORT and "SSL" in text):
            line = f"TLS handshake with {_address(text)} failed: {_strip_broker(text)}"
            if "closed by peer" in text and "PLAINTEXT" not in text:
                line += (f" (a PLAINTEXT or SASL_PLAINTEXT listener? security.protocol is "
                         f"{_protocol(settings)})")
            conclude(line)

    class Watch(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            msg = record.getMessage()
            if "Disconnected" not in msg and "closed by peer" not in msg:
                return
            text = msg.split("]: ", 1)[-1]
            if "APIVERSION_QUERY" in msg or "in state UP" in msg and "after 0ms" in msg:
                disconnects.append(text)
                if "APIVERSION_QUERY" in msg or len(disconnects) >= DISCONNECTS_CONCLUSIVE:
                    conclude(_closed(text, settings))

    log = logging.getLogger("headrace.cli.handshake")
    log.propagate = False
    log.setLevel(logging.DEBUG)
    watch = Watch()
    log.addHandler(watch)
    try:
        conf = client_config(brokers, **dict(settings))
        conf.update({"logger": log, "error_cb": on_error, "log.connection.close": True})
        try:
            client = AdminClient(conf)
        except (KafkaException, ValueError, TypeError):
            return  # a bad property: the command's own client reports it

        # Metadata from any bootstrap broker, asked in short slices on this
        # thread (not on a helper thread: one left inside librdkafka crashes
        # the interpreter's exit), serving error_cb and the log lines in
        # between. Any broker will do (a dead controller costs nothing).
        deadline = time.monotonic() + timeout
        failure = None
        while True:
            try:
                client.list_topics(timeout=max(0.01, min(SLICE_S, deadline - time.monotonic())))
                failure = None
                break
            except KafkaException as e:
                failure = e
            client.poll(0)
            if found or time.monotonic() >= deadline:
                break
        with state:
            if not found and failure is not None:
                if disconnects:  # no answer and every connection was closed at once
                    found.append(_closed(disconnects[-1], settings))
                else:
                    from headrace.admin import describe_error

                    found.append(describe_error(failure))
        if found:
            raise HandshakeError(found[0])
    finally:
        log.removeHandler(watch)
