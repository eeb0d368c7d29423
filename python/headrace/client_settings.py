"""Client settings of the ``headrace`` command line for secured clusters
(docs/security.md "Client settings in the CLI").

Three sources, merged with the more specific winning:

1. ``HEADRACE_*`` environment variables: ``HEADRACE_SECURITY_PROTOCOL`` ->
   ``security.protocol`` (drop the prefix, lower-case, ``_`` -> ``.``);
   only names that map to ``security.*``, ``sasl.*``, ``ssl.*``,
   ``enable.ssl.*`` or ``client.id`` are client settings (the other
   ``HEADRACE_*`` variables configure the broker or the tools).
2. ``--command-config FILE``: a Kafka tools' client config (Java
   properties). Java-only keys are translated to librdkafka's
   (:func:`from_java`): ``sasl.jaas.config`` -> ``sasl.username`` /
   ``sasl.password``, PEM trust and key stores -> ``ssl.ca.location`` /
   ``ssl.certificate.location`` / ``ssl.key.location``, ...
3. ``-X key=value`` (repeatable): librdkafka properties, as kcat takes them.

The result is a dict of librdkafka properties: it goes unchanged into every
confluent-kafka Producer / Consumer / AdminClient the CLI makes, and into
:class:`headrace.admin_wire.Connection` (TLS through :mod:`ssl`, SASL PLAIN
and SCRAM-SHA-256/512) for the requests confluent-kafka has no call for.
"""
from __future__ import annotations

import os
import re
from collections.abc import Mapping

from headrace.errors import HeadraceError

# Kafka's (Java client's) defaults where librdkafka's differ, for every
# producer the project configures (the CLI, the consoles, the Spark sink,
# the Storm bolt): keys land on the partitions a Java producer, rpk or
# kafka-python would pick (murmur2 of the key; librdkafka's own default is
# consistent_random, CRC32). A user's own setting (-X, kafka.*) wins.
KAFKA_PRODUCER_DEFAULTS: dict[str, str] = {"partitioner": "murmur2_random"}

ENV_PREFIX = "HEADRACE_"
_ENV_KEY_PREFIXES = ("security.", "sasl.", "ssl.", "enable.ssl.")
_ENV_KEYS = ("client.id",)


class ClientSettingsError(HeadraceError, ValueError):
    """A client setting that cannot be used (one line for the CLI)."""


def from_env(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The client settings among ``HEADRACE_*`` variables."""
    environ = os.environ if environ is None else environ
    out: dict[str, str] = {}
    for name, value in environ.items():
        if not name.startswith(ENV_PREFIX):
            continue
        key = name[len(ENV_PREFIX):].lower().replace("_", ".")
        if key.startswith(_ENV_KEY_PREFIXES) or key in _ENV_KEYS:
            out[key] = value
    return out


# -- Java properties ------------------------------------------------------------
_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


def _unescape(s: str) -> str:
    def sub(m: re.Match) -> str:
        c = m.group(1)
        if c.startswith("u"):
            return chr(int(c[1:], 16))
        return _ESCAPES.get(c, c)
    return re.sub(r"\\(u[0-9a-fA-F]{4}|.)", sub, s)


def parse_properties(text: str) -> dict[str, str]:
    """Java ``.properties`` text -> dict: ``#``/``!`` comments, ``=``, ``:``
    or whitespace separators, backslash line continuations and escapes."""
    out: dict[str, str] = {}
    logical: list[str] = []
    pending = ""
    for raw in text.splitlines():
        line = raw.lstrip() if not pending else raw.lstrip()
        if not pending and (not line or line[0] in "#!"):
            continue
        trailing = len(line) - len(line.rstrip("\\"))
        if trailing % 2 == 1:  # an odd number of backslashes continues the line
            pending += line[:-1]
            continue
        logical.append(pending + line)
        pending = ""
    if pending:
        logical.append(pending)
    for line in logical:
        m = re.match(r"((?:\\.|[^=:\s\\])*)\s*[=:\s]?\s*(.*)$", line)
        key, value = (m.group(1), m.group(2)) if m else (line, "")
        out[_unescape(key)] = _unescape(value)
    return out


def read_command_config(path: str) -> dict[str, str]:
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        raise ClientSettingsError(f"--command-config {path}: {e.strerror or e}") from None
    return from_java(parse_properties(text))


_JAAS_OPTION = re.compile(r'(\w+)\s*=\s*"((?:[^"\\]|\\.)*)"')


def _from_jaas(value: str) -> dict[str, str]:
    """``sasl.jaas.config`` of the PLAIN / SCRAM login modules -> username
    and password."""
    options = {k: v.replace('\\"', '"') for k, v in _JAAS_OPTION.findall(value)}
    if "PlainLoginModule" not in value and "ScramLoginModule" not in value:
        raise ClientSettingsError(
            "sasl.jaas.config: only the PlainLoginModule and ScramLoginModule are understood "
            "(for OAUTHBEARER use librdkafka's sasl.oauthbearer.* settings)")
    out = {}
    if "username" in options:
        out["sasl.username"] = options["username"]
    if "password" in options:
        out["sasl.password"] = options["password"]
    return out


def from_java(props: Mapping[str, str]) -> dict[str, str]:
    """A Kafka (Java) client config -> librdkafka properties. Keys both
    share pass through unchanged; PKCS12 stores become inline PEM, JKS
    stores are refused naming the keytool conversion."""
    props = dict(props)
    out: dict[str, str] = {}
    key_type = props.pop("ssl.keystore.type", "").upper()
    trust_type = props.pop("ssl.truststore.type", "").upper()
    _pkcs12_stores(props, out, key_type, trust_type)
    for key, value in props.items():
        if key == "sasl.jaas.config":
            out.update(_from_jaas(value))
        elif key == "ssl.truststore.location":
            out["ssl.ca.location"] = value
        elif key == "ssl.truststore.certificates":
            out["ssl.ca.pem"] = value
        elif key == "ssl.keystore.location" and key_type == "PEM":
            out["ssl.certificate.location"] = value  # one PEM file: key and chain
            out["ssl.key.location"] = value
        elif key == "ssl.keystore.key":
            out["ssl.key.pem"] = value
        elif key == "ssl.keystore.certificate.chain":
            out["ssl.certificate.pem"] = value
        elif key == "ssl.endpoint.identification.algorithm":
            out[key] = value or "none"  # Java's "" turns hostname checks off
        elif key == "sasl.mechanism":
            out["sasl.mechanisms"] = value
        else:
            out[key] = value
    return out


def _pkcs12_stores(props: dict[str, str], out: dict[str, str], key_type: str,
                   trust_type: str) -> None:
    """PKCS12 key and trust stores (declared so, or unset/JKS over a PKCS12
    file, as Java reads them) become inline PEM (``ssl.key.pem``,
    ``ssl.certificate.pem``, ``ssl.ca.pem``), which librdkafka and the CLI's
    own connection (headrace.secure_socket) both take; their keys leave
    ``props``. A JKS store is refused naming the keytool conversion
    (headrace.keystores)."""
    from headrace.keystores import KeystoreError, read_store

    try:
        for store, declared in (("truststore", trust_type), ("keystore", key_type)):
            loc = props.get(f"ssl.{store}.location")
            if not loc or declared == "PEM":
                continue
            got = read_store(f"ssl.{store}.location", loc, declared,
                             props.get(f"ssl.{store}.password", ""),
                             props.get("ssl.key.password", "") if store == "keystore" else "")
            if got is None:  # PEM, or unreadable: passed on as before
                continue
            key_pem, certs_pem = got
            for k in (f"ssl.{store}.location", f"ssl.{store}.password"):
                props.pop(k, None)
            if store == "truststore":
                out["ssl.ca.pem"] = certs_pem
            else:
                # The key is re-encrypted with ssl.key.password, if set,
                # which librdkafka then uses for ssl.key.pem.
                out["ssl.key.pem"], out["ssl.certificate.pem"] = key_pem, certs_pem
    except KeystoreError as e:
        raise ClientSettingsError(str(e)) from None


def parse_flags(items: list[str] | None) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ClientSettingsError(f"-X expects KEY=VALUE, got {item!r}")
        out[key.strip()] = value
    return out


def resolve(flags: list[str] | None = None, command_config: str | None = None,
            environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The client settings: -X flags over the command config file over the
    environment."""
    out = _one_name(from_env(environ))
    if command_config:
        out.update(read_command_config(command_config))
    out.update(_one_name(parse_flags(flags)))
    return out


def _one_name(layer: dict[str, str]) -> dict[str, str]:
    """librdkafka takes sasl.mechanism and sasl.mechanisms; keep one name so
    that a more specific source overrides a less specific one."""
    if "sasl.mechanism" in layer:
        layer["sasl.mechanisms"] = layer.pop("sasl.mechanism")
    return layer
