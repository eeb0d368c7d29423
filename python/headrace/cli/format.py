"""Output formats of ``headrace consume``: plain values, JSON lines, and a
kcat-like format string (``%t %p %o %k %s %T %h %K %S %%``, ``\\n \\t \\\\``).

Every format renders a whole batch of messages into one bytes object (one
write per batch). Keys, values and header values are shown in the chosen
encoding (text: as they are; base64; hex). A null key or value is JSON
``null``, and in plain and format-string output the ``null`` text (empty
unless ``-Z``/``--null``), so a tombstone can be told from an empty value.
"""
from __future__ import annotations

import json
import re
from typing import Callable

from headrace.cli.codec import encoder

_TOKEN = re.compile(r"%[tpokshTKS%]|\\[nt\\]")
_TS_TYPES = {1: "CreateTime", 2: "LogAppendTime"}


class Formatter:
    """render(msgs) -> bytes for a list of confluent_kafka Messages."""

    def __init__(self, name: str, encoding: str = "text", null: bytes = b"",
                 delimiter: bytes = b"\n", decode: Callable | None = None):
        """``decode(raw, topic, field)``: what a value (field "value") or a
        key ("key") is shown as (e.g. JSON of a registry-framed record,
        headrace.registry.decode); None: as is."""
        self.encode = encoder(encoding)
        self._decode = decode
        self.null = null
        self.delimiter = delimiter
        if name == "plain":
            self.render = self._plain
        elif name == "json":
            self.render = self._json
        else:
            self._parts = _compile(name)
            self.render = self._format

    def _show(self, b: bytes | None) -> bytes:
        if b is None:
            return self.null
        return b if self.encode is None else self.encode(b)

    def _value(self, m) -> bytes | None:
        return m.value() if self._decode is None else self._decode(m.value(), m.topic(), "value")

    def _key(self, m) -> bytes | None:
        return m.key() if self._decode is None else self._decode(m.key(), m.topic(), "key")

    def _plain(self, msgs) -> bytes:
        values = [self._value(m) for m in msgs]
        if self.encode is not None or None in values:
            values = [self._show(v) for v in values]
        return self.delimiter.join(values) + self.delimiter

    def _text(self, b: bytes | None) -> str | None:
        if b is None:
            return None
        if self.encode is None:
            return b.decode("utf-8", errors="backslashreplace")
        return self.encode(b).decode("ascii")

    def _json(self, msgs) -> bytes:
        lines = []
        for m in msgs:
            ts_type, ts = m.timestamp()
            doc = {"topic": m.topic(), "partition": m.partition(), "offset": m.offset(),
                   "timestamp": ts, "timestamp_type": _TS_TYPES.get(ts_type, "NotAvailable"),
                   "key": self._text(self._key(m)), "value": self._text(self._value(m)),
                   "headers": [[k, self._text(v)] for k, v in (m.headers() or [])]}
            lines.append(json.dumps(doc, ensure_ascii=False))
        return ("\n".join(lines) + "\n").encode()

    def _format(self, msgs) -> bytes:
        out = bytearray()
        for m in msgs:
            for part in self._parts:
                out += part if isinstance(part, bytes) else self._field(part, m)
        return bytes(out)

    def _field(self, token: str, m) -> bytes:
        if token == "%t":
            return m.topic().encode()
        if token == "%p":
            return str(m.partition()).encode()
        if token == "%o":
            return str(m.offset()).encode()
        if token == "%k":
            return self._show(self._key(m))
        if token == "%s":
            return self._show(self._value(m))
        if token == "%K":
            return str(-1 if m.key() is None else len(m.key())).encode()
        if token == "%S":
            return str(-1 if m.value() is None else len(m.value())).encode()
        if token == "%T":
            return str(m.timestamp()[1]).encode()
        if token == "%h":
            return b",".join(k.encode() + b"=" + self._show(v) for k, v in (m.headers() or []))
        return {"%%": b"%", "\\n": b"\n", "\\t": b"\t", "\\\\": b"\\"}[token]


def _compile(fmt: str) -> list[object]:
    """A kcat-style format string -> literal bytes and %-tokens. Unknown
    %-sequences are printed as written. No newline is added (write \\n)."""
    parts: list[object] = []
    pos = 0
    for m in _TOKEN.finditer(fmt):
        if m.start() > pos:
            parts.append(fmt[pos:m.start()].encode())
        parts.append(m.group())
        pos = m.end()
    if pos < len(fmt):
        parts.append(fmt[pos:].encode())
    return parts


def formatter(name: str, **kw) -> Callable[[list], bytes]:
    return Formatter(name, **kw).render
