"""Kafka's ``server.properties`` as a headrace config file.

A config file is read as Java properties when its name ends in
``.properties``, or when it is not valid TOML (a Kafka file such as
``listeners=PLAINTEXT://:9092`` never is); otherwise as TOML. The properties
grammar is Java's (``java.util.Properties.load``: ``#``/``!`` comments,
``=``/``:``/whitespace separators, ``\\`` line continuations, escapes and
``\\uXXXX``), parsed by the jproperties package.

Translating Kafka's keys (:func:`translate`):
- ``broker.id`` passes through: the core takes it as an alias of ``node.id``
  (both set to different values: an error, as in Kafka);
- listeners named in ``controller.listener.names`` (KRaft's ``CONTROLLER``)
  are dropped from ``listeners``, ``advertised.listeners`` and
  ``listener.security.protocol.map``, with a warning: headrace has no KRaft
  controller (its clusters use ZooKeeper);
- Kafka 3.9 broker keys headrace does not implement (kafka39_broker_configs.txt,
  plus ``listener.name.*``) are left out with one warning line naming them;
- any other key (a Confluent key such as ``confluent.metrics.reporter.*``,
  a key Kafka removed such as ``port`` or ``host.name``, ``jmx.port``, a
  typo) is left out too, as Kafka does ("was supplied but isn't a known
  config"): the broker warns once per key at start, with the closest known
  name when there is one (``unknown_key_message``), and starts.
"""
from __future__ import annotations

import functools
import os
import tomllib
from dataclasses import dataclass, field
from typing import Callable, Mapping

from headrace.known_settings import known_setting_names

_KAFKA_NAMES_FILE = os.path.join(os.path.dirname(__file__), "kafka39_broker_configs.txt")


@functools.lru_cache(maxsize=1)
def kafka_broker_config_names() -> frozenset[str]:
    """Every Kafka 3.9 broker config name."""
    with open(_KAFKA_NAMES_FILE, encoding="utf-8") as f:
        return frozenset(line.strip() for line in f
                         if line.strip() and not line.startswith("#"))


def is_kafka_key(key: str) -> bool:
    return key in kafka_broker_config_names() or key.startswith("listener.name.")


def is_properties_file(path: str, data: bytes) -> bool:
    """By extension (.properties / .toml), else by content: not TOML."""
    lowered = path.lower()
    if lowered.endswith(".properties"):
        return True
    if lowered.endswith(".toml"):
        return False
    try:
        tomllib.loads(data.decode("utf-8"))
        return False
    except (tomllib.TOMLDecodeError, UnicodeDecodeError):
        return True


def parse_properties(data: bytes) -> dict[str, str]:
    """The key/value pairs of Java properties text (ISO-8859-1, as
    Properties.load(InputStream) reads it; \\uXXXX escapes for the rest).
    A repeated key keeps its last value, as in Java."""
    from jproperties import Properties

    props = Properties()
    props.load(data, "iso-8859-1")
    return {key: value for key, (value, _meta) in props.items()}


@dataclass
class Translated:
    """A file's settings in headrace's terms, and what was left out."""

    values: dict[str, str] = field(default_factory=dict)
    unimplemented: list[str] = field(default_factory=list)  # Kafka keys left out
    unknown: list[str] = field(default_factory=list)  # neither headrace's nor Kafka's
    warnings: list[str] = field(default_factory=list)


def _controller_names(values: Mapping[str, str]) -> set[str]:
    names = {n.strip().upper() for n in values.get("controller.listener.names", "").split(",")
             if n.strip()}
    return names


def _drop_listeners(value: str, names: set[str]) -> tuple[str, list[str]]:
    """`value` (NAME://HOST:PORT,...) without the listeners named in `names`."""
    kept, dropped = [], []
    for item in (v.strip() for v in value.split(",")):
        if not item:
            continue
        name = item.split("://", 1)[0].upper() if "://" in item else ""
        (dropped if name in names else kept).append(item)
    return ",".join(kept), dropped


def _drop_protocol_map(value: str, names: set[str]) -> str:
    return ",".join(e.strip() for e in value.split(",")
                    if e.strip() and e.split(":", 1)[0].strip().upper() not in names)


def translate(raw: Mapping[str, str], accepts: Callable[[str], bool],
              source: str) -> Translated:
    """Kafka keys of `raw` as headrace settings. `accepts(key)` says whether
    headrace implements a key. Keys left out: Kafka's that headrace does not
    implement (``unimplemented``) and any other (``unknown``). Raises
    ValueError (one line naming `source`) for a KRaft controller-only
    process.roles, or broker.id and node.id that differ."""
    out = Translated()
    values = dict(raw)
    broker_id, node_id = values.get("broker.id"), values.get("node.id")
    if broker_id is not None and node_id is not None and broker_id.strip() != node_id.strip():
        raise ValueError(f"{source}: broker.id={broker_id} and node.id={node_id} differ "
                         f"(both name this broker; Kafka refuses that too)")
    controllers = _controller_names(values)
    roles = {r.strip() for r in values.get("process.roles", "").split(",") if r.strip()}
    if roles and "broker" not in roles:
        raise ValueError(f"{source}: process.roles={values['process.roles']}: headrace runs "
                         f"brokers only (a KRaft controller-only node has nothing to run)")
    if controllers:
        for key in ("listeners", "advertised.listeners"):
            if key in values:
                values[key], dropped = _drop_listeners(values[key], controllers)
                if dropped and key == "listeners":
                    out.warnings.append(
                        f"{source}: ignoring the KRaft controller listener(s) "
                        f"{', '.join(dropped)} (headrace has no KRaft controller; a cluster "
                        f"is coordinated by ZooKeeper, zookeeper.connect)")
        if "listener.security.protocol.map" in values:
            values["listener.security.protocol.map"] = _drop_protocol_map(
                values["listener.security.protocol.map"], controllers)
    for key, value in values.items():
        if accepts(key):
            out.values[key] = value
        elif is_kafka_key(key):
            out.unimplemented.append(key)
        else:
            out.unknown.append(key)
    return out


def unknown_key_message(key: str, source: str) -> str:
    """Kafka's warning for a key it does not know, with where it was set and
    the closest known name (headrace's and Kafka's), if any: "The
    configuration 'x' (source) was supplied but isn't a known config; ignored
    (did you mean 'y'?)"."""
    import difflib  # only when there is such a key: the CLI's start does not pay for it

    candidates = sorted(kafka_broker_config_names() | known_setting_names())
    close = difflib.get_close_matches(key, candidates, n=1, cutoff=0.75)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return (f"The configuration {key!r} ({source}) was supplied but isn't a known config; "
            f"ignored{hint}")
