"""Kafka-side helpers of the Storm tests: one broker per module with quick
group settings, topic creation, producing numbered records, reading a topic,
reading a group's committed offsets; and launching components under the
harness."""
from __future__ import annotations

import itertools
import time
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from broker_process import GROUP_ARGS, shared_broker
from headrace.admin import Admin
from storm_harness import BoltTask, SpoutExecutor, SpoutTask
from storm_multilang import ShellProcess, base_conf, context

# Consumer settings for the spouts under test: quick failure detection.
FAST_GROUP = {"session.timeout.ms": 3000, "heartbeat.interval.ms": 300,
              "topic.metadata.refresh.interval.ms": 1000}
SPOUT_FIELDS = ["topic", "partition", "offset", "key", "value", "from_offset"]
_names = itertools.count()


@pytest.fixture(scope="module")
def storm_broker(tmp_path_factory):
    yield from shared_broker(tmp_path_factory, "storm-broker", *GROUP_ARGS)


def unique(prefix: str) -> str:
    return f"{prefix}-{next(_names)}-{int(time.time() * 1000) % 100000}"


def create_topic(bootstrap: str, topic: str, partitions: int) -> None:
    Admin(bootstrap).create_topic(topic, partitions)


def produce(bootstrap: str, topic: str, n: int, partitions: int, start: int = 0) -> None:
    """Records key k<i>, value v<i> for i in [start, start+n), round robin over partitions."""
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
    for i in range(start, start + n):
        p.produce(topic, key=f"k{i}".encode(), value=f"v{i}".encode(), partition=i % partitions)
    assert p.flush(30) == 0, "records not delivered"


def read_all(bootstrap: str, topic: str, partitions: int, expect: int,
             timeout: float = 20.0) -> list[tuple[int, int, bytes | None, bytes | None]]:
    """(partition, offset, key, value) of the topic's first ``expect`` records."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": unique("reader"),
                  "enable.auto.commit": False})
    c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    out = []
    deadline = time.monotonic() + timeout
    try:
        while len(out) < expect and time.monotonic() < deadline:
            for m in c.consume(500, 0.2):
                if m.error() is None:
                    out.append((m.partition(), m.offset(), m.key(), m.value()))
    finally:
        c.close()
    return out


def committed(bootstrap: str, group: str) -> dict[int, int]:
    """partition -> committed offset of ``group`` (its only topic)."""
    return {p: off for (_, p), off in Admin(bootstrap).committed(group).items()}


def launch(target: str, workdir: Path, conf: dict, component: str, task_id: int,
           fields: list[str], sources: dict | None = None) -> ShellProcess:
    workdir.mkdir(parents=True, exist_ok=True)
    return ShellProcess(target, conf, context(component, task_id, fields, sources),
                        workdir).launch()


def start_spout(tmp: Path, bootstrap: str, task_id: int = 1, max_pending: int | None = None,
                **headrace) -> SpoutExecutor:
    """A KafkaSpout task under the harness, configured only by the Storm conf
    (``max_pending`` is also its topology.max.spout.pending, as in Storm)."""
    conf = base_conf(**{"headrace.brokers": bootstrap, "headrace.consumer": FAST_GROUP,
                        **{f"headrace.{k}": v for k, v in headrace.items()}})
    if max_pending:
        conf["topology.max.spout.pending"] = max_pending
    proc = launch("headrace.storm.KafkaSpout", tmp / f"spout-{task_id}-{time.monotonic_ns()}",
                  conf, "kafka-spout", task_id, SPOUT_FIELDS)
    return SpoutExecutor(SpoutTask(proc), max_pending=max_pending)


SHARE_SPOUT_FIELDS = ["topic", "partition", "offset", "key", "value", "delivery_count"]


def start_share_spout(tmp: Path, bootstrap: str, task_id: int = 1,
                      max_pending: int | None = None, **headrace) -> SpoutExecutor:
    """A ShareSpout task under the harness, configured only by the Storm conf."""
    conf = base_conf(**{"headrace.brokers": bootstrap,
                        **{f"headrace.{k}": v for k, v in headrace.items()}})
    if max_pending:
        conf["topology.max.spout.pending"] = max_pending
    proc = launch("headrace.storm.ShareSpout",
                  tmp / f"share-spout-{task_id}-{time.monotonic_ns()}", conf, "share-spout",
                  task_id, SHARE_SPOUT_FIELDS)
    return SpoutExecutor(SpoutTask(proc), max_pending=max_pending)


def start_bolt(tmp: Path, bootstrap: str, fields: list[str], **headrace) -> BoltTask:
    conf = base_conf(**{"headrace.brokers": bootstrap,
                        **{f"headrace.{k}": v for k, v in headrace.items()}})
    proc = launch("headrace.storm.KafkaBolt", tmp / f"bolt-{time.monotonic_ns()}", conf,
                  "kafka-bolt", 5, [], sources={"spout": fields})
    return BoltTask(proc)


def offset_of(msg_id: str) -> tuple[int, int]:
    """(partition, offset) of a KafkaSpout message id ``topic:partition:offset``."""
    _, p, o = msg_id.rsplit(":", 2)
    return int(p), int(o)


def read_committed_values(bootstrap: str, topic: str, partitions: int, expect: int,
                          timeout: float = 30.0, settle: float = 1.0) -> list[bytes | None]:
    """Values of ``topic`` as a read_committed consumer sees them: read until
    ``expect`` arrived (or ``timeout``), then ``settle`` seconds more so that
    duplicates beyond ``expect`` are counted too."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": unique("reader"),
                  "enable.auto.commit": False, "isolation.level": "read_committed"})
    c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    out: list[bytes | None] = []
    deadline = time.monotonic() + timeout
    try:
        while len(out) < expect and time.monotonic() < deadline:
            out += [m.value() for m in c.consume(1000, 0.2) if m.error() is None]
        settle_end = time.monotonic() + settle
        while time.monotonic() < settle_end:
            out += [m.value() for m in c.consume(1000, 0.2) if m.error() is None]
    finally:
        c.close()
    return out


def end_offsets(bootstrap: str, topic: str, partitions: int) -> dict[int, int]:
    """partition -> log end offset (high watermark)."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": unique("ends")})
    try:
        return {p: c.get_watermark_offsets(TopicPartition(topic, p), 10)[1]
                for p in range(partitions)}
    finally:
        c.close()
