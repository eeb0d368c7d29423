"""Storage faults through a real broker process and a real client.

The broker is started with the testing hook HEADRACE_FAULT_INJECT
(docs/configuration.md), which puts a FaultInjectingEnv under every file it
writes: here, after a number of successful calls, either fdatasync of one
partition's files fails with EIO, or its segment writes fail with ENOSPC. A confluent-kafka producer (acks=all,
no retries) produces one record at a time; the test proves that
- the fault reaches the client as KAFKA_STORAGE_ERROR, and every record
  produced after it fails too (the partition's log is offline);
- nothing is acknowledged that is not durable: after a restart without the
  fault, every acknowledged record is in the log (lost == 0);
- the broker says once, in one line, that the log went offline.
A malformed hook value stops the broker from starting.
"""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

ck = pytest.importorskip("confluent_kafka")

TOPIC = "storage-faults"
MAX_RECORDS = 200

# (HEADRACE_FAULT_INJECT rule, errno name, how the broker's offline line calls it)
FAULTS = [
    (f"fsync:path={TOPIC}-0/:after=25:errno=EIO", "EIO", "I/O error"),
    (f"write:path={TOPIC}-0/000:after=20:errno=ENOSPC", "ENOSPC", "disk full"),
]


def _producer(bootstrap: str):
    return ck.Producer({
        "bootstrap.servers": bootstrap,
        "acks": "all",
        "retries": 0,
        "enable.idempotence": False,
        "linger.ms": 0,
        "message.timeout.ms": 10000,
    })


def _produce_one(producer, value: bytes):
    """Produces one record and waits for its delivery report: (error, offset)."""
    result = []
    producer.produce(TOPIC, value=value, partition=0,
                     on_delivery=lambda err, msg: result.append((err, msg.offset())))
    producer.flush(15)
    assert result, f"no delivery report for {value!r}"
    return result[0]


def _read_all(bootstrap: str) -> dict[int, bytes]:
    """Every record of partition 0 up to its high watermark, by offset."""
    consumer = ck.Consumer({"bootstrap.servers": bootstrap, "group.id": "storage-faults-check",
                            "enable.auto.commit": False})
    try:
        tp = ck.TopicPartition(TOPIC, 0)
        _, high = consumer.get_watermark_offsets(tp, timeout=15)
        consumer.assign([ck.TopicPartition(TOPIC, 0, 0)])
        out: dict[int, bytes] = {}
        while len(out) < high:
            msg = consumer.poll(10)
            assert msg is not None, f"read stalled at {len(out)} of {high} records"
            assert msg.error() is None, msg.error()
            out[msg.offset()] = msg.value()
        return out
    finally:
        consumer.close()


@pytest.mark.parametrize("rule,errno_name,offline_word", FAULTS,
                         ids=["fsync-EIO", "write-ENOSPC"])
def test_failed_write_or_fsync_is_never_acknowledged_and_acknowledged_records_survive(
        broker_factory, tmp_path, monkeypatch, rule, errno_name, offline_word):
    data_dir = tmp_path / "data"
    monkeypatch.setenv("HEADRACE_FAULT_INJECT", rule)
    broker = broker_factory(data_dir)
    monkeypatch.delenv("HEADRACE_FAULT_INJECT")

    producer = _producer(broker.bootstrap)
    acked: dict[int, bytes] = {}
    errors = []
    for i in range(MAX_RECORDS):
        value = b"record-%04d" % i
        err, offset = _produce_one(producer, value)
        if err is None:
            assert not errors, f"{value!r} acknowledged at {offset} after the fault ({errors[0]})"
            acked[offset] = value
        else:
            errors.append(err)
            if len(errors) == 5:
                break
    assert errors, f"the fault never hit in {MAX_RECORDS} records"
    assert acked, "the fault hit before any record was acknowledged"
    assert all(e.code() == ck.KafkaError.KAFKA_STORAGE_ERROR for e in errors), errors
    producer.flush(5)
    del producer

    offline = [line for line in broker.stderr.splitlines() if "is offline" in line]
    assert len(offline) == 1, broker.stderr
    assert f"{TOPIC}-0" in offline[0] and errno_name in offline[0], offline[0]
    assert offline_word in offline[0], offline[0]

    # The offline log cannot be closed cleanly: the broker says so and exits non-zero.
    broker.stop(expect_code=2)
    assert "headrace: error:" in broker.stderr and errno_name in broker.stderr, broker.stderr
    broker.start_again()
    assert "HEADRACE_FAULT_INJECT" not in broker.stderr

    stored = _read_all(broker.bootstrap)
    lost = {o: v for o, v in acked.items() if stored.get(o) != v}
    assert len(lost) == 0, f"{len(lost)} acknowledged records lost or changed: {sorted(lost)[:10]}"

    # Healthy again: the partition takes and acknowledges new records.
    producer = _producer(broker.bootstrap)
    err, offset = _produce_one(producer, b"after-restart")
    assert err is None and offset >= len(acked), (err, offset)


def test_malformed_fault_hook_refuses_to_start(tmp_path):
    env = dict(os.environ, HEADRACE_FAULT_INJECT="explode:after=1")
    proc = subprocess.run([sys.executable, "-m", "headrace.cli", "broker", "--data-dir",
                           str(tmp_path / "data"), "--listen", "127.0.0.1:0"],
                          env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2, proc
    assert "HEADRACE_FAULT_INJECT: fault rule: unknown operation 'explode'" in proc.stderr, \
        proc.stderr
