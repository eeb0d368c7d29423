"""Shared pieces of the Spark integration tests.

Spark starts slowly (tens of seconds on two cores), so every in-process Spark
test uses ONE SparkSession (``local[2]``) for the whole pytest session: the
``spark`` fixture returns the same object wherever it is imported, and the
session is stopped once at exit. The helpers talk to a real broker with
confluent-kafka.
"""
from __future__ import annotations

import atexit
import json
import logging
import os
import sys
from pathlib import Path
from typing import Iterable

import pytest

pyspark = pytest.importorskip("pyspark", minversion="4.2")
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

# Settings that make a tiny local Spark fast: few shuffle partitions, no UI,
# no progress bars, no empty micro-batches, and a JVM tuned for short runs
# (C1 JIT only, serial GC: starts about twice as fast on two cores).
SPARK_CONF = {
    "spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.shuffle.partitions": "2",
    "spark.default.parallelism": "2",
    "spark.sql.adaptive.enabled": "false",
    "spark.sql.streaming.noDataMicroBatches.enabled": "false",
    "spark.driver.memory": "1g",
    "spark.sql.session.timeZone": "UTC",
    # Socket timeout between the JVM and Python workers (default 15 s): a
    # loaded 2-core machine can be slower than that.
    "spark.python.authenticate.socketTimeout": "120s",
}

_SESSION = None
_QUIET = logging.getLogger("spark-tests.librdkafka")
_QUIET.addHandler(logging.NullHandler())
_QUIET.propagate = False


def quiet_config(bootstrap: str, **extra) -> dict:
    """Client settings for test helpers: librdkafka's log lines go nowhere
    (errors still surface as exceptions and delivery reports)."""
    return {"bootstrap.servers": bootstrap, "logger": _QUIET, **extra}


def spark_session():
    """The process-wide SparkSession with the headrace format registered."""
    global _SESSION
    if _SESSION is None:
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
        from pyspark.sql import SparkSession

        import headrace.spark

        builder = SparkSession.builder.master("local[2]").appName("headrace-tests")
        for key, value in SPARK_CONF.items():
            builder = builder.config(key, value)
        _SESSION = builder.getOrCreate()
        _SESSION.sparkContext.setLogLevel("ERROR")
        headrace.spark.register(_SESSION)
        atexit.register(_SESSION.stop)
    return _SESSION


@pytest.fixture(scope="session")
def spark():
    return spark_session()


def load_headrace(builder, bootstrap: str, **options: str):
    """``builder`` (spark.read or spark.readStream) in format headrace on
    ``bootstrap`` with ``options``, loaded: a DataFrame."""
    r = builder.format("headrace").option("kafka.bootstrap.servers", bootstrap)
    for k, v in options.items():
        r = r.option(k, v)
    return r.load()


def create_topic(bootstrap: str, name: str, partitions: int = 1, **config: str) -> None:
    admin = AdminClient(quiet_config(bootstrap))
    fut = admin.create_topics([NewTopic(name, partitions, 1, config=config)], request_timeout=30)
    fut[name].result(30)


def produce(bootstrap: str, topic: str, records: Iterable[dict]) -> None:
    """Sends records (dicts of produce() keyword arguments) and waits for
    every acknowledgement; fails on any delivery error."""
    errors: list = []
    p = Producer(quiet_config(bootstrap, acks="all", **{"linger.ms": 5}))
    for rec in records:
        p.produce(topic, on_delivery=lambda err, _m: err and errors.append(err), **rec)
        p.poll(0)
    assert p.flush(30) == 0 and not errors, errors


def produce_values(bootstrap: str, topic: str, values: Iterable[str], partitions: int = 1) -> None:
    """value i goes to partition i % partitions, in order."""
    produce(bootstrap, topic, ({"value": v.encode(), "partition": i % partitions}
                               for i, v in enumerate(values)))


def read_all(bootstrap: str, topic: str, partitions: int = 1, timeout: float = 30.0) -> list:
    """Every record of ``topic`` (up to the high watermarks taken now) as
    confluent-kafka Message objects, partition by partition."""
    c = Consumer(quiet_config(bootstrap, **{"group.id": "spark-tests-reader",
                                        "enable.auto.commit": False,
                                        "enable.partition.eof": True}))
    out = []
    try:
        for p in range(partitions):
            tp = TopicPartition(topic, p)
            low, high = c.get_watermark_offsets(tp, timeout=timeout)
            if high <= low:
                continue
            c.assign([TopicPartition(topic, p, low)])
            got = []
            while not got or got[-1].offset() < high - 1:
                msg = c.poll(timeout)
                assert msg is not None, f"timed out reading {topic}-{p}"
                if msg.error() is None:
                    got.append(msg)
                elif msg.error().code() != KafkaError._PARTITION_EOF:
                    raise AssertionError(msg.error())
            out.extend(got)
    finally:
        c.close()
    return out


def write_json_atomically(path: Path, data) -> None:
    """The idempotent sink's primitive: a file replaced in one rename, so a
    batch written twice leaves one copy."""
    tmp = path.with_name("." + path.name + ".tmp")
    tmp.write_text(json.dumps(data))
    os.replace(tmp, path)
