"""Reproduces the broker deadlock the Spark sink tests hit (see
tests/spark_sink_check.py), without Spark: two threads each run the
at-most-once sink's pattern - a transactional producer commits an
offsets-only transaction (the claim), a plain acks=1 producer sends 500
records to the same topic, then a second offsets-only transaction.

    python tests/spark_sink_deadlock_repro.py

Prints "stuck: []" when the broker survived; on this machine (2026-11-25)
2 of 5 runs hung: commit_transaction / AddOffsetsToTxn time out and the
broker then ignores SIGTERM (exit code 1). Run it a few times. Not a pytest
test (it would hang the run).
"""
from __future__ import annotations

import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from confluent_kafka import Consumer, Producer, TopicPartition  # noqa: E402

from broker_process import BrokerProcess  # noqa: E402
from spark_session import create_topic  # noqa: E402


def main() -> int:
    broker = BrokerProcess(tempfile.mkdtemp()).start()
    bs = broker.bootstrap
    create_topic(bs, "out", partitions=2)
    plain = Producer({"bootstrap.servers": bs, "acks": "1", "enable.idempotence": False,
                      "linger.ms": 5})
    stuck: list = []

    def worker(tid: str) -> None:
        for n in range(30):
            name = f"{tid}-{n % 4}"
            p = Producer({"bootstrap.servers": bs, "transactional.id": name})
            c = Consumer({"bootstrap.servers": bs, "group.id": name,
                          "isolation.level": "read_committed"})
            try:
                p.init_transactions(20)
                c.committed([TopicPartition("out", 0)], timeout=20)
                for k in range(2):
                    if k == 1:
                        for i in range(500):
                            plain.produce("out", value=b"v%d" % i, partition=i % 2)
                            plain.poll(0)
                        plain.flush(20)
                    p.begin_transaction()
                    p.send_offsets_to_transaction(
                        [TopicPartition("out", 0, n * 2 + k + 1)], c.consumer_group_metadata(), 20)
                    p.commit_transaction(20)
            except Exception as e:   # noqa: BLE001
                stuck.append((tid, n, str(e)))
                return
            finally:
                c.close()

    threads = [threading.Thread(target=worker, args=(f"t{i}",)) for i in range(2)]
    t0 = time.time()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    print(f"elapsed {time.time() - t0:.1f}s stuck: {stuck}", flush=True)
    broker.kill()
    return 1 if stuck else 0


if __name__ == "__main__":
    sys.exit(main())
