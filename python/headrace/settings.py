"""Broker settings gathered from a config file (TOML or Kafka's
server.properties), the environment and flags.

Keys are Kafka's broker config names (``log.dirs``, ``listeners``,
``log.retention.ms``...). This module only collects *where* each value came
from; the C++ core (``BrokerConfig``) owns the defaults and validates every
value, so there is one source of truth for what a setting means.

Precedence, lowest first: built-in default < config file < environment
(``HEADRACE_LOG_RETENTION_MS=...`` sets ``log.retention.ms``) < flags.
:func:`effective` lists every known setting (from the core) with the value
these sources give it and where that value came from.
"""
from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass, field
from typing import Any, Mapping

from headrace.known_settings import (CONTROL_PLANE_SETTINGS, core_known_settings,
                                     known_setting_names)
from headrace.server_properties import is_properties_file, parse_properties, translate

ENV_PREFIX = "HEADRACE_"
# Environment variables with this prefix that are not broker settings.
_NOT_SETTINGS = {"HEADRACE_BROKERS", "HEADRACE_DATA_DIR", "HEADRACE_DEBUG",
                 "HEADRACE_LOG_LEVEL", "HEADRACE_LOG_FORMAT",  # read by the C++ logger itself
                 "HEADRACE_FAULT_INJECT",  # testing hook read by the C++ broker
                 "HEADRACE_USER_PASSWORD",  # `headrace user` (headrace.cli.user)
                 "HEADRACE_CLI_PRODUCER"}  # `headrace produce`'s path (headrace.cli.produce)


def settings_for_core(values: Mapping[str, str]) -> dict[str, str]:
    """The settings handed to ``headrace._core.Broker`` (and to its
    validation): all of them, except the control-plane keys
    (CONTROL_PLANE_SETTINGS) the installed core does not know (it rejects
    unknown keys). Once the core knows a key, it passes through unchanged."""
    known = core_known_settings()
    return {k: v for k, v in values.items() if k not in CONTROL_PLANE_SETTINGS or k in known}


class SettingsError(ValueError):
    """A config file or value that cannot be used."""


@dataclass
class Settings:
    """Explicitly set values (str) and where each came from."""

    values: dict[str, str] = field(default_factory=dict)
    sources: dict[str, str] = field(default_factory=dict)
    # Kafka broker keys the sources set that headrace does not implement
    # (left out; the broker warns once, naming them), and other warnings.
    unimplemented: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    # Keys neither headrace's nor Kafka's (left out; the broker warns once
    # per key at start, as Kafka does): key -> where it was set.
    unknown: dict[str, str] = field(default_factory=dict)

    def unknown_warnings(self) -> list[str]:
        """One warning line per unknown key, in Kafka's words."""
        from headrace.server_properties import unknown_key_message

        return [unknown_key_message(k, source) for k, source in self.unknown.items()]

    def set(self, key: str, value: Any, source: str) -> None:
        self.values[key] = _to_str(value)
        self.sources[key] = source


DEFAULT_SOURCE = "default"


@dataclass(frozen=True)
class EffectiveSetting:
    """One broker setting as the broker would run with it."""

    name: str      # Kafka broker property, e.g. "log.retention.ms"
    value: str     # effective value
    default: str   # built-in default
    doc: str       # one line
    source: str    # "default", "file PATH", "environment" or "flag"
    set_as: str    # the key that set it ("log.retention.hours"); "" for a default


def _to_str(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return ",".join(_to_str(v) for v in value)
    return str(value)


def _flatten(table: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in table.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict):
            out.update(_flatten(v, key + "."))
        else:
            out[key] = v
    return out


def load_file(path: str) -> dict[str, Any]:
    """Reads a config file: TOML (nested tables become dotted keys) or Kafka's
    Java properties (server.properties; see headrace.server_properties for
    how the format is told apart)."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        raise SettingsError(f"config file not found: {path}") from None
    if is_properties_file(path, data):
        return parse_properties(data)
    try:
        return _flatten(tomllib.loads(data.decode("utf-8")))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise SettingsError(f"config file {path}: {e}") from None


def from_environ(environ: Mapping[str, str]) -> dict[str, str]:
    """HEADRACE_LOG_RETENTION_MS=5 -> {"log.retention.ms": "5"}."""
    out = {}
    for name, value in environ.items():
        if name.startswith(ENV_PREFIX) and name not in _NOT_SETTINGS:
            out[name[len(ENV_PREFIX):].lower().replace("_", ".")] = value
    return out


def gather(config_file: str | None, flags: Mapping[str, Any],
           environ: Mapping[str, str] | None = None) -> Settings:
    """Merges file, environment and flag values (flags win). Kafka broker
    keys headrace does not implement are left out and listed in
    ``Settings.unimplemented`` (with the warnings of ``Settings.warnings``);
    keys neither headrace nor Kafka knows are left out too and listed in
    ``Settings.unknown`` (Kafka warns "isn't a known config" and starts)."""
    s = Settings()
    accepts = _accepts_fn()
    layers: list[tuple[str, Mapping[str, Any]]] = []
    if config_file:
        layers.append((f"file {config_file}", load_file(config_file)))
    layers.append(("environment", from_environ(os.environ if environ is None else environ)))
    layers.append(("flag", {k: v for k, v in flags.items() if v is not None}))
    for source, raw in layers:
        try:
            t = translate({k: _to_str(v) for k, v in raw.items()}, accepts, source)
        except ValueError as e:
            raise SettingsError(str(e)) from None
        for k, v in t.values.items():
            s.set(k, v, source)
        for k in t.unimplemented:
            if k not in s.unimplemented:
                s.unimplemented.append(k)
        for k in t.unknown:
            s.unknown[k] = source  # the last source that set it, as for values
        s.warnings.extend(t.warnings)
    return s


def _accepts_fn():
    """key -> whether headrace implements it: a known setting, a control-plane
    key, or any other key the core takes (aliases such as log.retention.hours)."""
    known = known_setting_names()

    def accepts(key: str) -> bool:
        if key in known:
            return True
        from headrace._core import describe_settings
        from headrace.errors import HeadraceError

        try:
            describe_settings({key: ""})
            return True
        except HeadraceError as e:
            return not str(e).startswith("unknown broker config")

    return accepts


def effective(settings: Settings) -> list[EffectiveSetting]:
    """Every setting the broker knows, sorted by name, with the value
    ``settings`` give it and that value's source.

    Validates exactly as starting a broker would: an unknown key or a bad
    value raises :class:`SettingsError` naming the key and where it was set.
    """
    from headrace._core import describe_settings
    from headrace.errors import HeadraceError

    from headrace.keystores import convert_stores

    # The core reads PEM stores only: PKCS12 ones are handed to it as inline
    # PEM (headrace.keystores), as a broker start does; the rows show what
    # was set (the store's type and location), not the PEM.
    try:
        converted, _ = convert_stores(settings.values)
        rows = list(describe_settings(settings_for_core(converted)))
    except HeadraceError as e:
        raise SettingsError(_with_source(str(e), settings)) from None
    rewritten = {k for k in set(converted) | set(settings.values)
                 if converted.get(k) != settings.values.get(k)}
    rows = [(name, settings.values[name], default, doc, name) if name in settings.values
            else (name, default, default, doc, "")
            for name, value, default, doc, set_by in rows if name in rewritten] + \
           [row for row in rows if row[0] not in rewritten]
    listed = {row[0] for row in rows}
    for name, (default, doc) in CONTROL_PLANE_SETTINGS.items():
        if name not in listed:
            value = settings.values.get(name, default)
            rows.append((name, value, default, doc, name if name in settings.values else ""))
    rows.sort(key=lambda row: row[0])
    return [EffectiveSetting(name, value, default, doc,
                             settings.sources.get(set_by, DEFAULT_SOURCE), set_by)
            for name, value, default, doc, set_by in rows]


def _with_source(message: str, settings: Settings) -> str:
    """Appends where the key a core error names was set ("... (environment)")."""
    for key, source in settings.sources.items():
        if message.startswith(f"{key}:") or message.endswith(f": {key}"):
            return f"{message} ({source})"
    return message
