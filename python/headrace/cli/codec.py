"""Bytes on the command line: record delimiters (``-D``), key delimiters
(``-K``) and the encodings of keys and values in input and output
(``text``, ``base64``, ``hex``).

Delimiters are written with escapes: ``\\n``, ``\\r``, ``\\t``, ``\\0``,
``\\\\`` and ``\\xHH``; an empty delimiter means NUL (``\\0``), for values that
may hold any other byte.
"""
from __future__ import annotations

import base64
import binascii
import re
from typing import BinaryIO, Iterator

from headrace.cli.common import CliError

ENCODINGS = ("text", "base64", "hex")
READ_CHUNK = 1 << 20

_ESCAPE = re.compile(rb"\\(x[0-9a-fA-F]{2}|[nrt0\\])")
_SIMPLE = {b"n": b"\n", b"r": b"\r", b"t": b"\t", b"0": b"\0", b"\\": b"\\"}


def parse_delimiter(text: str, what: str = "delimiter") -> bytes:
    """'\\n' -> b"\\n", '' -> b"\\0", ',' -> b","."""
    if text == "":
        return b"\0"
    raw = text.encode()

    def sub(m: re.Match) -> bytes:
        code = m.group(1)
        return bytes([int(code[1:], 16)]) if code.startswith(b"x") else _SIMPLE[code]

    out = _ESCAPE.sub(sub, raw)
    if not out:
        raise CliError(f"{what} must not be empty")
    return out


def decoder(encoding: str):
    """bytes -> bytes for input of ``encoding``; CliError on bad input."""
    if encoding == "text":
        return None
    if encoding == "base64":
        def dec(b: bytes) -> bytes:
            try:
                return base64.b64decode(b, validate=True)
            except binascii.Error as e:
                raise CliError(f"bad base64 input {b[:40]!r}: {e}") from None
        return dec

    def dec_hex(b: bytes) -> bytes:
        try:
            return bytes.fromhex(b.decode("ascii"))
        except (ValueError, UnicodeDecodeError):
            raise CliError(f"bad hex input {b[:40]!r}") from None
    return dec_hex


def encoder(encoding: str):
    """bytes -> bytes for output in ``encoding`` (None for text: as is)."""
    if encoding == "text":
        return None
    if encoding == "base64":
        return base64.b64encode
    return lambda b: b.hex().encode()


def split_records(stream: BinaryIO, delimiter: bytes, strip_cr: bool = False
                  ) -> Iterator[list[bytes]]:
    """Lists of records read from ``stream`` in chunks (a chunk is whatever
    one read returns, so interactive input is produced as it is typed). A
    last record without a trailing delimiter counts; an empty input has no
    records. With ``strip_cr`` a record's trailing ``\\r`` is dropped (CRLF text)."""
    read = getattr(stream, "read1", stream.read)
    rest = b""
    while True:
        chunk = read(READ_CHUNK)
        if not chunk:
            break
        data = rest + chunk
        parts = data.split(delimiter)
        rest = parts.pop()
        if parts:
            if strip_cr and b"\r" in data:
                parts = [p[:-1] if p.endswith(b"\r") else p for p in parts]
            yield parts
    if rest:
        yield [rest[:-1] if strip_cr and rest.endswith(b"\r") else rest]
