"""The spouts' Kafka consumers: their librdkafka settings, the start offset of a
newly assigned partition (first poll offset strategy), and the commit
metadata that tells which topology deployment made a commit."""
from __future__ import annotations

import json
from typing import Any, Mapping

from confluent_kafka import OFFSET_BEGINNING, OFFSET_END, TopicPartition

from .config import ConfigError, FirstPollOffsetStrategy, ProcessingGuarantee

# Properties the spout owns: overriding them would break its guarantees.
_OWNED = {"enable.auto.commit": "the spout commits offsets itself",
          "enable.auto.offset.store": "the spout commits offsets itself",
          "group.id": "use headrace.group",
          "enable.partition.eof": "the spout tracks which partitions are at their end",
          "bootstrap.servers": "use headrace.brokers"}


def consumer_config(settings: Mapping[str, Any], group: str, client_id: str) -> dict[str, Any]:
    """librdkafka settings of the spout's consumer; headrace.consumer adds to
    (never replaces) the properties the spout owns."""
    overrides = dict(settings.get("consumer") or {})
    for key, why in _OWNED.items():
        if key in overrides:
            raise ConfigError(f"headrace.consumer: {key} cannot be set ({why})")
    strategy = str(overrides.get("partition.assignment.strategy", ""))
    if "cooperative" in strategy:
        raise ConfigError("headrace.consumer: partition.assignment.strategy must be an eager "
                          "assignor (range, roundrobin): the spout drops in-flight state "
                          "of every revoked partition on each rebalance")
    exactly_once = settings["guarantee"] is ProcessingGuarantee.EXACTLY_ONCE
    if exactly_once and overrides.get("isolation.level", "read_committed") != "read_committed":
        raise ConfigError("headrace.consumer: isolation.level must be read_committed with "
                          "headrace.guarantee exactly_once (aborted output must not be read)")
    earliest = settings["first_poll"] in (FirstPollOffsetStrategy.EARLIEST,
                                          FirstPollOffsetStrategy.UNCOMMITTED_EARLIEST)
    conf: dict[str, Any] = {
        "client.id": client_id,
        "auto.offset.reset": "earliest" if earliest else "latest",
    }
    conf.update(settings.get("kafka") or {})  # headrace.kafka: security settings
    conf.update(overrides)
    conf.update({"bootstrap.servers": settings["brokers"], "group.id": group,
                 "enable.auto.commit": False, "enable.auto.offset.store": False,
                 "enable.partition.eof": True})
    if exactly_once:
        conf["isolation.level"] = "read_committed"
    return conf


# Properties the share spout owns.
_SHARE_OWNED = {"share.acknowledgement.mode": "the spout acknowledges each tuple's record "
                                              "explicitly",
                "group.id": "use headrace.group",
                "bootstrap.servers": "use headrace.brokers"}


def share_consumer_config(settings: Mapping[str, Any], group: str,
                          client_id: str) -> dict[str, Any]:
    """librdkafka settings of the ShareSpout's ShareConsumer: explicit
    acknowledgement, ``headrace.max_poll_records`` as ``max.poll.records``;
    headrace.consumer adds to (never replaces) what the spout owns."""
    overrides = dict(settings.get("consumer") or {})
    for key, why in _SHARE_OWNED.items():
        if key in overrides:
            raise ConfigError(f"headrace.consumer: {key} cannot be set ({why})")
    conf: dict[str, Any] = {"client.id": client_id,
                            "max.poll.records": settings["max_poll_records"]}
    conf.update(settings.get("kafka") or {})
    conf.update(overrides)
    conf.update({"bootstrap.servers": settings["brokers"], "group.id": group,
                 "share.acknowledgement.mode": "explicit"})
    return conf


def subscription(settings: Mapping[str, Any]) -> list[str]:
    """The subscribe() list: the topics, or the pattern as librdkafka's regex
    form (a leading '^')."""
    pattern = settings.get("topic_pattern")
    if pattern:
        return [pattern if pattern.startswith("^") else "^" + pattern]
    return list(settings["topics"])


def commit_metadata(storm_id: str, task_id: Any) -> str:
    """Stored with every commit, so EARLIEST/LATEST can tell a restart of
    this deployment (resume) from a new deployment (start over)."""
    return json.dumps({"topology": storm_id, "task": task_id}, separators=(",", ":"))


def _committed_by(metadata: str | None) -> str | None:
    try:
        return json.loads(metadata or "").get("topology")
    except (ValueError, AttributeError):
        return None


def start_offset(strategy: FirstPollOffsetStrategy, committed: TopicPartition,
                 storm_id: str) -> int:
    """Where a newly assigned partition starts reading.

    committed: the group's committed offset of the partition (offset < 0 if
    none) with its metadata.
    """
    has_commit = committed.offset >= 0
    this_deployment = has_commit and _committed_by(committed.metadata) == storm_id
    if strategy is FirstPollOffsetStrategy.EARLIEST:
        return committed.offset if this_deployment else OFFSET_BEGINNING
    if strategy is FirstPollOffsetStrategy.LATEST:
        return committed.offset if this_deployment else OFFSET_END
    if strategy is FirstPollOffsetStrategy.UNCOMMITTED_EARLIEST:
        return committed.offset if has_commit else OFFSET_BEGINNING
    return committed.offset if has_commit else OFFSET_END
