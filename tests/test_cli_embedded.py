"""headrace.EmbeddedBroker: a real broker in this process with its own data
dir and a free port; usable as a context manager and as a pytest fixture."""
from __future__ import annotations

import os

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

import headrace
from headrace.embedded import embedded_broker  # noqa: F401 - the fixture under test

pytestmark = pytest.mark.timeout(120)


def _round_trip(bootstrap: str, topic: str) -> list[bytes]:
    p = Producer({"bootstrap.servers": bootstrap})
    for v in (b"one", b"two"):
        p.produce(topic, v)
    assert p.flush(30) == 0
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "emb", "enable.auto.commit": False})
    try:
        c.assign([TopicPartition(topic, 0, 0)])
        return [m.value() for m in c.consume(2, timeout=30)]
    finally:
        c.close()


def test_context_manager_serves_and_cleans_up():
    with headrace.EmbeddedBroker() as b:
        host, port = b.bootstrap_servers.rsplit(":", 1)
        assert host == "127.0.0.1" and int(port) > 0
        data_dir = b.data_dir
        assert os.path.isdir(data_dir)
        assert _round_trip(b.bootstrap_servers, "emb-ctx") == [b"one", b"two"]
    assert not b.running and not os.path.exists(data_dir)
    with pytest.raises(headrace.HeadraceError):
        b.bootstrap_servers


def test_two_brokers_get_distinct_ports_and_dirs(tmp_path):
    with headrace.EmbeddedBroker() as a, headrace.EmbeddedBroker(str(tmp_path / "kept")) as b:
        assert a.bootstrap_servers != b.bootstrap_servers and a.data_dir != b.data_dir
    assert (tmp_path / "kept").is_dir()   # a given data dir is kept


def test_fixture_and_cli_against_it(embedded_broker):
    from cli_run import headrace as run, ok
    bs = embedded_broker.bootstrap_servers
    ok(run("topic", "create", "emb-cli", brokers=bs))
    ok(run("produce", "emb-cli", input="hi\n", brokers=bs))
    assert ok(run("consume", "emb-cli", brokers=bs)).stdout == "hi\n"
