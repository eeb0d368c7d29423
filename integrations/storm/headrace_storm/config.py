"""Settings of the Storm components: one table, two sources.

Every setting is a class attribute of :class:`KafkaSpout` / :class:`ShareSpout` /
:class:`KafkaBolt`
(set it in a subclass) and, equally, a key of the Storm configuration handed
over in the multi-lang handshake (``headrace.<name>``, topology-wide in the
topology's ``config`` or per component in ``spec(config=...)``). A key in the
Storm configuration wins over the attribute, so one topology file can
configure everything.

Contract: :func:`resolve` either returns a complete, validated settings dict
or raises :class:`ConfigError` whose message names the offending key. Any
``headrace.*`` key that neither component knows is an error too (a typo must
not silently fall back to a default).
"""
from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any, Callable, Mapping

from ..errors import HeadraceError

PREFIX = "headrace."


class ConfigError(ValueError, HeadraceError):
    """A headrace.* setting is unknown, missing or invalid."""


class ProcessingGuarantee(enum.Enum):
    """When the spout commits offsets relative to emitting tuples."""
    AT_MOST_ONCE = "at_most_once"    # commit polled offsets, then emit (unanchored)
    AT_LEAST_ONCE = "at_least_once"  # emit anchored; commit only acked, contiguous offsets
    NONE = "none"                    # emit unanchored; commit emitted offsets periodically
    # Emit anchored, read read_committed, never commit: a transactional
    # KafkaBolt commits the source offsets with its output (source_chain.py).
    EXACTLY_ONCE = "exactly_once"


class FirstPollOffsetStrategy(enum.Enum):
    """Where a newly assigned partition starts (storm-kafka-client's names).

    EARLIEST / LATEST ignore commits made by an earlier deployment of the
    topology (another ``storm.id``) but resume from commits of this one, so a
    restarted worker does not re-read or skip; the UNCOMMITTED_* variants
    always resume from a commit and use earliest / latest only without one.
    """
    EARLIEST = "earliest"
    LATEST = "latest"
    UNCOMMITTED_EARLIEST = "uncommitted_earliest"
    UNCOMMITTED_LATEST = "uncommitted_latest"


@dataclass(frozen=True)
class Option:
    """One setting: attribute name, parser (raises ValueError with a reason)."""
    attr: str
    parse: Callable[[Any], Any]
    doc: str

    @property
    def key(self) -> str:
        return PREFIX + self.attr


# -- parsers: each takes a raw value and returns it normalised ---------------

def _brokers(v: Any) -> str:
    if isinstance(v, (list, tuple)):
        v = ",".join(str(x) for x in v)
    if not isinstance(v, str) or not v.strip():
        raise ValueError("expected 'host:port[,host:port...]' or a list of them")
    return v.strip()


def _str_list(v: Any) -> list[str]:
    if isinstance(v, str):
        v = [p.strip() for p in v.split(",") if p.strip()]
    if not isinstance(v, (list, tuple)) or not all(isinstance(x, str) and x for x in v):
        raise ValueError("expected a list of names or a comma-separated string")
    return list(v)


def _opt_str(v: Any) -> str | None:
    if v is None:
        return None
    if not isinstance(v, str) or not v:
        raise ValueError("expected a non-empty string")
    return v


def _enum(cls: type[enum.Enum]) -> Callable[[Any], enum.Enum]:
    def parse(v: Any) -> enum.Enum:
        if isinstance(v, cls):
            return v
        text = str(v).strip().lower()
        for member in cls:
            if member.value == text or member.name.lower() == text:
                return member
        allowed = " | ".join(m.value for m in cls)
        raise ValueError(f"{v!r} is not one of {allowed}")
    return parse


def _int(lo: int, hi: int | None = None) -> Callable[[Any], int]:
    def parse(v: Any) -> int:
        if isinstance(v, bool) or not isinstance(v, (int, str)):
            raise ValueError(f"expected an integer, got {v!r}")
        try:
            n = int(v)
        except ValueError:
            raise ValueError(f"expected an integer, got {v!r}") from None
        if n < lo or (hi is not None and n > hi):
            raise ValueError(f"{n} is out of range [{lo}, {hi if hi is not None else 'inf'}]")
        return n
    return parse


def _bool(v: Any) -> bool:
    if isinstance(v, bool):
        return v
    text = str(v).strip().lower()
    if text in ("true", "1", "yes"):
        return True
    if text in ("false", "0", "no"):
        return False
    raise ValueError(f"expected true or false, got {v!r}")


def _dict(v: Any) -> dict:
    if v is None:
        return {}
    if not isinstance(v, Mapping):
        raise ValueError("expected a mapping of librdkafka property -> value")
    return dict(v)


def _client_dict(v: Any) -> dict:
    """Connection properties of every client (security.protocol, sasl.*,
    ssl.*): librdkafka names, or a Kafka (Java) client config's, translated
    (headrace.client_settings.from_java)."""
    from ..client_settings import from_java

    return from_java({str(k): str(val) for k, val in _dict(v).items()})


def _encoding(v: Any) -> str:
    text = str(v).strip().lower()
    if text not in ("utf-8", "base64"):
        raise ValueError(f"{v!r} is not one of utf-8 | base64")
    return text


COMMON = [
    Option("brokers", _brokers, "bootstrap servers"),
    Option("kafka", _client_dict, "client properties of every Kafka client of the component "
           "(security.protocol, sasl.*, ssl.*)"),
]

SPOUT = COMMON + [
    Option("topics", _str_list, "topics to subscribe to (or topic_pattern)"),
    Option("topic_pattern", _opt_str, "regular expression of topics (or topics)"),
    Option("group", _opt_str, "consumer group id"),
    Option("guarantee", _enum(ProcessingGuarantee), "processing guarantee"),
    Option("first_poll", _enum(FirstPollOffsetStrategy), "first poll offset strategy"),
    Option("max_uncommitted", _int(1), "emitted, uncommitted offsets per partition"),
    Option("commit_period_ms", _int(0), "commit interval"),
    Option("poll_timeout_ms", _int(0, 10_000), "longest wait of one poll"),
    Option("max_poll_records", _int(1, 100_000), "records fetched per poll"),
    Option("emit_batch", _int(1, 100_000), "most tuples emitted per next"),
    Option("retry_initial_delay_ms", _int(0), "first retry delay"),
    Option("retry_delay_period_ms", _int(0), "back-off base, doubled per retry"),
    Option("retry_max_delay_ms", _int(0), "back-off cap"),
    Option("retry_max_retries", _int(-1), "retries per tuple; -1 = unlimited"),
    Option("encoding", _encoding, "how key and value bytes become tuple strings"),
    Option("consumer", _dict, "librdkafka consumer properties (override)"),
]

def _fail_as(v: Any) -> str:
    text = str(v).strip().lower()
    if text not in ("release", "reject"):
        raise ValueError(f"{v!r} is not one of release | reject")
    return text


# ShareSpout (share groups, KIP-932): the broker keeps what is in flight, so
# no offsets, commits or retries of its own.
SHARE_SPOUT = COMMON + [
    Option("topics", _str_list, "topics to subscribe to"),
    Option("group", _opt_str, "share group id"),
    Option("poll_timeout_ms", _int(0, 10_000), "longest wait of one poll"),
    Option("max_poll_records", _int(1, 100_000), "records acquired per poll"),
    Option("emit_batch", _int(1, 100_000), "most tuples emitted per next"),
    Option("fail_as", _fail_as, "what a failed tuple becomes: release (delivered again) "
           "or reject (archived)"),
    Option("encoding", _encoding, "how key and value bytes become tuple strings"),
    Option("consumer", _dict, "librdkafka share consumer properties (override)"),
]

BOLT = COMMON + [
    Option("topic", _opt_str, "topic written to (or topic_field)"),
    Option("topic_field", _opt_str, "tuple field naming the topic"),
    Option("key_field", _opt_str, "tuple field holding the record key"),
    Option("message_field", _opt_str, "tuple field holding the record value"),
    Option("fire_and_forget", _bool, "ack tuples without waiting for the broker"),
    Option("producer", _dict, "librdkafka producer properties (override)"),
    Option("transactional", _bool, "write in transactions that commit the source offsets"),
    Option("source_group", _opt_str, "the exactly-once spout's consumer group"),
    Option("source_spout", _opt_str, "the exactly-once spout's component id (derives its group)"),
    Option("transactional_id", _opt_str, "transactional.id of the task's producer"),
    Option("transaction_max_tuples", _int(1, 1_000_000), "tuples that start a transaction"),
    Option("transaction_interval_ms", _int(1), "longest wait before a transaction starts"),
]

KNOWN_KEYS = frozenset(o.key for o in SPOUT + SHARE_SPOUT + BOLT)


def resolve(component: Any, options: list[Option], storm_conf: Mapping[str, Any]) -> dict:
    """Settings for ``component`` from its attributes, overridden by
    ``storm_conf`` keys. Raises ConfigError naming the key at fault."""
    unknown = sorted(k for k in storm_conf if isinstance(k, str) and k.startswith(PREFIX)
                     and k not in KNOWN_KEYS)
    if unknown:
        raise ConfigError(f"unknown setting(s) {', '.join(unknown)}; known: "
                          f"{', '.join(sorted(KNOWN_KEYS))}")
    settings = {}
    for opt in options:
        from_conf = opt.key in storm_conf
        raw = storm_conf[opt.key] if from_conf else getattr(component, opt.attr)
        where = opt.key if from_conf else f"{type(component).__name__}.{opt.attr}"
        try:
            settings[opt.attr] = None if raw is None else opt.parse(raw)
        except ValueError as e:
            raise ConfigError(f"{where}: {e}") from None
    return settings


def default_group(topology_name: str, spout_component: str) -> str:
    """The consumer group a KafkaSpout uses when headrace.group is not set."""
    return f"headrace-storm-{topology_name}-{spout_component}"


def require(settings: dict, attr: str, why: str) -> None:
    """ConfigError unless settings[attr] is set."""
    if settings.get(attr) in (None, "", []):
        raise ConfigError(f"{PREFIX}{attr} is required: {why}")
