"""Configuration of the Storm components through the handshake's Storm conf:
an unknown or invalid headrace.* value fails fast, the error reaching Storm
(an ``error`` command for the UI and a ``log`` line at error level) before
the process exits non-zero."""
from __future__ import annotations

import pytest

from storm_harness import SpoutTask
from storm_kafka import launch
from storm_multilang import ComponentDied, ShellProcess, base_conf, context, env_ok

pytestmark = pytest.mark.skipif(env_ok() is not None, reason=str(env_ok()))
GOOD_SPOUT = {"headrace.brokers": "127.0.0.1:1", "headrace.topics": "t"}


@pytest.mark.parametrize("target, settings, expect", [
    ("headrace.storm.KafkaSpout", {"headrace.guarantee": "exactly-twice"},
     "headrace.guarantee: 'exactly-twice' is not one of at_most_once | at_least_once | none "
     "| exactly_once"),
    ("headrace.storm.KafkaSpout", {"headrace.first_poll": "newest"},
     "headrace.first_poll: 'newest' is not one of earliest"),
    ("headrace.storm.KafkaSpout", {"headrace.topicz": "t"}, "unknown setting(s) headrace.topicz"),
    ("headrace.storm.KafkaSpout", {"headrace.max_uncommitted": 0},
     "headrace.max_uncommitted: 0 is out of range"),
    ("headrace.storm.KafkaSpout", {"headrace.topic_pattern": "t.*"},
     "set exactly one of headrace.topics and headrace.topic_pattern"),
    ("headrace.storm.KafkaSpout", {"headrace.consumer": {"enable.auto.commit": True}},
     "enable.auto.commit cannot be set"),
    ("headrace.storm.ShareSpout", {"headrace.fail_as": "retry"},
     "headrace.fail_as: 'retry' is not one of release | reject"),
    ("headrace.storm.ShareSpout", {"headrace.consumer": {"share.acknowledgement.mode": "implicit"}},
     "share.acknowledgement.mode cannot be set"),
    ("headrace.storm.ShareSpout", {"headrace.topics": []}, "headrace.topics"),
    ("headrace.storm.KafkaBolt", {}, "set headrace.topic (or headrace.topic_field)"),
    ("headrace.storm.KafkaBolt", {"headrace.topic": "t", "headrace.fire_and_forget": "maybe"},
     "headrace.fire_and_forget: expected true or false"),
])
def test_invalid_settings_fail_fast_with_a_clear_error(tmp_path, target, settings, expect):
    conf = base_conf(**{**GOOD_SPOUT, **settings})
    if target.endswith("Bolt"):
        conf.pop("headrace.topics")
    proc = launch(target, tmp_path / "c", conf, "c", 1, [])
    task = SpoutTask(proc)   # reads what the process sent after the handshake
    with pytest.raises(ComponentDied):
        task.query("activate")
    assert proc.wait_exit(10) != 0
    assert any(expect in e for e in task.errors), task.errors
    assert any(expect in line for line in task.logs), task.logs


EOS = {"headrace.guarantee": "exactly_once"}
SOURCE = ["topic", "partition", "offset", "from_offset"]
TXN_BOLT = {"headrace.topic": "out", "headrace.transactional": True,
            "headrace.source_group": "g"}


@pytest.mark.parametrize("target, settings, sources, tasks, expect", [
    ("headrace.storm.KafkaSpout", {**EOS, "headrace.first_poll": "earliest"}, None, 1,
     "headrace.first_poll must be uncommitted_earliest or uncommitted_latest with exactly_once"),
    ("headrace.storm.KafkaSpout", {**EOS, "headrace.retry_max_retries": 3}, None, 1,
     "headrace.retry_max_retries must be -1 with exactly_once"),
    ("headrace.storm.KafkaSpout", {**EOS, "headrace.consumer": {"isolation.level":
                                                                 "read_uncommitted"}}, None, 1,
     "isolation.level must be read_committed with headrace.guarantee exactly_once"),
    ("storm_components.NarrowSpout", EOS, None, 1,
     "exactly_once: the spout's outputs ['key', 'value'] lack topic, partition, offset, "
     "from_offset"),
    ("headrace.storm.KafkaBolt", {**TXN_BOLT, "headrace.source_group": None}, {"s": SOURCE}, 1,
     "headrace.transactional needs the exactly_once spout's consumer group"),
    ("headrace.storm.KafkaBolt", {**TXN_BOLT, "headrace.fire_and_forget": True}, {"s": SOURCE},
     1, "headrace.transactional and headrace.fire_and_forget exclude each other"),
    ("headrace.storm.KafkaBolt", TXN_BOLT, {"upper": ["key", "message"]}, 1,
     "input upper/default lacks the field(s) topic, partition, offset, from_offset"),
    ("headrace.storm.KafkaBolt", TXN_BOLT, {"s": SOURCE + ["message"]}, 2,
     "input s/default uses grouping SHUFFLE  over 2 tasks; each source partition must reach "
     "one task"),
])
def test_exactly_once_misconfiguration_is_refused_at_start(tmp_path, monkeypatch, target,
                                                           settings, sources, tasks, expect):
    from storm_topology import components_on_path
    components_on_path(monkeypatch)
    conf = base_conf(**{**GOOD_SPOUT, **settings})
    if "Bolt" in target:
        conf.pop("headrace.topics")
    conf = {k: v for k, v in conf.items() if v is not None}
    ctx = context("c", 1, [], sources, tasks={t: "c" for t in range(1, tasks + 1)})
    proc = ShellProcess(target, conf, ctx, tmp_path / "c").launch()
    task = SpoutTask(proc)
    with pytest.raises(ComponentDied):
        task.query("activate")
    assert proc.wait_exit(10) != 0
    assert any(expect in e for e in task.errors), task.errors


@pytest.mark.parametrize("grouping, ok", [
    ({"type": "FIELDS", "fields": []}, True),            # global grouping, as Storm sends it
    ({"type": "GLOBAL"}, True),
    ({"type": "FIELDS", "fields": ["partition", "topic"]}, True),
    ({"type": "FIELDS", "fields": ["key"]}, False),
    ({"type": "SHUFFLE"}, False),
])
def test_transactional_bolt_grouping_check_over_two_tasks(grouping, ok):
    from headrace.storm.config import ConfigError
    from headrace.storm.topology_checks import check_transactional_inputs
    ctx = context("c", 1, [], {"s": SOURCE}, tasks={1: "c", 2: "c"})
    ctx["source->stream->grouping"] = {"s": {"default": grouping}}
    if ok:
        check_transactional_inputs(ctx)
        return
    with pytest.raises(ConfigError, match="each source partition must reach one task") as e:
        check_transactional_inputs(ctx)
    assert "global" not in str(e.value)
