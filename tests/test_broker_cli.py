"""The `headrace broker` command line: help, bad settings and a busy port give
one clear line on stderr, a non-zero exit and no traceback; SIGTERM and
SIGINT stop it cleanly with exit 0."""
from __future__ import annotations

import signal
import socket
import re
import subprocess
import sys

import pytest

from broker_process import BrokerProcess

pytestmark = pytest.mark.timeout(120)


def _headrace(*args, timeout=60):
    return subprocess.run([sys.executable, "-m", "headrace.cli", *args], capture_output=True,
                          text=True, timeout=timeout, stdin=subprocess.DEVNULL)


def _assert_one_clear_error_line(r, *words):
    assert r.returncode != 0, r
    assert "Traceback" not in r.stderr, r.stderr
    lines = [ln for ln in r.stderr.splitlines() if ln.strip() and "INFO" not in ln]
    assert len(lines) == 1, f"expected one error line, got:\n{r.stderr}"
    # The broker's error line carries its log timestamp and level.
    assert re.match(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z ERROR headrace: error: ",
                    lines[0]), lines[0]
    for w in words:
        assert w.lower() in lines[0].lower(), f"{w!r} not in {lines[0]!r}"
    return lines[0]


def test_broker_help():
    r = _headrace("broker", "--help")
    assert r.returncode == 0, r.stderr
    for flag in ("--data-dir", "--listen", "--set", "--config"):
        assert flag in r.stdout
    assert r.stderr == ""


def test_console_script_help():
    r = subprocess.run(["headrace", "broker", "--help"], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0 and "--data-dir" in r.stdout, r.stderr


def test_invalid_setting_value_is_one_clear_line(tmp_path):
    r = _headrace("broker", "--data-dir", str(tmp_path / "d"), "--listen", "127.0.0.1:0",
                  "--set", "log.retention.ms=abc")
    _assert_one_clear_error_line(r, "log.retention.ms")


def test_set_without_equals_is_one_clear_line(tmp_path):
    r = _headrace("broker", "--data-dir", str(tmp_path / "d"), "--listen", "127.0.0.1:0",
                  "--set", "log.retention.ms")
    _assert_one_clear_error_line(r, "KEY=VALUE")


def test_port_in_use_is_a_clear_error(tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(1)
        port = s.getsockname()[1]
        r = _headrace("broker", "--data-dir", str(tmp_path / "d"), "--listen",
                      f"127.0.0.1:{port}")
    line = _assert_one_clear_error_line(r, str(port))
    assert "in use" in line.lower() or "address" in line.lower(), line


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_signal_stops_broker_with_exit_0(tmp_path, sig):
    b = BrokerProcess(tmp_path / "d").start()
    assert b.backend in ("epoll", "io_uring")
    assert b.listen_line.endswith(f"data {tmp_path / 'd'}, {b.backend})")
    b.assert_alive()
    b.proc.send_signal(sig)
    b.stop()  # waits and asserts exit code 0
    assert "Traceback" not in b.stderr
