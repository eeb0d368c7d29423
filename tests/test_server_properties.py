"""Kafka's server.properties as `headrace broker --config` (docs/operations.md):
the Java properties grammar, one rule per test; Kafka 3.9's own
config/server.properties and config/kraft/server.properties start a broker
that a client produces to and consumes from; flags override the file; Kafka
keys headrace does not implement are one warning line; any other unknown key
(Confluent's, Kafka's removed ones, a typo) one warning each, as in Kafka."""
from __future__ import annotations

import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from broker_process import BrokerProcess

pytestmark = pytest.mark.timeout(120)

DATA = Path(__file__).parent / "kafka_configs"
TIMEOUT_S = 30


def _props(text: str) -> dict[str, str]:
    from headrace.server_properties import parse_properties
    return parse_properties(text.encode("iso-8859-1"))


# -- the Java properties grammar (java.util.Properties.load) ------------------
def test_comments_start_with_hash_or_bang_after_leading_whitespace():
    assert _props("# c\n! c\n   # indented\n\t! tab\na=1\n") == {"a": "1"}


def test_separators_equals_colon_whitespace():
    assert _props("a=1\nb:2\nc 3\nd\t4\ne = 5\nf : 6\ng   =   7\n") == {
        "a": "1", "b": "2", "c": "3", "d": "4", "e": "5", "f": "6", "g": "7"}


def test_first_separator_splits_later_ones_are_value():
    assert _props("url=http://h:1/x=y\nk:v:w\n") == {"url": "http://h:1/x=y", "k": "v:w"}


def test_key_without_value_is_empty_and_blank_lines_ignored():
    assert _props("\n\nalone\n   \nx=\n") == {"alone": "", "x": ""}


def test_leading_whitespace_stripped_trailing_kept():
    assert _props("   k = v  \n") == {"k": "v  "}


def test_line_continuation_joins_and_strips_the_next_lines_indent():
    assert _props("list=a,\\\n    b,\\\n\tc\nnext=1\n") == {"list": "a,b,c", "next": "1"}


def test_even_backslashes_do_not_continue():
    assert _props("k=one\\\\\nl=two\n") == {"k": "one\\", "l": "two"}


def test_escapes_in_keys_and_values():
    assert _props("a\\=b\\:c\\ d=x\\ty\\nz\\\\\n") == {"a=b:c d": "x\ty\nz\\"}


def test_unicode_escapes_and_latin1_bytes():
    assert _props("k=\\u00e9t\\u00e9 \\u20ac\n") == {"k": "été €"}
    from headrace.server_properties import parse_properties
    assert parse_properties("k=caf\xe9\n".encode("iso-8859-1")) == {"k": "café"}


def test_last_duplicate_wins():
    assert _props("k=1\nk=2\n") == {"k": "2"}


def test_format_detected_by_extension_then_content(tmp_path):
    from headrace.server_properties import is_properties_file
    assert is_properties_file("x.properties", b'a = "toml-looking"\n')
    assert not is_properties_file("x.toml", b"a=b:c\n")
    assert not is_properties_file("broker.conf", b'log.retention.ms = 5\n[x]\ny = "z"\n')
    assert is_properties_file("broker.conf", b"listeners=PLAINTEXT://:9092\n")


# -- Kafka's files start a broker ----------------------------------------------
def _produce_consume(bootstrap: str, topic: str) -> None:
    from confluent_kafka import Consumer, Producer
    p = Producer({"bootstrap.servers": bootstrap})
    for i in range(10):
        p.produce(topic, key=b"k%d" % i, value=b"v%d" % i)
    assert p.flush(TIMEOUT_S) == 0
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"g-{topic}",
                  "auto.offset.reset": "earliest"})
    got = []
    try:
        c.subscribe([topic])
        deadline = time.monotonic() + TIMEOUT_S
        while len(got) < 10 and time.monotonic() < deadline:
            m = c.poll(0.2)
            if m is not None and not m.error():
                got.append((m.offset(), m.value()))
    finally:
        c.close()
    assert got == [(i, b"v%d" % i) for i in range(10)]


def _warning_lines(stderr: str, needle: str) -> list[str]:
    return [line for line in stderr.splitlines() if " WARN " in line and needle in line]


def test_kafka_zookeeper_server_properties_starts_a_broker(tmp_path, broker_factory):
    conf = tmp_path / "server.properties"
    shutil.copy(DATA / "kafka39_server.properties", conf)
    # Flags override the file: our data dir and port instead of /tmp/kafka-logs
    # and 9092, a single node instead of zookeeper.connect=localhost:2181.
    b = broker_factory(tmp_path / "zk-data", "--config", str(conf), "--zookeeper", "")
    assert b.listen_line.endswith(f"data {tmp_path / 'zk-data'}, {b.backend})")
    assert " node 0," in b.listen_line  # broker.id=0 is node.id
    _produce_consume(b.bootstrap, "from-server-properties")
    ignored = _warning_lines(b.stderr, "Kafka setting(s) headrace does not implement")
    assert len(ignored) == 1, b.stderr
    # log.retention.hours, log.segment.bytes, num.io.threads... are honoured,
    # so they are not in the warning; the startup line shows them from the file.
    assert "log.retention.hours" not in ignored[0] and "log.dirs" not in ignored[0]
    startup = [line for line in b.stderr.splitlines() if "starting node 0:" in line]
    assert len(startup) == 1 and f"file {conf}" in startup[0], b.stderr
    assert "log.segment.bytes=1073741824" not in startup[0]  # the default: not listed
    assert "group.initial.rebalance.delay.ms=0" in startup[0]


def test_kafka_kraft_server_properties_drops_the_controller_listener(tmp_path, broker_factory):
    conf = tmp_path / "server.properties"
    shutil.copy(DATA / "kafka39_kraft_server.properties", conf)
    # The file advertises localhost:9092: flags override both addresses.
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    b = broker_factory(tmp_path / "kraft-data", "--config", str(conf),
                       "--advertise", f"127.0.0.1:{port}", listen=f"127.0.0.1:{port}")
    assert " node 1," in b.listen_line  # node.id=1
    _produce_consume(b.bootstrap, "from-kraft-properties")
    controller = _warning_lines(b.stderr, "CONTROLLER://:9093")
    assert len(controller) == 1, b.stderr
    ignored = _warning_lines(b.stderr, "Kafka setting(s) headrace does not implement")
    assert len(ignored) == 1, b.stderr
    for key in ("process.roles", "controller.quorum.voters", "controller.listener.names"):
        assert key in ignored[0], ignored[0]


def _headrace(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "headrace", *args], capture_output=True,
                          text=True, timeout=60, stdin=subprocess.DEVNULL)


UNKNOWN_KEYS = ("confluent.metrics.reporter.bootstrap.servers",
                "confluent.metrics.reporter.topic.replicas", "confluent.support.metrics.enable",
                "port", "host.name", "jmx.port", "log.retention.hour")


def test_unknown_keys_warn_once_each_and_the_broker_starts(tmp_path, broker_factory):
    """As Kafka ("The configuration 'x' was supplied but isn't a known
    config."): Confluent keys, keys Kafka removed in 3.0 (port, host.name),
    jmx.port and a typo are each one warning at start, not an error; a typo's
    warning names the closest known key."""
    conf = tmp_path / "server.properties"
    conf.write_text("broker.id=0\n"
                    "confluent.metrics.reporter.bootstrap.servers=localhost:9092\n"
                    "confluent.metrics.reporter.topic.replicas=1\n"
                    "confluent.support.metrics.enable=false\n"
                    "port=9092\nhost.name=localhost\njmx.port=9999\nlog.retention.hour=5\n")
    b = broker_factory(tmp_path / "d", "--config", str(conf))
    _produce_consume(b.bootstrap, "despite-unknown-keys")
    for key in UNKNOWN_KEYS:
        lines = _warning_lines(b.stderr, f"The configuration '{key}' (file {conf}) was "
                                         f"supplied but isn't a known config")
        assert len(lines) == 1, (key, b.stderr)
    typo = _warning_lines(b.stderr, "'log.retention.hour'")
    assert "did you mean 'log.retention.hours'" in typo[0], typo
    assert not [line for line in b.stderr.splitlines() if " ERROR " in line], b.stderr


def test_config_show_leaves_unknown_keys_out(tmp_path):
    conf = tmp_path / "server.properties"
    conf.write_text("port=9092\nnum.partitions=4\n")
    r = _headrace("config", "show", "--config", str(conf), "--format", "json")
    assert r.returncode == 0, r.stderr
    import json
    rows = {row["name"]: row for row in json.loads(r.stdout)["settings"]}
    assert rows["num.partitions"]["value"] == "4" and "port" not in rows


def test_controller_only_node_and_conflicting_ids_are_errors(tmp_path):
    conf = tmp_path / "controller.properties"
    conf.write_text("process.roles=controller\nnode.id=1\n")
    r = _headrace("broker", "--config", str(conf), "--data-dir", str(tmp_path / "d"))
    assert r.returncode == 2 and "headrace runs brokers only" in r.stderr, r.stderr
    conf.write_text("broker.id=1\nnode.id=2\n")
    r = _headrace("broker", "--config", str(conf), "--data-dir", str(tmp_path / "d"))
    assert r.returncode == 2 and "broker.id=1 and node.id=2 differ" in r.stderr, r.stderr


def test_toml_config_still_works(tmp_path):
    conf = tmp_path / "broker.toml"
    conf.write_text('num.partitions = 3\n[log.retention]\nms = 60000\n')
    r = _headrace("config", "show", "--config", str(conf), "--format", "json")
    assert r.returncode == 0, r.stderr
    import json
    rows = {row["name"]: row for row in json.loads(r.stdout)["settings"]}
    assert rows["num.partitions"]["value"] == "3" and rows["log.retention.ms"]["value"] == "60000"
