"""Topic config keys and dynamic broker configs against a real broker process
with real clients (issue 17, items 5 and 10):

- CreateTopics with Kafka 3.9 keys headrace did not know before
  (compression.type=zstd, message.format.version=3.0, preallocate, ...)
  succeeds, and DescribeConfigs returns them with their sources, synonyms and
  types (confluent-kafka and kafka-python);
- a per-broker dynamic log.segment.bytes makes an existing topic roll small
  segments at once, a cluster-wide dynamic log.retention.ms deletes its old
  segments without a restart, both are described as DYNAMIC_* and survive a
  restart;
- read-only broker keys are refused with INVALID_REQUEST and described
  read_only;
- advertised.listeners is dynamic per broker: Metadata and clients follow
  a change at once;
- the generated key reference in docs/configuration.md matches the tables.
"""
from __future__ import annotations

import time
from pathlib import Path

import pytest

from broker_process import shared_broker
from broker_kafka_clients import ConfluentClient, Out
from broker_config_wire import alter_cluster_default

TIMEOUT_S = 30
REPO = Path(__file__).resolve().parent.parent

# Kafka 3.9 keys beyond the ones headrace acts on; all must be accepted.
NEW_KEYS = {
    "compression.type": "zstd",
    "message.format.version": "3.0",
    "delete.retention.ms": "3600000",
    "preallocate": "true",
    "message.downconversion.enable": "false",
    "file.delete.delay.ms": "30000",
    "segment.jitter.ms": "5",
    "compression.zstd.level": "7",
    "leader.replication.throttled.replicas": "*",
    "local.retention.ms": "-2",
    "unclean.leader.election.enable": "true",
}


@pytest.fixture(scope="module")
def b(tmp_path_factory):
    # Retention runs every 200 ms so a dynamic retention change shows quickly.
    yield from shared_broker(tmp_path_factory, "configs-dynamic",
                             "--set", "log.retention.check.interval.ms=200",
                             "--set", "log.retention.bytes=100000000")


def _describe(admin, rtype, name, **kw):
    from confluent_kafka.admin import ConfigResource
    res = ConfigResource(rtype, name)
    return admin.describe_configs([res], **kw)[res].result(TIMEOUT_S)


def _alter_default(b, ops):
    code, message = alter_cluster_default(b.address, ops)
    assert code == 0, (code, message)


def _alter_broker(admin, name, ops, validate_only=False):
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource
    entries = [ConfigEntry(k, v, incremental_operation=(
        AlterConfigOpType.DELETE if v is None else AlterConfigOpType.SET)) for k, v in ops.items()]
    res = ConfigResource(ConfigResource.Type.BROKER, name, incremental_configs=entries)
    return admin.incremental_alter_configs([res], validate_only=validate_only)[res].result(TIMEOUT_S)


def test_create_topics_with_every_kind_of_kafka_key_and_describe_sources(b):
    from confluent_kafka.admin import ConfigResource, ConfigSource
    client = ConfluentClient(b.bootstrap)
    client.create_topic("all-keys", 1, **NEW_KEYS)
    got = _describe(client.admin(), ConfigResource.Type.TOPIC, "all-keys")
    for key, value in NEW_KEYS.items():
        assert got[key].value == value, (key, got[key].value)
        assert got[key].source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value, key
    # Defaults, static broker values and synonyms (most specific first).
    assert got["min.insync.replicas"].source == ConfigSource.DEFAULT_CONFIG.value
    assert got["remote.storage.enable"].value == "false"
    rb = got["retention.bytes"]
    assert rb.value == "100000000" and rb.source == ConfigSource.STATIC_BROKER_CONFIG.value

    # kafka-python: the same values with their types; an unknown key still
    # fails the topic with INVALID_CONFIG.
    from kafka.admin import ConfigResource as KResource, ConfigResourceType, KafkaAdminClient, NewTopic
    from kafka.errors import InvalidConfigurationError
    kp = KafkaAdminClient(bootstrap_servers=b.bootstrap)
    try:
        entries = kp.describe_configs([KResource(ConfigResourceType.TOPIC, "all-keys")],
                                      include_synonyms=True, config_filter="all")["topic"]["all-keys"]
        assert entries["message.format.version"]["value"] == "3.0"
        assert entries["compression.type"]["value"] == "zstd"
        assert entries["preallocate"]["config_type"] == "BOOLEAN"
        assert entries["leader.replication.throttled.replicas"]["config_type"] == "LIST"
        assert entries["retention.bytes"]["synonyms"] == [
            {"name": "log.retention.bytes", "value": "100000000", "source": "STATIC_BROKER_CONFIG"},
            {"name": "log.retention.bytes", "value": "-1", "source": "DEFAULT_CONFIG"}]
        with pytest.raises(InvalidConfigurationError):
            kp.create_topics([NewTopic("bad-key", 1, 1, topic_configs={"no.such.key": "1"})])
    finally:
        kp.close()


def test_read_only_broker_keys_are_refused_and_described_read_only(b):
    from confluent_kafka import KafkaError
    from confluent_kafka.admin import ConfigResource
    admin = ConfluentClient(b.bootstrap).admin()
    with pytest.raises(Exception) as e:
        _alter_broker(admin, "0", {"num.partitions": "4"})
    assert e.value.args[0].code() == KafkaError.INVALID_REQUEST
    assert "num.partitions" in e.value.args[0].str()
    desc = _describe(admin, ConfigResource.Type.BROKER, "0")
    assert desc["num.partitions"].is_read_only
    assert not desc["log.retention.ms"].is_read_only
    assert desc["group.max.size"].value == str(2**31 - 1)  # a registered family is described


def _segment_files(b, topic):
    return sorted((b.data_dir / f"{topic}-0").glob("*.log"))


def test_dynamic_broker_configs_take_effect_at_once_and_survive_restart(b):
    from confluent_kafka.admin import ConfigResource, ConfigSource
    client = ConfluentClient(b.bootstrap)
    client.create_topic("dyn-effect", 1)  # before the change: no override
    admin = client.admin()

    # validate_only changes nothing.
    _alter_broker(admin, "0", {"log.segment.bytes": "4096"}, validate_only=True)
    assert _describe(admin, ConfigResource.Type.TOPIC, "dyn-effect")["segment.bytes"].value == \
        "1073741824"

    _alter_broker(admin, "0", {"log.segment.bytes": "4096"})
    p = client.producer(**{"linger.ms": 0})
    for i in range(40):  # ~1 KB batches, one at a time
        p.produce("dyn-effect", value=b"%04d" % i * 250, partition=0)
        p.flush(TIMEOUT_S)
    assert len(_segment_files(b, "dyn-effect")) >= 5, _segment_files(b, "dyn-effect")
    topic_cfg = _describe(admin, ConfigResource.Type.TOPIC, "dyn-effect")
    seg = topic_cfg["segment.bytes"]
    assert seg.value == "4096" and seg.source == ConfigSource.DYNAMIC_BROKER_CONFIG.value

    # Cluster-wide default retention: the closed segments go within seconds.
    low, high = client.watermarks("dyn-effect", 1)[0]
    assert (low, high) == (0, 40)
    time.sleep(1.1)  # every record is now older than 1 s
    _alter_default(b, {"log.retention.ms": "1000"})
    deadline = time.monotonic() + TIMEOUT_S
    while client.watermarks("dyn-effect", 1)[0][0] == 0:
        assert time.monotonic() < deadline, "retention did not delete old segments"
        time.sleep(0.2)
    low, high = client.watermarks("dyn-effect", 1)[0]
    assert 0 < low <= high == 40
    default = _describe(admin, ConfigResource.Type.BROKER, "0")["log.retention.ms"]
    assert default.value == "1000"
    assert default.source == ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG.value

    b.restart()
    admin = ConfluentClient(b.bootstrap).admin()
    broker_cfg = _describe(admin, ConfigResource.Type.BROKER, "0")
    assert broker_cfg["log.segment.bytes"].value == "4096"
    assert broker_cfg["log.segment.bytes"].source == ConfigSource.DYNAMIC_BROKER_CONFIG.value
    ret = broker_cfg["log.retention.ms"]
    assert ret.value == "1000" and ret.source == ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG.value
    assert _describe(admin, ConfigResource.Type.TOPIC, "dyn-effect")["retention.ms"].value == "1000"

    # DELETE reverts both (for the later tests of this module too).
    _alter_default(b, {"log.retention.ms": None})
    _alter_broker(admin, "0", {"log.segment.bytes": None})
    topic_cfg = _describe(admin, ConfigResource.Type.TOPIC, "dyn-effect")
    assert topic_cfg["retention.ms"].value == "604800000"
    assert topic_cfg["segment.bytes"].source == ConfigSource.DEFAULT_CONFIG.value


def _advertised(admin):
    """(host, port) that Metadata gives for broker 0."""
    b0 = admin.list_topics(timeout=TIMEOUT_S).brokers[0]
    return b0.host, b0.port


def test_advertised_listeners_is_dynamic_per_broker(b):
    """Kafka's per-broker dynamic advertised.listeners: Metadata hands out
    the new address at once and clients follow it; a listener the broker does
    not have and the cluster-wide default are INVALID_REQUEST; the value
    survives a restart; DELETE goes back to the listener's own address."""
    from confluent_kafka import KafkaError
    from confluent_kafka.admin import ConfigResource, ConfigSource
    client = ConfluentClient(b.bootstrap)
    admin = client.admin()
    assert _advertised(admin) == ("127.0.0.1", b.port)
    entry = _describe(admin, ConfigResource.Type.BROKER, "0")["advertised.listeners"]
    assert not entry.is_read_only

    moved = f"PLAINTEXT://localhost:{b.port}"
    _alter_broker(admin, "0", {"advertised.listeners": moved})
    assert _advertised(admin) == ("localhost", b.port)
    entry = _describe(admin, ConfigResource.Type.BROKER, "0")["advertised.listeners"]
    assert (entry.value, entry.source) == (moved, ConfigSource.DYNAMIC_BROKER_CONFIG.value)
    # A client bootstrapped at 127.0.0.1 goes on at "localhost".
    client.create_topic("adv-moved", 1)
    p = client.producer()
    p.produce("adv-moved", value=b"after the move")
    assert p.flush(TIMEOUT_S) == 0
    assert client.watermarks("adv-moved", 1)[0] == (0, 1)

    for bad in ("SSL://localhost:9093", "PLAINTEXT://localhost:99999"):
        with pytest.raises(Exception) as e:
            _alter_broker(admin, "0", {"advertised.listeners": bad})
        assert e.value.args[0].code() == KafkaError.INVALID_REQUEST, bad
        assert "advertised.listeners" in e.value.args[0].str()
    code, message = alter_cluster_default(b.address, {"advertised.listeners": moved})
    assert code == KafkaError.INVALID_REQUEST and "broker id must be specified" in message
    assert _advertised(admin) == ("localhost", b.port)

    # kafka-python sees it dynamic too (its suite's describe_configs test).
    from kafka.admin import ConfigResource as KResource, ConfigResourceType, KafkaAdminClient
    kp = KafkaAdminClient(bootstrap_servers=b.bootstrap)
    try:
        got = kp.describe_configs([KResource(ConfigResourceType.BROKER, "0")])["broker"]["0"]
        assert got["advertised.listeners"]["read_only"] is False
    finally:
        kp.close()

    b.restart()
    admin = ConfluentClient(b.bootstrap).admin()
    assert _advertised(admin) == ("localhost", b.port)
    _alter_broker(admin, "0", {"advertised.listeners": None})
    assert _advertised(admin) == ("127.0.0.1", b.port)


def test_docs_configuration_md_matches_the_key_tables():
    from headrace._core import config_docs
    from headrace.cli.config import generated_section
    text = (REPO / "docs" / "configuration.md").read_text(encoding="utf-8")
    assert generated_section(text) == config_docs(), \
        "docs/configuration.md is stale: regenerate with `headrace config docs`"
