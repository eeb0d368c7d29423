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


class _Lines:
    """A foreground command's stdout lines, read on a thread."""

    def __init__(self, proc):
        import threading

        self.lines: list[str] = []
        self._proc = proc
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self._proc.stdout:
            self.lines.append(line.rstrip("\n"))

    def wait(self, needle: str, timeout: float = 60.0) -> str:
        wait_for(lambda: any(needle in line for line in self.lines), timeout,
                 what=f"{needle!r} in {self.lines}")
        return next(line for line in self.lines if needle in line)


def _timed(*args):
    import time

    began = time.monotonic()
    r = _cli(*args)
    return r, time.monotonic() - began


def _gone(pid: int) -> bool:
    return not os.path.exists(f"/proc/{pid}") or \
        open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0] == "Z"


def test_cluster_up_survives_a_dead_broker_restart_stop_and_degraded_info(tmp_path):
    """Issue 33: a foreground `cluster up` keeps running when a broker dies
    and says so; `cluster restart-broker` / `stop-broker` act on one broker;
    each broker's console address is printed and in cluster.json; `cluster
    info` names the dead broker, its offline and under-replicated partitions
    in < 5 s, and answers from the brokers with ZooKeeper paused."""
    import urllib.request

    from confluent_kafka.admin import AdminClient, NewTopic

    data = tmp_path / "c"
    proc = subprocess.Popen([sys.executable, "-m", "headrace.cli", "cluster", "up", "--brokers",
                             "3", "--data-dir", str(data), "--base-port", "0",
                             "--zookeeper-port", "0",
                             "--set", "zookeeper.session.timeout.ms=6000"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=dict(os.environ, PYTHONUNBUFFERED="1"))
    out = _Lines(proc)
    state = None
    try:
        out.wait("cluster up: 3 brokers")
        state = json.loads((data / "cluster.json").read_text())
        for i in ("1", "2", "3"):
            http = state["brokers"][i]["http"]
            assert http and f"console http://{http}/" in out.wait(f"broker {i}: "), out.lines
            with urllib.request.urlopen(f"http://{http}/healthz", timeout=5) as r:
                assert r.status == 200
        bootstrap = ",".join(b["address"] for b in state["brokers"].values())
        admin = AdminClient({"bootstrap.servers": bootstrap})
        admin.create_topics([NewTopic("deg", 3, 3)])["deg"].result(30)
        wait_for(lambda: "0 offline" in _cli("cluster", "info", "--data-dir", str(data)).stdout
                 and "deg" not in _cli("cluster", "info", "--data-dir", str(data)).stdout, 30,
                 what="every partition of deg led")

        os.kill(state["brokers"]["2"]["pid"], signal.SIGKILL)
        out.wait("broker 2 exited (killed by signal 9); the other brokers keep running")
        assert proc.poll() is None
        for args in (("--data-dir", str(data)), ("--brokers", bootstrap)):
            r, took = _timed("cluster", "info", *args)
            assert r.returncode == 0 and took < 5, (took, r.stderr)
            assert "BROKER 2 DOWN" in r.stdout and "2 (1 down: 2)" not in r.stdout, r.stdout
            assert "brokers      3 (1 down: 2)" in r.stdout, r.stdout
            assert "offline          deg-" in r.stdout or \
                "under-replicated deg-" in r.stdout, r.stdout
            j = json.loads(_cli("cluster", "info", *args, "--format", "json").stdout)
            assert [b["id"] for b in j["down_brokers"]] == [2], j
            assert j["offline_partitions"] + j["under_replicated_partitions"] == 3, j

        zk_pid = state["zookeeper"]["pid"]
        os.kill(zk_pid, signal.SIGSTOP)
        try:
            r, took = _timed("cluster", "info", "--data-dir", str(data))
            assert r.returncode == 0 and took < 5, (took, r.stderr)
            assert "ZOOKEEPER DOWN" in r.stdout and "BROKER 2 DOWN" in r.stdout, r.stdout
            assert "the brokers were asked instead" in r.stdout, r.stdout
        finally:
            os.kill(zk_pid, signal.SIGCONT)

        r = _cli("cluster", "restart-broker", "2", "--data-dir", str(data))
        assert r.returncode == 0, r.stderr
        assert "broker 2 started again" in r.stdout and "joined" in r.stdout, r.stdout
        out.wait("broker 2 is running again")
        r, took = _timed("cluster", "stop-broker", "3", "--data-dir", str(data))
        assert r.returncode == 0 and "broker 3 stopped in" in r.stdout, r.stderr
        assert took < 10, took
        out.wait("broker 3 exited (exit code 0)")
        assert proc.poll() is None
        state = json.loads((data / "cluster.json").read_text())
        proc.send_signal(signal.SIGINT)
        proc.wait(60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
    assert proc.returncode == 0, proc.stderr.read()
    assert any("cluster stopped" in line for line in out.lines), out.lines
    for b in state["brokers"].values():  # the restarted broker 2 too
        wait_for(lambda: _gone(b["pid"]), 10, what=f"broker pid {b['pid']} gone")
