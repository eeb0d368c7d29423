"""`headrace config get|set|delete --broker N|--all`: a running broker's
dynamic configs over DescribeConfigs / IncrementalAlterConfigs (as
kafka-configs --entity-type brokers and rpk cluster config), checked with
confluent-kafka's DescribeConfigs; refusals are one line with Kafka's error
name. A real broker process."""
from __future__ import annotations

import json

import pytest

from cli_run import headrace, ok, one_error_line

pytestmark = pytest.mark.timeout(180)


def _described(bootstrap: str, key: str) -> tuple[str, int]:
    """(value, source) of broker 0's ``key`` as confluent-kafka describes it."""
    from confluent_kafka.admin import AdminClient, ConfigResource

    admin = AdminClient({"bootstrap.servers": bootstrap})
    res = ConfigResource(ConfigResource.Type.BROKER, "0")
    entry = admin.describe_configs([res])[res].result(30)[key]
    return entry.value, entry.source


def _get(b, *args) -> dict:
    return json.loads(ok(headrace("config", "get", *args, "--format", "json",
                                  brokers=b)).stdout)


def test_set_get_delete_per_broker_and_cluster_default(module_broker):
    from confluent_kafka.admin import ConfigSource

    b = module_broker.bootstrap
    d = _get(b, "--broker", "0")
    assert d["broker"] == 0 and len(d["configs"]) > 50
    assert d["configs"]["log.retention.ms"] == {"value": "604800000", "source": "DEFAULT_CONFIG",
                                                "read_only": False, "sensitive": False}
    assert d["configs"]["num.partitions"]["read_only"]

    out = ok(headrace("config", "set", "--all", "log.retention.ms=3600000", brokers=b)).stdout
    assert out == "the cluster-wide default: set log.retention.ms=3600000\n"
    assert _get(b, "--all")["configs"] == {"log.retention.ms": {
        "value": "3600000", "source": "DYNAMIC_DEFAULT_BROKER_CONFIG", "read_only": False,
        "sensitive": False}}
    assert _described(b, "log.retention.ms") == (
        "3600000", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG.value)

    ok(headrace("config", "set", "--broker", "0", "log.segment.bytes=1048576", "--dry-run",
                brokers=b))
    assert _described(b, "log.segment.bytes")[0] == "1073741824"
    ok(headrace("config", "set", "--broker", "0", "log.segment.bytes=1048576",
                "log.roll.ms=3600000", brokers=b))
    assert _described(b, "log.segment.bytes") == (
        "1048576", ConfigSource.DYNAMIC_BROKER_CONFIG.value)
    table = ok(headrace("config", "get", "--broker", "0", "log.segment.bytes",
                        "log.retention.ms", brokers=b)).stdout
    assert table == ("log.segment.bytes=1048576\t(DYNAMIC_BROKER_CONFIG)\n"
                     "log.retention.ms=3600000\t(DYNAMIC_DEFAULT_BROKER_CONFIG)\n")
    changed = _get(b, "--broker", "0", "--changed")["configs"]
    assert {k for k, c in changed.items() if c["source"].startswith("DYNAMIC")} == \
        {"log.segment.bytes", "log.roll.ms", "log.retention.ms"}

    ok(headrace("config", "delete", "--broker", "0", "log.segment.bytes", "log.roll.ms",
                brokers=b))
    ok(headrace("config", "delete", "--all", "log.retention.ms", brokers=b))
    assert _described(b, "log.segment.bytes") == ("1073741824",
                                                  ConfigSource.DEFAULT_CONFIG.value)
    assert _described(b, "log.retention.ms")[0] == "604800000"
    assert _get(b, "--all")["configs"] == {}


@pytest.mark.parametrize("argv, words", [
    (["set", "--broker", "0", "num.partitions=4"], ["num.partitions", "INVALID_REQUEST"]),
    (["set", "--broker", "0", "log.segment.bytes=abc"], ["log.segment.bytes", "INVALID_REQUEST"]),
    (["set", "--all", "no.such.key=1"], ["no.such.key"]),
    (["set", "--broker", "7", "log.segment.bytes=1048576"], ["no broker 7"]),
    (["set", "--all", "log.segment.bytes"], ["KEY=VALUE"]),
    (["get", "--broker", "0", "no.such.key"], ["unknown broker config", "no.such.key"]),
    (["delete", "--broker", "3", "log.segment.bytes"], ["no broker 3"]),
])
def test_refusals_are_one_line(module_broker, argv, words):
    r = headrace("config", *argv, brokers=module_broker.bootstrap)
    assert r.returncode == 2
    one_error_line(r, *words)


def test_a_target_is_required():
    r = headrace("config", "set", "log.retention.ms=1")
    assert r.returncode == 2 and "one of the arguments --broker --all --group is required" in r.stderr


def test_group_configs_set_get_delete(module_broker):
    """``--group G``: the GROUP resource's group configs, seen by
    confluent-kafka; a bad value is one line with INVALID_CONFIG."""
    from confluent_kafka.admin import AdminClient, ConfigResource, ResourceType

    b = module_broker.bootstrap
    out = ok(headrace("config", "set", "--group", "cli-g", "share.auto.offset.reset=earliest",
                      "share.delivery.count.limit=3", brokers=b)).stdout
    assert out == ("group cli-g: set share.auto.offset.reset=earliest, "
                   "share.delivery.count.limit=3\n")
    admin = AdminClient({"bootstrap.servers": b})
    res = ConfigResource(ResourceType.GROUP, "cli-g")
    entry = admin.describe_configs([res])[res].result(30)["share.auto.offset.reset"]
    assert (entry.value, entry.source) == ("earliest", 8)  # DYNAMIC_GROUP_CONFIG
    d = _get(b, "--group", "cli-g", "share.auto.offset.reset", "share.session.timeout.ms")
    assert d["group"] == "cli-g" and d["broker"] is None
    assert d["configs"]["share.auto.offset.reset"]["source"] == "DYNAMIC_GROUP_CONFIG"
    assert d["configs"]["share.session.timeout.ms"] == {
        "value": "45000", "source": "DEFAULT_CONFIG", "read_only": False, "sensitive": False}
    line = one_error_line(headrace("config", "set", "--group", "cli-g",
                                   "share.delivery.count.limit=50", brokers=b))
    assert "INVALID_CONFIG" in line and "share.delivery.count.limit" in line, line
    ok(headrace("config", "delete", "--group", "cli-g", "share.auto.offset.reset", brokers=b))
    assert _get(b, "--group", "cli-g", "--changed")["configs"] == {
        "share.delivery.count.limit": {"value": "3", "source": "DYNAMIC_GROUP_CONFIG",
                                       "read_only": False, "sensitive": False}}
