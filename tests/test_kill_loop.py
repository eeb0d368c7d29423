"""A kill -9 loop on the log writers' path (issue 32): producers with
acks=all and acks=1 write to eight partitions of one broker whose appends
run on its log writers (headrace.log.writer.threads, default 4) and whose
segments roll every 1 MiB (rolls and index writes on the writers too); the
broker is SIGKILLed mid-stream, restarted on the same data directory, and
after every restart each record any producer had acknowledged before the
kill is read back at its acknowledged offset with its value, the logs
dense. The default run kills 3 times; `slow` 10 times.
"""
from __future__ import annotations

import random
import threading
import time

import pytest

from test_broker_restart import _assert_dense, _create, _read_all

PARTITIONS = 8
SCENARIOS = [pytest.param(3, id="three"), pytest.param(10, id="ten", marks=pytest.mark.slow)]


class _Writer(threading.Thread):
    """Produces until stopped; ``acked`` holds what the broker acknowledged
    ({(partition, offset): value}, filled inside poll on this thread)."""

    def __init__(self, bootstrap: str, topic: str, acks: str, tag: str):
        super().__init__(daemon=True)
        from confluent_kafka import Producer
        self.topic, self.tag = topic, tag
        self.producer = Producer({"bootstrap.servers": bootstrap, "acks": acks,
                                  "linger.ms": 2, "retries": 0, "message.timeout.ms": 5000,
                                  "queue.buffering.max.messages": 20000})
        self.acked: dict[tuple[int, int], bytes] = {}
        self.stop = threading.Event()
        self.lock = threading.Lock()

    def _on_delivery(self, err, m) -> None:
        if err is None:
            with self.lock:
                self.acked[(m.partition(), m.offset())] = m.value()

    def run(self) -> None:
        n = 0
        filler = b"x" * 200
        while not self.stop.is_set():
            try:
                self.producer.produce(self.topic, value=b"%s-%d-" % (self.tag.encode(), n) + filler,
                                      partition=n % PARTITIONS, on_delivery=self._on_delivery)
                n += 1
            except BufferError:
                self.producer.poll(0.01)
            self.producer.poll(0)

    def halt(self) -> dict[tuple[int, int], bytes]:
        """Stops producing; returns what was acknowledged before the call
        (what is still in flight is dropped unacknowledged)."""
        with self.lock:
            snapshot = dict(self.acked)
        self.stop.set()
        self.join(30)
        self.producer.purge()
        self.producer.flush(10)
        return snapshot


@pytest.mark.timeout(600)
@pytest.mark.parametrize("kills", SCENARIOS)
def test_sigkill_loop_on_the_log_writers_loses_no_acknowledged_record(broker_factory, kills):
    b = broker_factory(None, "--set", "headrace.log.writer.threads=4",
                       "--set", "log.segment.bytes=1048576")
    _create(b.bootstrap, "kill-loop", PARTITIONS)
    rng = random.Random(kills)
    acked: dict[tuple[int, int], bytes] = {}
    for round_ in range(kills):
        writers = [_Writer(b.bootstrap, "kill-loop", acks, f"r{round_}{acks}")
                   for acks in ("all", "1")]
        for w in writers:
            w.start()
        deadline = time.monotonic() + 60
        while sum(len(w.acked) for w in writers) < 5000:   # mid-stream, not before it
            assert time.monotonic() < deadline, "fewer than 5000 records acknowledged in 60 s"
            time.sleep(0.05)
        time.sleep(rng.uniform(0.0, 1.0))
        b.kill()
        for w in writers:
            before = w.halt()
            assert not set(before) & set(acked), "an acknowledged offset was handed out twice"
            acked.update(before)
        b.start_again()
        got, _ = _read_all(b.bootstrap, "kill-loop", PARTITIONS)
        _assert_dense(got, PARTITIONS)
        lost = [k for k, v in acked.items() if k not in got or got[k][1] != v]
        assert not lost, (f"after kill {round_ + 1}: {len(lost)} of {len(acked)} acknowledged "
                          f"records lost or changed, e.g. {sorted(lost)[:5]}")
    print(f"{kills} SIGKILLs mid-stream: {len(acked)} acknowledged records, 0 lost")
