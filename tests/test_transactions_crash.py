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
    return sorted(v for *_, v in read_all(bootstrap, topic, PARTITIONS, "read_committed",
                                          idle_s=1.5))


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
    plain.flush(TIMEOUT_S)
    group, txn_id = unique("ctp-group"), unique("ctp-tid")
    cmd = [sys.executable, str(WORKER), bs, src, dst, group, txn_id, "4", "50"]
    rng = random.Random(7)
    kills = restarts = 0
    worker = None
    deadline = time.monotonic() + 240
    broker_killed = False
    while time.monotonic() < deadline:
        if worker is None or worker.poll() is not None:
            if worker is not None and worker.returncode == 0:
                break
            worker = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            restarts += 1
        time.sleep(rng.uniform(0.5, 2.0))
        if kills < 6 and worker.poll() is None:
            worker.kill()
            worker.wait(10)
            kills += 1
            if kills == 3 and not broker_killed:
                b.kill()
                b.start_again()
                broker_killed = True
    else:
        worker.kill()
        pytest.fail("the worker did not finish in time")
    assert kills == 6 and broker_killed
    out = read_all(bs, dst, 4, "read_committed", expect=n)
    out += read_all(bs, dst, 4, "read_committed", idle_s=1.0)[n:]  # nothing more
    keys = Counter(v.rsplit(b":", 1)[0] for *_, v in out)
    duplicated = sum(c - 1 for c in keys.values() if c > 1)
    expected = {f"{i % 4}:{i // 4}".encode() for i in range(n)}
    lost = len(expected - set(keys))
    assert (lost, duplicated, len(out)) == (0, 0, n)
    # read_uncommitted sees the aborted attempts too (the kills left some).
    assert len(read_all(bs, dst, 4, "read_uncommitted", idle_s=1.0)) >= n
