"""The self-contained wheel (docs/operations.md, "Packaging"): `pip wheel .`
builds it without the C++ tests, `auditwheel repair` vendors the shared
libraries it links (liburing, the codecs, ...), and the repaired wheel
installed in a fresh venv (no system site packages, no apt packages beyond
Python) runs `headrace broker` that a client produces to and consumes from.
Slow (a full C++ build): run with -m slow."""
from __future__ import annotations

import os
import re
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest

from broker_process import BrokerProcess

pytestmark = [pytest.mark.slow, pytest.mark.timeout(3600)]

ROOT = Path(__file__).resolve().parent.parent


def _run(cmd: list[str], **kw) -> subprocess.CompletedProcess:
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    assert r.returncode == 0, f"{' '.join(map(str, cmd))}\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}"
    return r


class _VenvBroker(BrokerProcess):
    """`headrace broker` of another installation (its own python)."""

    def __init__(self, python: Path, *args, **kw):
        super().__init__(*args, **kw)
        self.python = python

    def command(self) -> list[str]:
        return [str(self.python), "-m", "headrace", "broker", "--data-dir", str(self.data_dir),
                "--listen", self.listen, *self.extra_args]


def test_wheel_is_self_contained_and_runs_a_broker_in_a_fresh_venv(tmp_path):
    dist, repaired = tmp_path / "dist", tmp_path / "repaired"
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}:{os.environ['PATH']}")
    # Its own build directory: build/py belongs to the test build (ctest).
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
          "--config-settings=build-dir=build/wheel", "-w", str(dist), str(ROOT)],
         env=env, cwd=ROOT, timeout=3000)
    [wheel] = dist.glob("headrace-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert not [n for n in names if re.search(r"_test$|gtest|gmock", n)], names
    assert "headrace/kafka39_broker_configs.txt" in names, names
    _run([sys.executable, "-m", "auditwheel", "repair", "-w", str(repaired), str(wheel)],
         env=env, timeout=600)
    [fixed] = repaired.glob("headrace-*.whl")
    assert re.search(r"-(manylinux|musllinux)_\d+_\d+_x86_64", fixed.name), fixed.name
    vendored = [n for n in zipfile.ZipFile(fixed).namelist() if ".libs/" in n]
    assert any("liburing" in n for n in vendored), vendored

    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", str(venv)], timeout=300)
    py = venv / "bin" / "python"
    _run([str(py), "-m", "pip", "install", "-q", str(fixed)], timeout=900)
    version = _run([str(py), "-m", "headrace", "--version"], timeout=60).stdout
    assert version.startswith("headrace "), version
    # Not the source tree's package: the venv's own copy.
    where = _run([str(py), "-c", "import headrace; print(headrace.__file__)"], timeout=60,
                 cwd=tmp_path).stdout.strip()
    assert where.startswith(str(venv)), where

    b = _VenvBroker(py, tmp_path / "data")
    b.start()
    try:
        from confluent_kafka import Consumer, Producer
        p = Producer({"bootstrap.servers": b.bootstrap})
        for i in range(5):
            p.produce("wheel-topic", value=b"w%d" % i)
        assert p.flush(30) == 0
        c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": "wheel",
                      "auto.offset.reset": "earliest"})
        got = []
        c.subscribe(["wheel-topic"])
        deadline = time.monotonic() + 30
        while len(got) < 5 and time.monotonic() < deadline:
            m = c.poll(0.2)
            if m is not None and not m.error():
                got.append(m.value())
        c.close()
        assert got == [b"w%d" % i for i in range(5)]
        # The venv's CLI: its bulk produce path resolves the librdkafka of
        # the venv's confluent_kafka (no apt package involved).
        r = subprocess.run([str(py), "-m", "headrace", "produce", "wheel-cli", "--brokers",
                            b.bootstrap], input=b"a\nb\nc\n", capture_output=True,
                           timeout=120)
        assert r.returncode == 0 and b"produced 3 of 3" in r.stderr, r.stderr
        r = subprocess.run([str(py), "-m", "headrace", "consume", "wheel-cli", "--brokers",
                            b.bootstrap], capture_output=True, timeout=120)
        assert r.returncode == 0 and r.stdout == b"a\nb\nc\n", r
    finally:
        b.stop()
