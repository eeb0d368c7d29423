"""Reading a sink's output as a read_committed consumer does, and counting
what was lost or duplicated against the uniquely numbered input."""
from __future__ import annotations

import collections
import time
from typing import Iterable

from confluent_kafka import Consumer, KafkaError, TopicPartition

from headrace.admin import Admin
from spark_session import quiet_config

PREPARED = ("PrepareCommit", "PrepareAbort")


def wait_for_markers(bootstrap: str, topic: str, timeout: float = 60.0) -> None:
    """Returns once no transaction that wrote to ``topic`` is between its
    EndTxn and its markers. A committed transaction is visible to
    read_committed readers only once its markers are written, and the
    coordinator answers EndTxn before it writes them (as Kafka does): a
    reader that starts right after commit_transaction() returned could
    otherwise stop at the last stable offset, before that transaction."""
    admin = Admin(bootstrap, timeout=10)
    deadline = time.monotonic() + timeout
    while True:
        pending = [t.transactional_id for t in admin.transactions(PREPARED)
                   if any(tp == topic for tp, _ in t.partitions)]
        if not pending:
            return
        assert time.monotonic() < deadline, f"markers of {pending} on {topic} not written"
        time.sleep(0.05)


def read_committed_values(bootstrap: str, topic: str, partitions: int,
                          timeout: float = 60.0, text: bool = True) -> list:
    """Every committed (or non-transactional) record value of ``topic``,
    read with isolation.level=read_committed up to each partition's end,
    once the markers of the transactions committed so far are written;
    as text (bytes when ``text`` is False)."""
    wait_for_markers(bootstrap, topic, timeout)
    c = Consumer(quiet_config(bootstrap, **{"group.id": "spark-sink-check",
                                        "isolation.level": "read_committed",
                                        "enable.auto.commit": False,
                                        "enable.partition.eof": True}))
    out: list[str] = []
    try:
        c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        at_end: set[int] = set()
        deadline = time.monotonic() + timeout
        while len(at_end) < partitions:
            assert time.monotonic() < deadline, f"timed out reading {topic}: at end {at_end}"
            msg = c.poll(1.0)
            if msg is None:
                continue
            if msg.error() is None:
                out.append(msg.value().decode() if text else msg.value())
                at_end.discard(msg.partition())
            elif msg.error().code() == KafkaError._PARTITION_EOF:
                at_end.add(msg.partition())
            else:
                raise AssertionError(msg.error())
    finally:
        c.close()
    return out


def lost_and_duplicated(want: Iterable[str], got: Iterable[str]) -> tuple[int, int]:
    """(values of ``want`` missing from ``got``, extra copies in ``got``);
    values not in ``want`` fail the check."""
    want_set = set(want)
    counts = collections.Counter(got)
    strangers = set(counts) - want_set
    assert not strangers, f"values never sent: {sorted(strangers)[:10]}"
    return len(want_set - set(counts)), sum(n - 1 for n in counts.values())
