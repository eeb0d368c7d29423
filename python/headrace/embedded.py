"""``headrace.EmbeddedBroker``: a real broker inside this process, for tests
and notebooks.

It runs the C++ broker (``headrace._core.Broker``) on its own network threads
(the data path never takes the GIL) with its own temporary data directory and
a free port chosen by the OS. Any Kafka client connects to
``bootstrap_servers``.
"""
from __future__ import annotations

import shutil
import tempfile
from typing import Iterator, Mapping

from headrace.errors import HeadraceError


class EmbeddedBroker:
    """A single-node broker for the lifetime of a ``with`` block.

    ``settings`` are broker config keys (``{"num.partitions": 3}``).
    ``data_dir=None`` makes a temporary directory, removed at ``stop()``;
    a given ``data_dir`` is kept.
    """

    def __init__(self, data_dir: str | None = None, host: str = "127.0.0.1",
                 settings: Mapping[str, object] | None = None):
        self._given_dir = data_dir
        self._host = host
        self._settings = {k: str(v) for k, v in (settings or {}).items()}
        self._broker = None
        self._tmp: str | None = None

    def start(self) -> "EmbeddedBroker":
        """Starts listening; returns self. Raises HeadraceError if it cannot."""
        from headrace._core import Broker

        if self._broker is not None:
            raise HeadraceError("EmbeddedBroker already started")
        data_dir = self._given_dir or tempfile.mkdtemp(prefix="headrace-")
        self._tmp = None if self._given_dir else data_dir
        values = {"log.dirs": data_dir, "listeners": f"{self._host}:0", **self._settings}
        try:
            broker = Broker(values)
            broker.start()
        except BaseException:
            self._remove_tmp()
            raise
        self._broker = broker
        return self

    def stop(self) -> None:
        """Stops cleanly (in-flight requests finish, logs are flushed) and
        removes a temporary data dir. Idempotent."""
        broker, self._broker = self._broker, None
        if broker is not None:
            broker.stop()
        self._remove_tmp()

    def _remove_tmp(self) -> None:
        if self._tmp is not None:
            shutil.rmtree(self._tmp, ignore_errors=True)
            self._tmp = None

    @property
    def running(self) -> bool:
        return self._broker is not None

    @property
    def bootstrap_servers(self) -> str:
        """``HOST:PORT`` for a client's ``bootstrap.servers``."""
        if self._broker is None:
            raise HeadraceError("EmbeddedBroker is not running")
        return str(self._broker.listen_address)

    @property
    def data_dir(self) -> str:
        if self._broker is None:
            raise HeadraceError("EmbeddedBroker is not running")
        return str(self._broker.data_dir)

    def __enter__(self) -> "EmbeddedBroker":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def __repr__(self) -> str:
        state = self.bootstrap_servers if self.running else "stopped"
        return f"EmbeddedBroker({state})"


def _fixture() -> Iterator[EmbeddedBroker]:
    with EmbeddedBroker() as b:
        yield b


def __getattr__(name: str):
    """``embedded_broker``: a pytest fixture (a started EmbeddedBroker,
    stopped after the test), made on first use so that importing headrace
    does not import pytest. In a conftest.py:
    ``from headrace.embedded import embedded_broker``."""
    if name == "embedded_broker":
        import pytest

        fixture = pytest.fixture(_fixture, name="embedded_broker")
        globals()[name] = fixture
        return fixture
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
