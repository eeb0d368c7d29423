"""Running `python -m headrace.cli ...` as a subprocess for the CLI tests."""
from __future__ import annotations

import os
import subprocess
import sys


def headrace(*args: str, brokers: str | None = None, input: bytes | str | None = None,
             timeout: float = 60, env: dict | None = None) -> subprocess.CompletedProcess:
    """Runs the command line; output as text. ``brokers`` goes in --brokers."""
    full_env = {k: v for k, v in os.environ.items() if k != "HEADRACE_BROKERS"}
    full_env.update(env or {})
    argv = [sys.executable, "-m", "headrace.cli", *args]
    if brokers is not None:
        argv += ["--brokers", brokers]
    if isinstance(input, str):
        input = input.encode()
    r = subprocess.run(argv, capture_output=True, timeout=timeout, env=full_env,
                       input=input if input is not None else b"")
    return subprocess.CompletedProcess(r.args, r.returncode, r.stdout.decode(errors="replace"),
                                       r.stderr.decode(errors="replace"))


def ok(r: subprocess.CompletedProcess) -> subprocess.CompletedProcess:
    assert r.returncode == 0, f"exit {r.returncode}\nstdout:\n{r.stdout}\nstderr:\n{r.stderr}"
    assert "Traceback" not in r.stderr, r.stderr
    return r


def one_error_line(r: subprocess.CompletedProcess, *words: str) -> str:
    """Non-zero exit, no traceback, exactly one `headrace: error:` line naming `words`."""
    assert r.returncode != 0, r
    assert "Traceback" not in r.stderr, r.stderr
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, f"expected one error line, got:\n{r.stderr}"
    assert lines[0].startswith("headrace: error:"), lines[0]
    for w in words:
        assert w.lower() in lines[0].lower(), f"{w!r} not in {lines[0]!r}"
    return lines[0]
