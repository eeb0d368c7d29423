"""The `listeners` setting of a real `headrace broker` process: a listener
name the security protocol map does not know, a TLS listener without its
keys, and any listener that cannot be served (host, port in use, duplicate
port or name) stops the broker with one error line naming the listener;
several listeners are all served. TLS itself: tests/test_security_tls.py.
"""
from __future__ import annotations

import os
import socket
import subprocess
import sys

import pytest

from broker_wire import API_API_VERSIONS, Connection


def run_broker(tmp_path, listeners: str, *extra: str) -> subprocess.CompletedProcess:
    """Runs `headrace broker` expecting it to fail at start (60 s timeout)."""
    cmd = [sys.executable, "-m", "headrace.cli", "broker", "--data-dir", str(tmp_path / "data"),
           "--listen", listeners, *extra]
    # The HTTP listener on a free port: other brokers on this host may hold 9644.
    env = dict(os.environ, HEADRACE_HEADRACE_HTTP_LISTEN="127.0.0.1:0")
    return subprocess.run(cmd, capture_output=True, text=True, timeout=60, env=env)


def one_error_line(result: subprocess.CompletedProcess, *fragments: str) -> str:
    assert result.returncode == 2, (result.returncode, result.stdout, result.stderr)
    assert "listening on" not in result.stdout
    # One error line; the start-up may have logged INFO lines before it.
    lines = result.stderr.strip().splitlines()
    errors = [line for line in lines if " INFO " not in line]
    assert len(errors) == 1 and " ERROR headrace: error: " in errors[0], result.stderr
    for f in fragments:
        assert f in errors[0], errors[0]
    return errors[0]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("scheme", ["SSL", "SASL_SSL"])
def test_tls_listener_without_a_keystore_is_refused_not_served_in_plaintext(tmp_path, scheme):
    one_error_line(run_broker(tmp_path, f"{scheme}://127.0.0.1:0"),
                   f"listener {scheme}: a TLS listener needs ssl.keystore.location")


def test_unknown_listener_name_is_refused(tmp_path):
    one_error_line(run_broker(tmp_path, "PLAINTEXT://127.0.0.1:0,FOO://127.0.0.1:0"),
                   "listeners: no security protocol for listener FOO in "
                   "listener.security.protocol.map")


def test_unknown_security_protocol_is_refused(tmp_path):
    r = run_broker(tmp_path, "FOO://127.0.0.1:0", "--set", "listener.security.protocol.map=FOO:TLS")
    one_error_line(r, "listener.security.protocol.map: FOO:TLS: unknown security protocol TLS")


def test_duplicate_listener_name_is_refused(tmp_path):
    one_error_line(run_broker(tmp_path, "PLAINTEXT://127.0.0.1:0,PLAINTEXT://localhost:0"),
                   "listener name PLAINTEXT is used twice")


def test_duplicate_port_is_refused(tmp_path):
    p = free_port()
    one_error_line(run_broker(tmp_path, f"PLAINTEXT://127.0.0.1:{p},PLAINTEXT://localhost:{p}"),
                   f"PLAINTEXT://localhost:{p}: port {p} is also used by PLAINTEXT://127.0.0.1:{p}")


def test_port_in_use_names_the_listener(tmp_path, broker):
    taken = f"INTERNAL://127.0.0.1:{broker.port}"
    one_error_line(run_broker(tmp_path, f"PLAINTEXT://127.0.0.1:0,{taken}", "--set",
                              "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,"
                              "INTERNAL:PLAINTEXT"),
                   f"listener {taken}:", "in use")


def test_unresolvable_host_names_the_listener(tmp_path):
    one_error_line(run_broker(tmp_path, "PLAINTEXT://no-such-host.invalid:0"),
                   "listener PLAINTEXT://no-such-host.invalid:0:")


def test_several_plaintext_listeners_are_all_served(broker_factory):
    from confluent_kafka import Producer

    p1, p2 = free_port(), free_port()
    b = broker_factory(None, "--set",
                       "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,INTERNAL:PLAINTEXT",
                       listen=f"PLAINTEXT://127.0.0.1:{p1}, INTERNAL://127.0.0.1:{p2}")
    assert b.port == p1  # the first listener is the advertised one
    for port in (p1, p2):
        with Connection(("127.0.0.1", port)) as c:
            cid = c.send_request(API_API_VERSIONS, 0)
            assert c.recv_response()[0] == cid
    # A real client bootstrapping through the second listener produces.
    delivered = []
    prod = Producer({"bootstrap.servers": f"127.0.0.1:{p2}"})
    prod.produce("two-listeners", b"v", on_delivery=lambda err, msg: delivered.append(err))
    assert prod.flush(30) == 0
    assert delivered == [None]
