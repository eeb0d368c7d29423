"""headrace.socket.local.congestion.control: the broker's side of a
connection from this host (loopback, or to the broker's own address) runs
the configured TCP congestion control (default reno); a connection from
another host, here another network namespace over a veth, keeps the
system's default; empty keeps the default for all (docs/network.md,
"Connections from this host"). Read from the kernel with `ss -tin`."""
from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time

import pytest

from cluster_faults import Network

pytestmark = pytest.mark.timeout(120)

KEY = "headrace.socket.local.congestion.control"


def _sysctl(name: str) -> str:
    with open(f"/proc/sys/net/ipv4/{name}") as f:
        return f.read().strip()


def _system_default() -> str:
    return _sysctl("tcp_congestion_control")


def _broker_side_algorithms(port: int) -> list[str]:
    """The congestion control of each established socket whose local port is
    `port` (the broker's accepted sockets), as `ss -tin` reports it."""
    out = subprocess.run(["ss", "-Htin", "state", "established", f"( sport = :{port} )"],
                         capture_output=True, text=True, check=True).stdout
    # Each socket: an address line, then an indented info line that begins
    # with the algorithm's name.
    return [ln.split()[0] for ln in out.splitlines() if ln.startswith(("\t", " ")) and ln.strip()]


def _wait_for(port: int, want: list[str]) -> list[str]:
    """The broker side's algorithms once they equal `want` (a connection is
    established on the broker's side a moment after connect() returns, and
    one closed by its peer leaves the list a moment after), or as they are
    after 10 s."""
    deadline = time.monotonic() + 10
    while True:
        found = _broker_side_algorithms(port)
        if found == want or time.monotonic() > deadline:
            return found
        time.sleep(0.05)


def _connect_and_check(host: str, port: int, want: str) -> None:
    with socket.create_connection((host, port), timeout=10):
        assert _wait_for(port, [want]) == [want]


def test_loopback_connections_get_reno_by_default(broker):
    _connect_and_check("127.0.0.1", broker.port, "reno")


def test_empty_keeps_the_systems_default(broker_factory):
    b = broker_factory(None, "--set", f"{KEY}=")
    _connect_and_check("127.0.0.1", b.port, _system_default())


def test_another_algorithm_is_applied(broker_factory):
    avail = _sysctl("tcp_available_congestion_control").split()
    other = next((a for a in avail if a not in ("reno", _system_default())), None)
    if other is None or os.geteuid() != 0:
        pytest.skip("needs a third available algorithm and root to set it")
    b = broker_factory(None, "--set", f"{KEY}={other}")
    _connect_and_check("127.0.0.1", b.port, other)


@pytest.mark.skipif(os.geteuid() != 0, reason="network namespaces need root")
def test_a_connection_from_another_host_keeps_the_default_and_one_to_its_own_address_does_not(
        broker_factory):
    net = Network(1)
    net.up()
    try:
        b = broker_factory(None, listen=f"{net.gateway}:0")
        # From the namespace (another host as far as TCP can tell).
        probe = ("import socket,sys,time; s=socket.create_connection((sys.argv[1], "
                 "int(sys.argv[2])), timeout=10); print('up', flush=True); time.sleep(30)")
        client = subprocess.Popen(
            ["ip", "netns", "exec", net.ns_names[1], sys.executable, "-c", probe,
             net.gateway, str(b.port)], stdout=subprocess.PIPE, text=True)
        try:
            assert client.stdout.readline().strip() == "up"
            assert _wait_for(b.port, [_system_default()]) == [_system_default()]
        finally:
            client.kill()
            client.wait()
        # From this namespace to the bridge address: the broker's own address.
        _connect_and_check(net.gateway, b.port, "reno")
        b.stop()
    finally:
        net.down()


def test_an_algorithm_the_kernel_refuses_stops_the_start_with_one_line(tmp_path):
    r = subprocess.run([sys.executable, "-m", "headrace.cli", "broker", "--data-dir",
                        str(tmp_path / "d"), "--listen", "127.0.0.1:0", "--set",
                        f"{KEY}=no-such-cc"], capture_output=True, text=True, timeout=60,
                       stdin=subprocess.DEVNULL)
    assert r.returncode != 0, r
    assert "Traceback" not in r.stderr, r.stderr
    errors = [ln for ln in r.stderr.splitlines() if " ERROR " in ln]
    assert len(errors) == 1, r.stderr
    assert re.search(r"no-such-cc.*tcp_allowed_congestion_control", errors[0]), errors[0]
