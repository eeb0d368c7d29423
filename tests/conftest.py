"""Shared pytest fixtures. Keep this file small: helpers live in modules."""
from __future__ import annotations

import pytest


@pytest.fixture
def log_dir(tmp_path):
    """A not-yet-existing partition directory (Kafka style: <topic>-<partition>)."""
    return tmp_path / "events-0"


@pytest.fixture
def open_log():
    """open_log(path, **config) -> headrace.Log, closed at teardown."""
    import headrace

    logs = []

    def _open(path, **config):
        log = headrace.Log(path, **config)
        logs.append(log)
        return log

    yield _open
    for log in logs:
        log.close()


# Real broker processes for the end-to-end tests (tests/broker_process.py).
from broker_process import broker, broker_factory, module_broker  # noqa: E402,F401
# A real ZooKeeper for the cluster tests (tests/zookeeper_fixture.py).
from zookeeper_fixture import zk_chroot, zk_factory, zookeeper  # noqa: E402,F401
