"""Configuration of the Storm components through the handshake's Storm conf:
an unknown or invalid headrace.* value fails fast, the error reaching Storm
(an ``error`` command for the UI and a ``log`` line at error level) before
the process exits non-zero."""
from __future__ import annotations

import pytest

from storm_harness import SpoutTask
from storm_kafka import launch
from storm_multilang import ComponentDied, base_conf, env_ok

pytestmark = pytest.mark.skipif(env_ok() is not None, reason=str(env_ok()))
GOOD_SPOUT = {"headrace.brokers": "127.0.0.1:1", "headrace.topics": "t"}


@pytest.mark.parametrize("target, settings, expect", [
    ("headrace.storm.KafkaSpout", {"headrace.guarantee": "exactly_once"},
     "headrace.guarantee: 'exactly_once' is not one of at_most_once | at_least_once | none"),
    ("headrace.storm.KafkaSpout", {"headrace.first_poll": "newest"},
     "headrace.first_poll: 'newest' is not one of earliest"),
    ("headrace.storm.KafkaSpout", {"headrace.topicz": "t"}, "unknown setting(s) headrace.topicz"),
    ("headrace.storm.KafkaSpout", {"headrace.max_uncommitted": 0},
     "headrace.max_uncommitted: 0 is out of range"),
    ("headrace.storm.KafkaSpout", {"headrace.topic_pattern": "t.*"},
     "set exactly one of headrace.topics and headrace.topic_pattern"),
    ("headrace.storm.KafkaSpout", {"headrace.consumer": {"enable.auto.commit": True}},
     "enable.auto.commit cannot be set"),
    ("headrace.storm.KafkaBolt", {}, "set headrace.topic (or headrace.topic_field)"),
    ("headrace.storm.KafkaBolt", {"headrace.topic": "t", "headrace.fire_and_forget": "maybe"},
     "headrace.fire_and_forget: expected true or false"),
])
def test_invalid_settings_fail_fast_with_a_clear_error(tmp_path, target, settings, expect):
    conf = base_conf(**GOOD_SPOUT, **settings)
    if target.endswith("Bolt"):
        conf.pop("headrace.topics")
    proc = launch(target, tmp_path / "c", conf, "c", 1, [])
    task = SpoutTask(proc)   # reads what the process sent after the handshake
    with pytest.raises(ComponentDied):
        task.query("activate")
    assert proc.wait_exit(10) != 0
    assert any(expect in e for e in task.errors), task.errors
    assert any(expect in line for line in task.logs), task.logs
