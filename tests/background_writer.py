"""A producer writing on a thread while a test moves things under it
(replicas between log directories, leaders): what it had acknowledged, and
what failed, to check against what is stored afterwards."""
from __future__ import annotations

import threading
from typing import Callable

from confluent_kafka import Producer


def start_writer(bootstrap: str, topic: str, value: Callable[[int], bytes],
                 timeout_s: int = 30, **conf):
    """An idempotent acks=all producer writing value(i), i = 0, 1, ..., to
    partition 0 on a thread until `stop` is set, then flushing. Returns
    (acked offset -> value, failures, stop, thread); records still
    undelivered after `timeout_s` of flushing count as a failure."""
    acked: dict[int, bytes] = {}
    failures: list = []
    stop = threading.Event()

    def write():
        p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True,
                      "linger.ms": 2, "message.timeout.ms": timeout_s * 1000, **conf})

        def report(err, msg):
            if err is None:
                acked[msg.offset()] = msg.value()
            else:
                failures.append(err)
        i = 0
        while not stop.is_set():
            p.produce(topic, value=value(i), partition=0, on_delivery=report)
            p.poll(0)
            i += 1
            if i % 100 == 0:
                stop.wait(0.002)  # paced: the broker's other work goes on
        left = p.flush(timeout_s)
        if left:
            failures.append(f"{left} records not delivered after {timeout_s} s")

    writer = threading.Thread(target=write)
    writer.start()
    return acked, failures, stop, writer
