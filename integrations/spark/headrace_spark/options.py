"""Parsing and validation of the data source options.

The names mirror Spark's built-in Kafka source and sink so that a job moves
over by changing the format name. Spark hands options over case-insensitively
(keys arrive lower-cased), so every lookup here is lower-case.

Errors are ``ValueError`` subclasses with a message that names the option, as
Spark's Kafka source does for the same mistakes.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Mapping

from ..client_settings import ClientSettingsError, from_java
from .offsets import EARLIEST, LATEST, OffsetSpec, parse_offset_spec, parse_timestamp_spec
from .option_error import HeadraceOptionError  # noqa: F401 - raised here, and imported from here

STRATEGIES = ("assign", "subscribe", "subscribepattern")
ISOLATION_LEVELS = ("read_uncommitted", "read_committed")
DELIVERY_GUARANTEES = ("at-least-once", "at-most-once", "exactly-once")

# Consumer settings the source owns (as in Spark's Kafka source, which
# refuses the same keys): offsets come from the checkpoint, never from the
# group, and records are always raw bytes.
_SOURCE_FORBIDDEN = ("auto.offset.reset", "enable.auto.commit", "key.deserializer",
                     "value.deserializer", "interceptor.classes")
_SINK_FORBIDDEN = ("key.serializer", "value.serializer", "interceptor.classes")


def kafka_passthrough(options: Mapping[str, str], forbidden: tuple[str, ...]) -> dict[str, str]:
    """The ``kafka.*`` options with the prefix removed, for confluent-kafka.

    REQUIRES: ``kafka.bootstrap.servers`` is among them."""
    conf = {k[len("kafka."):]: str(v) for k, v in options.items() if k.lower().startswith("kafka.")}
    conf = {k.lower(): v for k, v in conf.items()}
    try:  # Spark users pass Kafka's (Java) client names: sasl.jaas.config, ssl.truststore.*
        conf = from_java(conf)
    except ClientSettingsError as e:
        raise HeadraceOptionError(f"Option 'kafka.*': {e}") from None
    if not conf.get("bootstrap.servers"):
        raise HeadraceOptionError("Option 'kafka.bootstrap.servers' must be specified for "
                                  "configuring the Kafka consumer/producer")
    for key in forbidden:
        if key in conf:
            raise HeadraceOptionError(
                f"Kafka option '{key}' is not supported: the headrace data source manages it "
                f"itself")
    return conf


def _bool(options: Mapping[str, str], name: str, default: bool) -> bool:
    raw = options.get(name)
    if raw is None:
        return default
    text = str(raw).strip().lower()
    if text not in ("true", "false"):
        raise HeadraceOptionError(f"Option '{name}' must be 'true' or 'false', got {raw!r}")
    return text == "true"


def _positive_int(options: Mapping[str, str], name: str) -> int | None:
    raw = options.get(name)
    if raw is None:
        return None
    try:
        value = int(str(raw).strip())
    except ValueError:
        raise HeadraceOptionError(f"Option '{name}' must be a positive integer, got {raw!r}")
    if value <= 0:
        raise HeadraceOptionError(f"Option '{name}' must be a positive integer, got {raw!r}")
    return value


@dataclass(frozen=True)
class TopicSelection:
    """Which partitions a source reads: exactly one of the three strategies.

    ``value`` is the topic list (subscribe), the regular expression
    (subscribePattern, matched against the whole topic name) or the
    ``{"topic": [partitions]}`` mapping (assign)."""

    strategy: str
    value: Any

    @staticmethod
    def parse(options: Mapping[str, str]) -> "TopicSelection":
        given = [s for s in STRATEGIES if options.get(s) not in (None, "")]
        if len(given) != 1:
            raise HeadraceOptionError(
                "Exactly one of the options 'assign', 'subscribe' or 'subscribePattern' must be "
                f"specified, got {len(given)}")
        strategy = given[0]
        raw = str(options[strategy]).strip()
        if strategy == "subscribe":
            topics = tuple(t.strip() for t in raw.split(",") if t.strip())
            if not topics:
                raise HeadraceOptionError("Option 'subscribe' lists no topic")
            return TopicSelection(strategy, topics)
        if strategy == "subscribepattern":
            try:
                re.compile(raw)
            except re.error as e:
                raise HeadraceOptionError(f"Option 'subscribePattern' is not a valid regular "
                                          f"expression: {e}")
            return TopicSelection(strategy, raw)
        return TopicSelection(strategy, _parse_assign(raw))


def _parse_assign(raw: str) -> tuple[tuple[str, int], ...]:
    try:
        data = json.loads(raw)
        pairs = [(str(t), int(p)) for t, parts in data.items() for p in parts]
    except (ValueError, AttributeError, TypeError):
        raise HeadraceOptionError(
            f"Option 'assign' must be JSON like {{\"topicA\":[0,1],\"topicB\":[2]}}, got {raw!r}")
    if not pairs:
        raise HeadraceOptionError("Option 'assign' lists no partition")
    return tuple(sorted(set(pairs)))


@dataclass(frozen=True)
class SourceOptions:
    """Everything a reader needs; picklable (it travels to the executors)."""

    kafka_conf: dict[str, str]
    topics: TopicSelection
    starting: OffsetSpec
    ending: OffsetSpec | None
    starting_timestamps: Any = None   # int (all partitions) or {(topic, partition): ms}
    timestamp_strategy: str = "error"
    max_offsets_per_trigger: int | None = None
    min_partitions: int | None = None
    fail_on_data_loss: bool = True
    include_headers: bool = False
    poll_timeout_ms: int = 120_000
    commit_group_id: str | None = None
    group_id_prefix: str = "spark-kafka-source"
    job_id: str | None = None   # batch reads: record the plan once, replay it on reruns
    value_format: Any = None    # registry_format.RegistryFormat: valueFormat
    key_format: Any = None      # the same for keyFormat
    extra: dict[str, str] = field(default_factory=dict)

    @property
    def isolation_level(self) -> str:
        """``kafka.isolation.level``: read_uncommitted (Spark's default) or
        read_committed (stop at the last stable offset, skip aborted records)."""
        return self.kafka_conf.get("isolation.level", ISOLATION_LEVELS[0])


def parse_source_options(options: Mapping[str, str], streaming: bool) -> SourceOptions:
    """Validates the read options (batch when ``streaming`` is False) the way
    Spark's Kafka source does, and returns them parsed."""
    from .registry_format import parse_registry_format   # it imports this module
    opts = {str(k).lower(): v for k, v in options.items()}
    conf = kafka_passthrough(opts, _SOURCE_FORBIDDEN)
    level = conf.get("isolation.level", ISOLATION_LEVELS[0]).strip().lower()
    if level not in ISOLATION_LEVELS:
        raise HeadraceOptionError(f"Option 'kafka.isolation.level' must be one of "
                                  f"{', '.join(ISOLATION_LEVELS)}; got {conf['isolation.level']!r}")
    conf["isolation.level"] = level   # Spark's default, not librdkafka's (read_committed)
    topics = TopicSelection.parse(opts)
    starting = parse_offset_spec(opts.get("startingoffsets"), "startingOffsets",
                                 default="latest" if streaming else "earliest")
    ending = None
    if streaming:
        for name in ("endingoffsets", "endingtimestamp", "endingoffsetsbytimestamp"):
            if name in opts:
                raise HeadraceOptionError(f"Option '{name}' is not supported for streaming queries")
    else:
        ending = parse_offset_spec(opts.get("endingoffsets"), "endingOffsets", default="latest")
        _check_batch_bounds(starting, ending)
    strategy = str(opts.get("startingoffsetsbytimestampstrategy", "error")).lower()
    if strategy not in ("error", "latest"):
        raise HeadraceOptionError("Option 'startingOffsetsByTimestampStrategy' must be 'error' "
                                  f"or 'latest', got {strategy!r}")
    poll = _positive_int(opts, "kafkaconsumer.polltimeoutms")
    job_id = _identifier(opts, "jobId")
    if streaming and job_id is not None:
        raise HeadraceOptionError("Option 'jobId' is for batch reads; a streaming query's "
                                  "plans are recorded in its checkpoint")
    return SourceOptions(
        kafka_conf=conf, topics=topics, starting=starting, ending=ending,
        starting_timestamps=parse_timestamp_spec(opts.get("startingtimestamp"),
                                                 opts.get("startingoffsetsbytimestamp")),
        timestamp_strategy=strategy,
        max_offsets_per_trigger=_positive_int(opts, "maxoffsetspertrigger"),
        min_partitions=_positive_int(opts, "minpartitions"),
        fail_on_data_loss=_bool(opts, "failondataloss", True),
        include_headers=_bool(opts, "includeheaders", False),
        poll_timeout_ms=poll if poll is not None else 120_000,
        commit_group_id=opts.get("commitoffsetstogroup") or None,
        group_id_prefix=str(opts.get("groupidprefix", "spark-kafka-source")),
        job_id=job_id,
        value_format=parse_registry_format(opts, sink=False),
        key_format=parse_registry_format(opts, sink=False, column="key"),
    )


def _check_batch_bounds(starting: OffsetSpec, ending: OffsetSpec) -> None:
    """Batch queries read a closed range: it cannot start at 'latest' nor end
    at 'earliest' (Spark refuses both too)."""
    if starting == "latest" or (isinstance(starting, dict) and LATEST in starting.values()):
        raise HeadraceOptionError("startingOffsets 'latest' (-1) is not allowed in batch queries")
    if ending == "earliest" or (isinstance(ending, dict) and EARLIEST in ending.values()):
        raise HeadraceOptionError("endingOffsets 'earliest' (-2) is not allowed in batch queries")


DEFAULT_TRANSACTIONAL_ID_PREFIX = "headrace-spark-sink"


@dataclass(frozen=True)
class SinkOptions:
    """Everything a writer needs; picklable.

    Sink identity (exactly-once, at-most-once): ``job_id`` names a batch
    write, ``sink_id`` overrides a streaming query's id; ``progress_topic``
    is the existing topic whose partition 0 carries the sink's progress
    offsets (see ``sink_progress``)."""

    kafka_conf: dict[str, str]
    topic: str | None
    guarantee: str
    job_id: str | None = None
    sink_id: str | None = None
    transactional_id_prefix: str = DEFAULT_TRANSACTIONAL_ID_PREFIX
    progress_topic: str | None = None
    flush_timeout_s: float = 120.0
    value_format: Any = None    # registry_format.RegistryFormat: valueFormat
    key_format: Any = None      # the same for keyFormat

    @property
    def uses_progress(self) -> bool:
        """True for the modes that keep per-(batch, partition) progress in the broker."""
        return self.guarantee in ("exactly-once", "at-most-once")


# Settings the sink owns in every mode, or in the transactional modes.
_SINK_MANAGED = ("transactional.id",)


def parse_sink_options(options: Mapping[str, str], streaming: bool) -> SinkOptions:
    """Validates the write options; every mistake fails here, on the driver,
    before a task runs. ``deliveryGuarantee`` picks the mode."""
    from .registry_format import parse_registry_format   # it imports this module
    opts = {str(k).lower(): v for k, v in options.items()}
    conf = kafka_passthrough(opts, _SINK_FORBIDDEN + _SINK_MANAGED)
    guarantee = str(opts.get("deliveryguarantee", "at-least-once")).strip().lower()
    if guarantee not in DELIVERY_GUARANTEES:
        raise HeadraceOptionError(f"Option 'deliveryGuarantee' must be one of "
                                  f"{', '.join(DELIVERY_GUARANTEES)}; got {guarantee!r}")
    if "attemptsdir" in opts:
        raise HeadraceOptionError(
            "Option 'attemptsDir' is no longer supported: at-most-once claims are now stored "
            "in the broker (per query id, or per jobId for batch writes), so no directory is "
            "needed; remove the option")
    job_id = _identifier(opts, "jobId")
    sink_id = _identifier(opts, "sinkId")
    if streaming and job_id is not None:
        raise HeadraceOptionError("Option 'jobId' is for batch writes; a streaming query is "
                                  "identified by its query id (override with 'sinkId')")
    if not streaming and sink_id is not None:
        raise HeadraceOptionError("Option 'sinkId' is for streaming queries; a batch write is "
                                  "identified by 'jobId'")
    if not streaming and guarantee in ("exactly-once", "at-most-once") and job_id is None:
        raise HeadraceOptionError(
            f"deliveryGuarantee '{guarantee}' in a batch write needs the option 'jobId': a "
            "name that stays the same when the same job is run again, so a rerun writes "
            "nothing twice")
    topic = opts.get("topic") or None
    progress_topic = opts.get("progresstopic") or topic
    if guarantee in ("exactly-once", "at-most-once") and progress_topic is None:
        raise HeadraceOptionError(
            f"deliveryGuarantee '{guarantee}' without the 'topic' option needs the option "
            "'progressTopic': an existing topic whose partition 0 holds the sink's progress "
            "(group offsets)")
    prefix = _identifier(opts, "transactionalIdPrefix") or DEFAULT_TRANSACTIONAL_ID_PREFIX
    return SinkOptions(kafka_conf=conf, topic=topic, guarantee=guarantee, job_id=job_id,
                       sink_id=sink_id, transactional_id_prefix=prefix,
                       progress_topic=progress_topic,
                       value_format=parse_registry_format(opts, sink=True),
                       key_format=parse_registry_format(opts, sink=True, column="key"))


def _identifier(opts: Mapping[str, str], name: str) -> str | None:
    """A non-empty name usable in a transactional.id and a group id."""
    raw = opts.get(name.lower())
    if raw is None:
        return None
    text = str(raw).strip()
    if not re.fullmatch(r"[A-Za-z0-9._-]{1,200}", text):
        raise HeadraceOptionError(f"Option '{name}' must be 1-200 characters of letters, "
                                  f"digits, '.', '_' or '-'; got {raw!r}")
    return text
