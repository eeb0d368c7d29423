"""The sparse example project under integrations/storm/examples/topic_copy:
its topology builds with the streamparse DSL, and each headrace component
starts from exactly the command its spec declares, with the configuration a
worker would hand it (topology config merged with the component's), and
completes the handshake against a real broker."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from storm_harness import BoltTask, SpoutExecutor, SpoutTask
from storm_kafka import create_topic, read_all, storm_broker, unique  # noqa: F401 (fixture)
from storm_multilang import ShellProcess, base_conf, context, env_ok

pytestmark = pytest.mark.skipif(env_ok() is not None, reason=str(env_ok()))
PROJECT = Path(__file__).resolve().parents[1] / "integrations/storm/examples/topic_copy"


@pytest.fixture(scope="module")
def topology():
    sys.path[:0] = [str(PROJECT / "src"), str(PROJECT)]
    try:
        from topologies.topic_copy import TopicCopy
        yield TopicCopy
    finally:
        del sys.path[:2]


def _worker_conf(topology, name: str, bootstrap: str, **extra) -> tuple[str, dict]:
    """(script, conf) of a component as a worker would run it."""
    spec = {s.name: s for s in topology.specs}[name]
    obj = topology.thrift_spouts.get(name) or topology.thrift_bolts.get(name)
    shell = (obj.spout_object if name in topology.thrift_spouts else obj.bolt_object).shell
    assert shell.execution_command == "streamparse_run"
    conf = base_conf(**topology.config)
    conf.update(json.loads(spec.config))
    conf.update({"headrace.brokers": bootstrap, **extra})
    return shell.script, conf


def test_example_topology_components_run_from_their_specs(topology, storm_broker, tmp_path):
    assert [s.name for s in topology.specs] == ["events", "upper", "sink"]
    src, dst = unique("events"), unique("events-upper")
    create_topic(storm_broker.bootstrap, src, 1)
    create_topic(storm_broker.bootstrap, dst, 1)
    script, conf = _worker_conf(topology, "events", storm_broker.bootstrap,
                                **{"headrace.topics": [src], "headrace.group": unique("ex")})
    assert script == "headrace.storm.spout.KafkaSpout"
    spout = SpoutExecutor(SpoutTask(ShellProcess(script, conf, context(
        "events", 1, ["topic", "partition", "offset", "key", "value"]), tmp_path).launch()))
    script, conf = _worker_conf(topology, "sink", storm_broker.bootstrap,
                                **{"headrace.topic": dst})
    assert script == "headrace.storm.bolt.KafkaBolt"
    bolt = BoltTask(ShellProcess(script, conf, context("sink", 3, [], {"upper": ["key", "message"]}),
                                 tmp_path).launch())
    bolt.send_tuple(["k", "HELLO"], comp="upper")
    bolt.wait_for(lambda: len(bolt.acked) == 1, 20, "the sink's ack")
    assert [v for *_, v in read_all(storm_broker.bootstrap, dst, 1, 1)] == [b"HELLO"]
    assert spout.task.errors == [] and spout.step() == []   # nothing in events yet
    spout.task.proc.kill()
    bolt.close()
