"""Output formats of ``headrace consume``: plain values, JSON lines, and a
kcat-like format string (``%t %p %o %k %s %T %h %K %S %%``, ``\\n \\t \\\\``)."""
from __future__ import annotations

import json
import re
from typing import Callable

_TOKEN = re.compile(r"%[tpokshTKS%]|\\[nt\\]")


def _text(b: bytes | None) -> str:
    return "" if b is None else b.decode("utf-8", errors="backslashreplace")


def _headers(msg) -> list[tuple[str, bytes | None]]:
    return list(msg.headers() or [])


def plain(msg) -> bytes:
    return (msg.value() or b"") + b"\n"


def as_json(msg) -> bytes:
    ts_type, ts = msg.timestamp()
    doc = {"topic": msg.topic(), "partition": msg.partition(), "offset": msg.offset(),
           "timestamp": ts, "timestamp_type": {1: "CreateTime", 2: "LogAppendTime"}.get(
               ts_type, "NotAvailable"),
           "key": None if msg.key() is None else _text(msg.key()),
           "value": None if msg.value() is None else _text(msg.value()),
           "headers": [[k, None if v is None else _text(v)] for k, v in _headers(msg)]}
    return json.dumps(doc, ensure_ascii=False).encode() + b"\n"


def compile_format(fmt: str) -> Callable[[object], bytes]:
    """A formatter for a kcat-style format string. Unknown %-sequences are
    printed as written. No newline is added (write \\n as kcat does)."""
    parts: list[object] = []
    pos = 0
    for m in _TOKEN.finditer(fmt):
        if m.start() > pos:
            parts.append(fmt[pos:m.start()].encode())
        parts.append(m.group())
        pos = m.end()
    if pos < len(fmt):
        parts.append(fmt[pos:].encode())

    def render(msg) -> bytes:
        out = bytearray()
        for part in parts:
            out += part if isinstance(part, bytes) else _field(part, msg)
        return bytes(out)

    return render


def _field(token: str, msg) -> bytes:
    if token == "%t":
        return msg.topic().encode()
    if token == "%p":
        return str(msg.partition()).encode()
    if token == "%o":
        return str(msg.offset()).encode()
    if token == "%k":
        return msg.key() or b""
    if token == "%s":
        return msg.value() or b""
    if token == "%K":
        return str(-1 if msg.key() is None else len(msg.key())).encode()
    if token == "%S":
        return str(-1 if msg.value() is None else len(msg.value())).encode()
    if token == "%T":
        return str(msg.timestamp()[1]).encode()
    if token == "%h":
        return ",".join(f"{k}={_text(v)}" for k, v in _headers(msg)).encode()
    return {"%%": b"%", "\\n": b"\n", "\\t": b"\t", "\\\\": b"\\"}[token]


def formatter(name: str) -> Callable[[object], bytes]:
    if name == "plain":
        return plain
    if name == "json":
        return as_json
    return compile_format(name)
