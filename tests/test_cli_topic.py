"""`headrace topic ...` end to end against a real broker process: create,
list, describe (partitions, leaders, offsets, sizes, configs), alter-config,
add-partitions, delete, and the error paths (unknown topic, duplicate,
invalid config, unreachable broker)."""
from __future__ import annotations

import time
from pathlib import Path

import pytest

from cli_run import headrace, ok, one_error_line
from headrace.admin import Admin

pytestmark = pytest.mark.timeout(120)


def _describe_rows(text: str) -> dict[int, list[str]]:
    lines = text.splitlines()
    start = lines.index("PARTITION\tLEADER\tREPLICAS\tISR\tSTART\tEND\tRECORDS\tSIZE\tSTATUS") + 1
    rows = {}
    for ln in lines[start:]:
        if ln == "CONFIG" or ln.startswith("TOTAL\t"):
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
    # leader 0, replicas 0, ISR 0, start 0, end 2
    assert rows[2][1:7] == ["0", "0", "0", "0", "2", "2"]
    assert rows[0][5] == "0"
    assert "retention.ms=60000\t(override)" in d
    ok(headrace("topic", "delete", "orders", brokers=b))
    assert "orders" not in ok(headrace("topic", "list", brokers=b)).stdout.split()


def _segment_bytes_on_disk(data_dir: Path, topic: str, partition: int) -> int:
    return sum(f.stat().st_size for f in (data_dir / f"{topic}-{partition}").glob("*.log"))


def test_describe_shows_sizes_of_the_segment_files(module_broker):
    b = module_broker.bootstrap
    ok(headrace("topic", "create", "sized", "--partitions", "3", brokers=b))
    records, value_size = 200, 100
    payload = "".join(f"{i:0{value_size}d}\n" for i in range(records))
    ok(headrace("produce", "sized", "--partition", "1", input=payload, brokers=b))
    ok(headrace("produce", "sized", "--partition", "2", input="x\n", brokers=b))
    out = ok(headrace("topic", "describe", "sized", brokers=b)).stdout
    rows = _describe_rows(out)
    sizes = {p: int(cols[7]) for p, cols in rows.items()}
    assert sizes[0] == 0
    assert sizes[1] >= records * value_size  # the values plus batch/record framing
    assert sizes[2] > 0
    for p in range(3):
        assert sizes[p] == _segment_bytes_on_disk(module_broker.data_dir, "sized", p), p
    total = next(ln for ln in out.splitlines() if ln.startswith("TOTAL\t")).split("\t")
    assert int(total[6]) == records + 1
    assert int(total[7]) == sum(sizes.values())


def test_admin_log_dirs_reports_the_data_dir(module_broker):
    b = module_broker.bootstrap
    ok(headrace("topic", "create", "dirs-a", brokers=b))
    ok(headrace("produce", "dirs-a", input="hello\n", brokers=b))
    admin = Admin(b)
    dirs = admin.log_dirs()
    assert len(dirs) == 1
    d = dirs[0]
    assert Path(d.path) == module_broker.data_dir.absolute()
    assert 0 < d.usable_bytes <= d.total_bytes
    assert d.sizes[("dirs-a", 0)] == _segment_bytes_on_disk(module_broker.data_dir, "dirs-a", 0)
    only = admin.log_dirs(["dirs-a"])
    assert set(only[0].sizes) == {("dirs-a", 0)}
    assert admin.partition_sizes("dirs-a") == {0: d.sizes[("dirs-a", 0)]}


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
