"""A real ZooKeeper (Debian's package, started by
headrace.cluster.zookeeper_server) for the cluster tests.

Fixtures (imported into conftest.py):
- `zookeeper`: one ZooKeeperServer per test module. Missing Java or
  ZooKeeper is an error, not a skip: scripts/setup.sh installs both.
- `zk_factory`: `zk_factory(timeout_s=...)` -> a started KazooClient chrooted
  to this test's own namespace (so tests of one module do not see each
  other's znodes); every client is closed at teardown.
"""
from __future__ import annotations

import itertools
import time

import pytest

_counter = itertools.count(1)


@pytest.fixture(scope="module")
def zookeeper(tmp_path_factory):
    from headrace.cluster.zookeeper_server import ZooKeeperServer

    server = ZooKeeperServer(tmp_path_factory.mktemp("zookeeper"))
    server.start()
    yield server
    server.stop()


@pytest.fixture
def zk_chroot(zookeeper):
    """This test's chroot in the module's ZooKeeper ("/t7")."""
    from kazoo.client import KazooClient

    chroot = f"/t{next(_counter)}"
    root = KazooClient(hosts=zookeeper.connect_string)
    root.start(10)
    root.ensure_path(chroot)
    root.stop()
    root.close()
    return chroot


@pytest.fixture
def zk_factory(zookeeper, zk_chroot):
    from kazoo.client import KazooClient

    clients = []

    def _make(timeout_s: float = 2.0) -> KazooClient:
        c = KazooClient(hosts=zookeeper.connect_string + zk_chroot, timeout=timeout_s)
        c.start(10)
        clients.append(c)
        return c

    yield _make
    for c in clients:
        try:
            c.stop()
            c.close()
        except Exception:  # noqa: BLE001 - already closed by the test
            pass


def wait_for(predicate, timeout: float = 10.0, interval: float = 0.02, what: str = ""):
    """Polls ``predicate()`` until truthy; returns its value or fails."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout}s waiting for {what or predicate}")
        time.sleep(interval)
