"""`headrace cluster up` in the foreground (Ctrl-C stops everything),
`cluster info`, and `headrace broker --zookeeper` failing cleanly."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

from zookeeper_fixture import wait_for


def _cli(*args, **kw):
    return subprocess.run([sys.executable, "-m", "headrace.cli", *args], capture_output=True,
                          text=True, timeout=120, **kw)


def test_cluster_up_foreground_info_and_ctrl_c(tmp_path):
    data = tmp_path / "c"
    proc = subprocess.Popen([sys.executable, "-m", "headrace.cli", "cluster", "up", "--brokers",
                             "2", "--data-dir", str(data), "--base-port", "0",
                             "--zookeeper-port", "0"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            env=dict(os.environ, PYTHONUNBUFFERED="1"))
    try:
        line = proc.stdout.readline()
        assert "Z INFO headrace: cluster up: 2 brokers" in line, line + proc.stderr.read()
        state = json.loads((data / "cluster.json").read_text())
        assert sorted(state["brokers"]) == ["1", "2"]
        info = _cli("cluster", "info", "--data-dir", str(data))
        assert info.returncode == 0, info.stderr
        assert "brokers      2" in info.stdout and "controller   " in info.stdout
        bootstrap = ",".join(b["address"] for b in state["brokers"].values())
        via_md = _cli("cluster", "info", "--brokers", bootstrap)
        assert via_md.returncode == 0, via_md.stderr
        assert via_md.stdout.splitlines()[:3] == info.stdout.splitlines()[:1] + [
            info.stdout.splitlines()[1].split(" (epoch")[0], "brokers      2"], via_md.stdout
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    assert "headrace: cluster stopped" in out
    assert not (data / "cluster.json").exists()
    for pid in [b["pid"] for b in state["brokers"].values()] + [state["zookeeper"]["pid"]]:
        wait_for(lambda: not os.path.exists(f"/proc/{pid}") or
                 open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0] == "Z", 10,
                 what=f"process {pid} gone")
    logs = (data / "broker-1.log").read_text()
    assert "joined cluster" in logs and "headrace: stopped" in logs


def test_broker_without_zookeeper_fails_in_one_line(tmp_path):
    r = _cli("broker", "--data-dir", str(tmp_path / "b"), "--listen", "127.0.0.1:0",
             "--node-id", "1", "--zookeeper", "127.0.0.1:1",
             "--set", "zookeeper.connection.timeout.ms=1000")
    assert r.returncode == 2, r.stderr
    assert "headrace: error: cannot connect to ZooKeeper at 127.0.0.1:1 within 1000 ms" \
        in r.stderr
    assert "Traceback" not in r.stderr
