"""The broker process's log lines from Python, in the C++ core's two formats
(cpp/common/logging.h), so every line a broker or `headrace cluster up`
writes parses the same way:

    text: 2026-11-25T12:00:00.123Z INFO headrace: listening on 127.0.0.1:9092 ...
    json: {"ts":"2026-11-25T12:00:00.123Z","level":"INFO","logger":"headrace",
           "msg":"listening on ...","listener":"127.0.0.1:9092"}

:func:`configure` picks the format (``--log-format``, the setting
``headrace.log.format`` or HEADRACE_LOG_FORMAT; text by default) for both
Python's root logger and the C++ core. Structured fields of a JSON line come
from ``extra={"fields": {...}}`` (or :func:`event`). Lines go to stderr;
:func:`announce` writes the few lines scripts wait for (``listening on``) to
stdout, in the same format.
"""
from __future__ import annotations

import json
import logging
import os
import sys
import time
from typing import Any, TextIO

FORMATS = ("text", "json")
SETTING = "headrace.log.format"
ENV = "HEADRACE_LOG_FORMAT"

_LEVELS = {"WARNING": "WARN", "CRITICAL": "ERROR"}
_RESERVED = {"ts", "level", "logger", "msg"}
_format = "text"


def _stamp(created: float) -> str:
    secs = int(created)
    ms = int((created - secs) * 1000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(secs)) + f".{ms:03d}Z"


def format_line(fmt: str, created: float, level: str, logger: str, msg: str,
                fields: dict[str, Any] | None = None) -> str:
    """One line (no newline) as the C++ core writes it. Multi-line messages
    keep to one line (text: ``\\n``; JSON: escaped)."""
    level = _LEVELS.get(level, level)
    if fmt == "json":
        obj: dict[str, Any] = {"ts": _stamp(created), "level": level, "logger": logger,
                               "msg": msg}
        for k, v in (fields or {}).items():
            if k not in _RESERVED:
                obj[k] = v if isinstance(v, (int, float, bool, type(None), list, dict)) \
                    else str(v)
        return json.dumps(obj, ensure_ascii=False, separators=(",", ":"), default=str)
    text = msg.replace("\r", "\\r").replace("\n", "\\n")
    return f"{_stamp(created)} {level} {logger}: {text}"


class LineFormatter(logging.Formatter):
    """logging records as headrace lines in the configured format."""

    def __init__(self, fmt: str = "text") -> None:
        super().__init__()
        self.fmt = fmt

    def format(self, record: logging.LogRecord) -> str:
        msg = record.getMessage()
        if record.exc_info:
            msg = f"{msg}: {self.formatException(record.exc_info)}"
        return format_line(self.fmt, record.created, record.levelname, record.name, msg,
                           getattr(record, "fields", None))


def resolve(flag: str | None = None, settings: dict[str, str] | None = None) -> str:
    """The format: the flag, else the setting, else HEADRACE_LOG_FORMAT, else
    text. Raises ValueError naming the source for anything but text/json."""
    for value, source in ((flag, "--log-format"), ((settings or {}).get(SETTING), SETTING),
                          (os.environ.get(ENV), ENV)):
        if value:
            if value.lower() not in FORMATS:
                raise ValueError(f"{source}: must be text or json, got {value!r}")
            return value.lower()
    return "text"


_handler: logging.Handler | None = None


def configure(fmt: str = "text", level: int = logging.INFO) -> None:
    """Every later line of this process in format `fmt`: Python's root
    logger on stderr (kazoo's own lines from warnings up) and the C++ core's.
    Idempotent."""
    global _format, _handler
    _format = fmt
    os.environ[ENV] = fmt  # child processes (and a core not imported yet) follow
    try:
        from headrace._core import set_log_format
        set_log_format(fmt)
    except ImportError:
        pass
    root = logging.getLogger()
    if _handler is None:
        _handler = logging.StreamHandler(sys.stderr)
        root.addHandler(_handler)
    _handler.setFormatter(LineFormatter(fmt))
    root.setLevel(level)
    logging.getLogger("kazoo").setLevel(logging.WARNING)


def current_format() -> str:
    """The format configure() set (else HEADRACE_LOG_FORMAT, else text)."""
    if _handler is not None:
        return _format
    env = os.environ.get(ENV, "").lower()
    return env if env in FORMATS else "text"


def event(logger: logging.Logger, msg: str, level: int = logging.INFO, **fields: Any) -> None:
    """One line with structured fields (JSON keys; prose only in text)."""
    logger.log(level, msg, extra={"fields": fields})


def announce(msg: str, logger: str = "headrace", stream: TextIO | None = None,
             **fields: Any) -> None:
    """An INFO line on stdout (default) that scripts wait for, in the
    configured format, flushed at once."""
    out = stream or sys.stdout
    out.write(format_line(current_format(), time.time(), "INFO", logger, msg, fields) + "\n")
    out.flush()
