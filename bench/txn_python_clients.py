"""The produce figures of txn_bench.py from the two pure-Python clients:
kafka-python's KafkaProducer and aiokafka's AIOKafkaProducer, idempotent
vs transactional (commit every `per_txn` records), the same shape as
txn_bench's confluent-kafka figures: `n` records of the same payload round
robin over the topic's partitions, acks=all, linger 5 ms, after a warm-up
record (the transactional one in a committed transaction) so connecting,
InitProducerId and metadata are outside the clock. Each returns msgs/s.

These clients spend far more time per record than librdkafka, so a
transaction's fixed cost weighs less against the records it carries."""
from __future__ import annotations

import asyncio
import time
import uuid

from aiokafka import AIOKafkaProducer
from kafka import KafkaProducer

CLIENTS = ("kafka-python", "aiokafka")
_COMMON = {"acks": "all", "linger_ms": 5}


def _kafka_python(bs: str, topic: str, n: int, payload: bytes, partitions: int,
                  per_txn: int | None) -> float:
    if per_txn is None:
        p = KafkaProducer(bootstrap_servers=bs, enable_idempotence=True, **_COMMON)
        p.send(topic, payload, partition=0).get(60)
    else:
        p = KafkaProducer(bootstrap_servers=bs, transactional_id=f"bench-kp-{uuid.uuid4().hex[:8]}",
                          **_COMMON)
        p.init_transactions()
        p.begin_transaction()
        p.send(topic, payload, partition=0)
        p.commit_transaction()
    try:
        t0 = time.perf_counter()
        step = per_txn or n
        for start in range(0, n, step):
            if per_txn:
                p.begin_transaction()
            for i in range(start, min(n, start + step)):
                p.send(topic, payload, partition=i % partitions)
            if per_txn:
                p.commit_transaction()
        p.flush()
        return n / (time.perf_counter() - t0)
    finally:
        p.close()


async def _aiokafka(bs: str, topic: str, n: int, payload: bytes, partitions: int,
                    per_txn: int | None) -> float:
    if per_txn is None:
        p = AIOKafkaProducer(bootstrap_servers=bs, enable_idempotence=True, **_COMMON)
    else:
        p = AIOKafkaProducer(bootstrap_servers=bs,
                             transactional_id=f"bench-ak-{uuid.uuid4().hex[:8]}", **_COMMON)
    await p.start()
    try:
        if per_txn is None:
            await p.send_and_wait(topic, payload, partition=0)
        else:
            async with p.transaction():
                await p.send(topic, payload, partition=0)
        t0 = time.perf_counter()
        step = per_txn or n
        for start in range(0, n, step):
            if per_txn:
                await p.begin_transaction()
            for i in range(start, min(n, start + step)):
                await p.send(topic, payload, partition=i % partitions)
            if per_txn:
                await p.commit_transaction()
        await p.flush()
        return n / (time.perf_counter() - t0)
    finally:
        await p.stop()


def produce(client: str, bs: str, topic: str, n: int, payload: bytes, partitions: int,
            per_txn: int | None = None) -> float:
    """msgs/s of `client` (one of CLIENTS): idempotent when per_txn is None."""
    if client == "kafka-python":
        return _kafka_python(bs, topic, n, payload, partitions, per_txn)
    if client == "aiokafka":
        return asyncio.run(_aiokafka(bs, topic, n, payload, partitions, per_txn))
    raise ValueError(f"unknown client {client!r} (one of {', '.join(CLIENTS)})")
