"""A consume-transform-produce worker with exactly-once output, for the kill
tests (tests/test_transactions_crash.py): run as a separate process and
SIGKILLed at will.

    python txn_ctp_worker.py BOOTSTRAP INPUT OUTPUT GROUP TXN_ID PARTITIONS BATCH

Reads INPUT (partitions 0..PARTITIONS-1, assigned, from the group's committed
offsets), writes one output record per input record (value
"<partition>:<offset>:<input value>") and commits the consumed offsets in the
same transaction. Exits 0 once every partition's committed offset reached its
end; any error exits 1 (the test starts it again: the transactional id fences
the previous incarnation and aborts its open transaction).
"""
from __future__ import annotations

import sys
import time

from confluent_kafka import Consumer, Producer, TopicPartition

TIMEOUT_S = 30.0


def main() -> int:
    bootstrap, src, dst, group, txn_id, partitions, batch = sys.argv[1:8]
    partitions, batch = int(partitions), int(batch)
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                         "enable.auto.commit": False, "isolation.level": "read_committed",
                         "auto.offset.reset": "earliest"})
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": txn_id,
                         "transaction.timeout.ms": 10000, "linger.ms": 2})
    # First fence the killed incarnation, which aborts its open transaction
    # and with it its pending offset commit: read before that, the group's
    # offsets stay unstable (UNSTABLE_OFFSET_COMMIT) until the transaction
    # times out, 10 s per kill that landed inside one.
    producer.init_transactions(TIMEOUT_S)
    tps = [TopicPartition(src, p) for p in range(partitions)]
    committed = consumer.committed(tps, TIMEOUT_S)
    consumer.assign([TopicPartition(src, tp.partition, max(tp.offset, 0)) for tp in committed])
    ends = {p: consumer.get_watermark_offsets(TopicPartition(src, p), TIMEOUT_S)[1]
            for p in range(partitions)}
    position = {tp.partition: max(tp.offset, 0) for tp in committed}
    started = dict(position)
    while any(position[p] < ends[p] for p in range(partitions)):
        msgs = consumer.consume(batch, 1.0)
        msgs = [m for m in msgs if m.error() is None]
        if not msgs:
            continue
        producer.begin_transaction()
        for m in msgs:
            producer.produce(dst, f"{m.partition()}:{m.offset()}:".encode() + m.value(),
                             partition=m.partition())
            position[m.partition()] = m.offset() + 1
        offsets = [TopicPartition(src, p, position[p]) for p in range(partitions)]
        producer.send_offsets_to_transaction(offsets, consumer.consumer_group_metadata(),
                                             TIMEOUT_S)
        producer.commit_transaction(TIMEOUT_S)
    consumer.close()
    print(f"done: from {started} to the ends {ends}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Exception as e:  # any failure: exit 1, the test restarts the worker
        print(f"worker failed: {e!r}", file=sys.stderr)
        time.sleep(0.1)
        sys.exit(1)
