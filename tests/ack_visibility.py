"""Issue 37, item 3: an acknowledged acks=1 write is visible at once to the
requests whose answer Kafka bounds by the high watermark (DeleteRecords,
ListOffsets LATEST), although the HW may not have passed it yet (an fsync or
a follower's fetch pending). Shared by the single-node and cluster tests."""
from __future__ import annotations

from confluent_kafka import KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, OffsetSpec


def check_acked_writes_visible(bootstrap: str, topic: str, rounds: int = 10) -> dict[str, int]:
    """Writes 2 records at acks=1, then at once asks ListOffsets LATEST (must be
    the end) and, after 2 more, DeleteRecords before the last acknowledged
    offset (must succeed), `rounds` times on partition 0. Returns the failures
    by kind ({} when clean)."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    producer = Producer({"bootstrap.servers": bootstrap, "acks": 1, "linger.ms": 0})
    failures: dict[str, int] = {}

    def failed(kind: str):
        failures[kind] = failures.get(kind, 0) + 1

    def write_two() -> int:
        offsets = []
        for v in (b"a", b"b"):
            producer.produce(topic, v, partition=0,
                             on_delivery=lambda err, msg: offsets.append(
                                 -1 if err else msg.offset()))
        assert producer.flush(30) == 0
        assert min(offsets) >= 0, offsets
        return max(offsets)

    tp = TopicPartition(topic, 0)
    for _ in range(rounds):
        last = write_two()
        (fut,) = admin.list_offsets({tp: OffsetSpec.latest()}, request_timeout=30).values()
        latest = fut.result(30)
        if latest.offset != last + 1:
            failed(f"ListOffsets LATEST {latest.offset} after an ack of offset {last}")
        last = write_two()
        (fut,) = admin.delete_records([TopicPartition(topic, 0, last)], request_timeout=30).values()
        try:
            fut.result(30)
        except KafkaException as e:
            failed(f"DeleteRecords {e.args[0].name()}")
    return failures
