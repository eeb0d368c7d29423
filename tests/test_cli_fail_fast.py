"""The command line without a broker: refused connections and unresolvable
hosts fail within 2 s naming the address, Ctrl-C while librdkafka waits for
a silent peer exits 130 at once, --version / python -m headrace, the
completion scripts, and that starting the CLI imports no Kafka client."""
from __future__ import annotations

import signal
import socket
import subprocess
import sys
import time

import pytest

from cli_run import headrace, ok, one_error_line

pytestmark = pytest.mark.timeout(120)

CLIENT_COMMANDS = [("topic", "list"), ("topic", "describe", "t"), ("group", "list"),
                   ("consume", "t"), ("produce", "t"), ("cluster", "info"),
                   ("txn", "list"), ("cluster", "log-dirs")]


@pytest.mark.parametrize("address,why", [("127.0.0.1:1", "connection refused"),
                                         ("no-such-host.invalid:9092", "cannot resolve host")])
def test_unreachable_bootstrap_fails_within_2s_naming_it(address, why):
    for cmd in CLIENT_COMMANDS:
        t0 = time.monotonic()
        r = headrace(*cmd, input="x\n", brokers=address)
        took = time.monotonic() - t0
        assert r.returncode == 2, (cmd, r.stderr)
        one_error_line(r, address, why, "unreachable")
        assert took < 2.0, (cmd, took)


def test_one_reachable_address_is_enough():
    """The probe passes when any bootstrap address answers; the command then
    proceeds (here: to a peer that never speaks Kafka, so it times out)."""
    with socket.create_server(("127.0.0.1", 0)) as silent:
        port = silent.getsockname()[1]
        r = headrace("topic", "list", "--timeout", "1",
                     brokers=f"127.0.0.1:1,127.0.0.1:{port}")
    line = one_error_line(r)
    assert "127.0.0.1:1" not in line  # not the refused one: the silent one timed out


def test_ctrl_c_while_waiting_for_a_silent_broker():
    """librdkafka waits in C for an answer that never comes; SIGINT still
    ends the command at once with 130 and no traceback."""
    with socket.create_server(("127.0.0.1", 0)) as silent:
        port = silent.getsockname()[1]
        for cmd in (["topic", "list"], ["consume", "t"]):
            p = subprocess.Popen([sys.executable, "-m", "headrace.cli", *cmd, "--brokers",
                                  f"127.0.0.1:{port}", "--timeout", "30"],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                 stdin=subprocess.DEVNULL)
            time.sleep(1.5)
            assert p.poll() is None, p.communicate()
            t0 = time.monotonic()
            p.send_signal(signal.SIGINT)
            _, err = p.communicate(timeout=30)
            assert p.returncode == 130, err
            assert time.monotonic() - t0 < 2.0
            assert b"Traceback" not in err


def test_version_and_python_dash_m():
    from headrace import __version__

    assert ok(headrace("--version")).stdout == f"headrace {__version__}\n"
    r = subprocess.run([sys.executable, "-m", "headrace", "--version"], capture_output=True,
                       text=True, timeout=60)
    assert (r.returncode, r.stdout) == (0, f"headrace {__version__}\n")


def _bash_complete(script: str, words: list[str]) -> list[str]:
    """COMPREPLY of the generated bash completion for `words` (the last one
    is being completed)."""
    cmd = (f'source /dev/stdin; COMP_WORDS=({" ".join(repr(w) for w in words)}); '
           f'COMP_CWORD={len(words) - 1}; _headrace; printf "%s\\n" "${{COMPREPLY[@]}}"')
    r = subprocess.run(["bash", "-c", cmd], input=script, capture_output=True, text=True,
                       timeout=30)
    assert r.returncode == 0, r.stderr
    return sorted(r.stdout.split())


def test_bash_completion_script(tmp_path, monkeypatch):
    script = ok(headrace("completion", "bash")).stdout
    assert _bash_complete(script, ["headrace", "to"]) == ["topic"]
    assert _bash_complete(script, ["headrace", "topic", "de"]) == \
        ["delete", "delete-records", "describe"]
    assert _bash_complete(script, ["headrace", "consume", "t", "--encoding", ""]) == \
        ["base64", "hex", "text"]
    assert "--topic-regex" in _bash_complete(script, ["headrace", "consume", "--to"])
    assert _bash_complete(script, ["headrace", "cluster", "info", "--format", "j"]) == ["json"]
    (tmp_path / "values.bin").write_bytes(b"")
    monkeypatch.chdir(tmp_path)
    assert _bash_complete(script, ["headrace", "produce", "t", "--value-file", "val"]) == \
        ["values.bin"]


def test_zsh_completion_script():
    script = ok(headrace("completion", "zsh")).stdout
    assert script.startswith("#compdef headrace\n")
    assert "[headrace\\ topic]" in script or "['headrace topic']" in script
    if subprocess.run(["sh", "-c", "command -v zsh"], capture_output=True).returncode == 0:
        r = subprocess.run(["zsh", "-n"], input=script, capture_output=True, text=True)
        assert r.returncode == 0, r.stderr


def test_starting_the_cli_imports_no_kafka_client():
    code = ("import sys; from headrace.cli import build_parser; build_parser(); "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in "
            "('confluent_kafka', 'kafka', 'kazoo')))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=60)
    assert r.stdout.strip() == "[]", r.stderr
