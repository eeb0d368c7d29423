"""`headrace topic ...` end to end against a real broker process: create,
list, describe (partitions, leaders, offsets, configs), alter-config,
add-partitions, delete, and the error paths (unknown topic, duplicate,
invalid config, unreachable broker)."""
from __future__ import annotations

import time

import pytest

from cli_run import headrace, ok, one_error_line

pytestmark = pytest.mark.timeout(120)


def _describe_rows(text: str) -> dict[int, list[str]]:
    lines = text.splitlines()
    start = lines.index("PARTITION\tLEADER\tREPLICAS\tSTART\tEND\tRECORDS") + 1
    rows = {}
    for ln in lines[start:]:
        if ln == "CONFIG":
            break
        cols = ln.split("\t")
        rows[int(cols[0])] = cols
    return rows


def test_create_list_describe_delete(module_broker):
    b = module_broker.bootstrap
    r = ok(headrace("topic", "create", "orders", "--partitions", "3", "--config",
                    "retention.ms=60000", brokers=b))
    assert r.stdout.strip() == "created topic orders (3 partitions)"
    assert "orders\t3" in ok(headrace("topic", "list", "--long", brokers=b)).stdout.splitlines()
    ok(headrace("produce", "orders", "--partition", "2", input="x\ny\n", brokers=b))
    d = ok(headrace("topic", "describe", "orders", brokers=b)).stdout
    rows = _describe_rows(d)
    assert sorted(rows) == [0, 1, 2]
    assert rows[2][1:] == ["0", "0", "0", "2", "2"]   # leader 0, replicas 0, start 0, end 2
    assert rows[0][4] == "0"
    assert "retention.ms=60000\t(override)" in d
    ok(headrace("topic", "delete", "orders", brokers=b))
    assert "orders" not in ok(headrace("topic", "list", brokers=b)).stdout.split()


def test_env_var_names_the_brokers(module_broker):
    env = {"HEADRACE_BROKERS": module_broker.bootstrap}
    ok(headrace("topic", "create", "via-env", env=env))
    assert "via-env" in ok(headrace("topic", "list", env=env)).stdout.split()


def test_alter_config_and_add_partitions(module_broker):
    b = module_broker.bootstrap
    ok(headrace("topic", "create", "grow", "--partitions", "1", brokers=b))
    ok(headrace("topic", "alter-config", "grow", "--set", "retention.ms=1234", brokers=b))
    assert "retention.ms=1234\t(override)" in ok(
        headrace("topic", "describe", "grow", brokers=b)).stdout
    ok(headrace("topic", "alter-config", "grow", "--delete", "retention.ms", brokers=b))
    assert "retention.ms=1234" not in ok(headrace("topic", "describe", "grow", brokers=b)).stdout
    r = ok(headrace("topic", "add-partitions", "grow", "--add", "2", brokers=b))
    assert r.stdout.strip() == "topic grow: 1 -> 3 partitions"
    assert sorted(_describe_rows(ok(headrace("topic", "describe", "grow", brokers=b)).stdout)) \
        == [0, 1, 2]
    one_error_line(headrace("topic", "add-partitions", "grow", "--total", "2", brokers=b),
                   "3 partitions")


def test_unknown_topic_errors(module_broker):
    b = module_broker.bootstrap
    for action in ("describe", "delete"):
        one_error_line(headrace("topic", action, "no-such-topic", brokers=b),
                       "unknown topic", "no-such-topic")
    one_error_line(headrace("topic", "alter-config", "no-such-topic", "--set", "a=b",
                            brokers=b), "unknown topic")


def test_duplicate_and_invalid_config_errors(module_broker):
    b = module_broker.bootstrap
    ok(headrace("topic", "create", "dup", brokers=b))
    one_error_line(headrace("topic", "create", "dup", brokers=b), "already exists")
    one_error_line(headrace("topic", "create", "bad-cfg", "--config", "retention.ms=abc",
                            brokers=b), "bad-cfg")
    one_error_line(headrace("topic", "create", "bad-cfg", "--config", "retention.ms",
                            brokers=b), "KEY=VALUE")
    one_error_line(headrace("topic", "alter-config", "dup", "--set", "retention.ms=abc",
                            brokers=b), "dup")


def test_unreachable_broker_is_one_line_quickly():
    t0 = time.monotonic()
    r = headrace("topic", "list", "--timeout", "2", brokers="127.0.0.1:1")
    one_error_line(r, "unreachable")
    assert time.monotonic() - t0 < 20
