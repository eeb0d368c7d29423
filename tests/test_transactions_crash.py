"""Transactions under SIGKILL: the crash matrix (the broker killed at each step
of a transaction, then restarted) and a consume-transform-produce loop whose
worker (and once the broker) is killed repeatedly. Every transaction must end
wholly committed or wholly aborted for read_committed consumers, an
acknowledged commit must survive, the LSO must never block for good, and the
loop's output must hold every input record exactly once."""
from __future__ import annotations

import os
import random
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from broker_kafka_clients import ConfluentClient
from test_transactions import end_offsets, read_all, unique

TIMEOUT_S = 60.0
PARTITIONS = 8
BROKER_ARGS = ("--set", "transaction.abort.timed.out.transaction.cleanup.interval.ms=200",
               "--set", "group.initial.rebalance.delay.ms=0")
WORKER = Path(__file__).with_name("txn_ctp_worker.py")


def wait_stable(bootstrap: str, topic: str, partitions: int, timeout: float = 30.0) -> None:
    """Waits until read_committed's end (the LSO) equals the high watermark on
    every partition: no transaction holds the topic any more."""
    deadline = time.monotonic() + timeout
    while True:
        lso = end_offsets(bootstrap, topic, partitions, "read_committed")
        hw = end_offsets(bootstrap, topic, partitions, "read_uncommitted")
        if lso == hw:
            return
        assert time.monotonic() < deadline, f"LSO {lso} stuck below HW {hw}"
        time.sleep(0.2)


def producer(bootstrap: str, txn_id: str) -> Producer:
    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": txn_id,
                  "transaction.timeout.ms": 5000, "linger.ms": 1,
                  "message.timeout.ms": 5000})
    p.init_transactions(TIMEOUT_S)
    return p


def committed_values(bootstrap: str, topic: str) -> list[bytes]:
    return sorted(v for *_, v in read_all(bootstrap, topic, PARTITIONS, "read_committed"))


@pytest.mark.parametrize("step", ["after_add_partitions", "mid_produce", "after_end_txn",
                                  "during_end_txn"])
def test_broker_killed_at_each_step_of_a_transaction(broker_factory, step):
    b = broker_factory(None, *BROKER_ARGS)
    bs = b.bootstrap
    t = unique(f"crash-{step.replace('_', '')}")
    ConfluentClient(bs).create_topic(t, PARTITIONS)
    txn_id = unique("tid")
    p = producer(bs, txn_id)
    base = [f"base{i}".encode() for i in range(16)]
    p.begin_transaction()
    for i, v in enumerate(base):
        p.produce(t, v, partition=i % PARTITIONS)
    p.commit_transaction(TIMEOUT_S)
    mine = [f"{step}{i}".encode() for i in range(16)]

    acked_commit = False
    if step == "after_add_partitions":
        p.begin_transaction()
        for i, v in enumerate(mine):
            p.produce(t, v, partition=i % PARTITIONS)
        p.flush(TIMEOUT_S)  # AddPartitionsToTxn answered, records written
        b.kill()
    elif step == "mid_produce":
        p.begin_transaction()
        stop = threading.Event()

        def spam():
            i = 0
            while not stop.is_set():
                try:
                    p.produce(t, f"{step}{i}".encode(), partition=i % PARTITIONS)
                    p.poll(0)
                except BufferError:
                    time.sleep(0.001)
                i += 1
        th = threading.Thread(target=spam, daemon=True)
        th.start()
        time.sleep(0.5)
        b.kill()
        stop.set()
        th.join(10)
    elif step == "after_end_txn":
        p.begin_transaction()
        for i, v in enumerate(mine):
            p.produce(t, v, partition=i % PARTITIONS)
        p.commit_transaction(TIMEOUT_S)  # the decision is durable: it must survive
        acked_commit = True
        b.kill()  # at once: the markers may still be on their way
    else:  # during_end_txn: killed while the EndTxn is in flight
        p.begin_transaction()
        for i, v in enumerate(mine):
            p.produce(t, v, partition=i % PARTITIONS)
        p.flush(TIMEOUT_S)
        done = []
        th = threading.Thread(target=lambda: done.append(_try(p.commit_transaction, 10)),
                              daemon=True)
        th.start()
        time.sleep(random.uniform(0.0, 0.01))
        b.kill()
        th.join(30)
        acked_commit = done == [True]

    b.start_again()
    # Read what committed after the restart: the open transaction is aborted
    # at its timeout (no producer comes back), a decided one completes.
    wait_stable(bs, t, PARTITIONS)
    values = committed_values(bs, t)
    got_mine = [v for v in values if v.startswith(step.encode())]
    assert [v for v in values if v.startswith(b"base")] == sorted(base)
    if step in ("after_add_partitions", "mid_produce"):
        assert got_mine == []
    elif acked_commit:
        assert got_mine == sorted(mine)
    else:
        assert got_mine in ([], sorted(mine)), "a transaction was split by the crash"
    # The transactional id works again (fencing the old incarnation).
    p2 = producer(bs, txn_id)
    p2.begin_transaction()
    p2.produce(t, b"again", partition=0)
    p2.commit_transaction(TIMEOUT_S)
    assert b"again" in committed_values(bs, t)
    wait_stable(bs, t, PARTITIONS)


def _try(fn, *args) -> bool:
    try:
        fn(*args)
        return True
    except Exception:
        return False


def group_progress(bootstrap: str, group: str, topic: str, partitions: int) -> int:
    """Sum of the group's committed offsets on TOPIC (read_uncommitted, so a
    pending transactional commit does not hold the answer back)."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                  "enable.auto.commit": False, "isolation.level": "read_uncommitted"})
    try:
        tps = c.committed([TopicPartition(topic, p) for p in range(partitions)], 10.0)
        return sum(max(tp.offset, 0) for tp in tps)
    except Exception:
        return -1  # the broker is restarting: ask again
    finally:
        c.close()


def test_consume_transform_produce_killed_repeatedly_is_exactly_once(broker_factory):
    b = broker_factory(None, *BROKER_ARGS)
    bs = b.bootstrap
    src, dst = unique("ctp-in"), unique("ctp-out")
    client = ConfluentClient(bs)
    client.create_topic(src, 4)
    client.create_topic(dst, 4)
    n = 3000
    plain = Producer({"bootstrap.servers": bs, "linger.ms": 5})
    for i in range(n):
        plain.produce(src, f"v{i}".encode(), partition=i % 4)
    assert plain.flush(TIMEOUT_S) == 0
    group, txn_id = unique("ctp-group"), unique("ctp-tid")
    cmd = [sys.executable, str(WORKER), bs, src, dst, group, txn_id, "4", "20"]
    # Each kill waits for the group's committed progress to pass the next
    # mark, then lands after a random delay (mostly inside a transaction).
    # Progress, not wall time, decides: a fast worker cannot finish before
    # it was killed six times, a slow one is not killed before it started.
    marks = [n * k // 8 for k in range(1, 7)]
    rng = random.Random(7)
    kills = 0
    broker_killed = False
    failures: list[str] = []

    def start() -> subprocess.Popen:
        return subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                text=True)

    worker = start()
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline:
        if worker.poll() is not None:
            err = worker.stderr.read()
            if worker.returncode == 0:
                break
            failures.append(err.strip()[-300:])
            worker = start()
            continue
        if kills < len(marks) and group_progress(bs, group, src, 4) >= marks[kills]:
            time.sleep(rng.uniform(0.0, 0.1))
            worker.kill()
            worker.wait(10)
            worker.stderr.close()
            kills += 1
            if kills == 3 and not broker_killed:
                b.kill()
                b.start_again()
                broker_killed = True
            worker = start()
        time.sleep(0.02)
    else:
        worker.kill()
        pytest.fail(f"the worker did not finish in time; its failures: {failures[-3:]}")
    assert kills == len(marks), (kills, err, failures[-3:])
    assert broker_killed
    out = read_all(bs, dst, 4, "read_committed", expect=n)
    out += read_all(bs, dst, 4, "read_committed")[n:]  # nothing more
    keys = Counter(v.rsplit(b":", 1)[0] for *_, v in out)
    duplicated = sum(c - 1 for c in keys.values() if c > 1)
    expected = {f"{i % 4}:{i // 4}".encode() for i in range(n)}
    lost = len(expected - set(keys))
    assert (lost, duplicated, len(out)) == (0, 0, n)
    # read_uncommitted sees the aborted attempts too (the kills left some).
    assert len(read_all(bs, dst, 4, "read_uncommitted")) >= n
