"""Positions in a partition as the command line names them, and how they
become offsets (``consume --from/--to``, ``group seek --to``).

Spellings (:func:`parse_position`):

- ``earliest`` (or ``beginning``), ``latest`` (or ``end``)
- ``N``: the offset N; ``-N``: N records before the end of each partition
- ``@MS``: the first offset whose timestamp is at or after MS (epoch ms)
- ``@-1h``, ``@-30m``, ``@-15s``, ``@-2d``, ``@-500ms``: that long ago
- ``@2026-11-25T10:00:00`` (ISO 8601; no zone = this machine's local time)

Offsets come from ListOffsets (earliest, latest, by timestamp). An offset past
the end is reset to the end, one before the log start to the log start, each
with a warning on stderr (as kcat does).
"""
from __future__ import annotations

import re
import sys
import time
from dataclasses import dataclass
from datetime import datetime
from typing import Iterable

from headrace.cli.common import CliError

EARLIEST, LATEST, OFFSET, FROM_END, TIME = "earliest", "latest", "offset", "from_end", "time"

_AGO = re.compile(r"^-(\d+(?:\.\d+)?)(ms|s|m|h|d)$")
_UNIT_MS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}

SPELLINGS = "earliest, latest, OFFSET, -N (N before the end), @EPOCH_MS, @-1h or @ISO-TIME"


@dataclass(frozen=True)
class Position:
    kind: str       # EARLIEST, LATEST, OFFSET, FROM_END or TIME
    value: int = 0  # the offset, the count before the end, or a timestamp (ms)


def parse_position(text: str, now_ms: int | None = None) -> Position:
    """CliError naming ``text`` when it is none of the spellings above."""
    t = text.strip()
    if t in ("earliest", "beginning"):
        return Position(EARLIEST)
    if t in ("latest", "end"):
        return Position(LATEST)
    if t.isdigit():
        return Position(OFFSET, int(t))
    if t.startswith("-") and t[1:].isdigit():
        return Position(FROM_END, int(t[1:]))
    if t.startswith("@"):
        ms = _time_ms(t[1:], now_ms)
        if ms is not None:
            return Position(TIME, ms)
    raise CliError(f"position must be {SPELLINGS}; got {text!r}")


def _time_ms(t: str, now_ms: int | None) -> int | None:
    if t.isdigit():
        return int(t)
    m = _AGO.match(t)
    if m:
        now = int(time.time() * 1000) if now_ms is None else now_ms
        return now - int(float(m.group(1)) * _UNIT_MS[m.group(2)])
    try:
        return int(datetime.fromisoformat(t.replace("Z", "+00:00")).timestamp() * 1000)
    except ValueError:
        return None


def resolve(admin, tps: Iterable, pos: Position, clamp: bool = True
            ) -> dict[tuple[str, int], int]:
    """{(topic, partition): offset} of ``pos`` in each of ``tps``
    (TopicPartitions). With ``clamp``, an offset outside [log start, end] is
    reset into it with a warning on stderr."""
    tps = list(tps)
    if not tps:
        return {}
    if pos.kind in (EARLIEST, LATEST):
        return admin.list_offsets(tps, pos.kind)
    if pos.kind == TIME:
        return admin.list_offsets(tps, pos.value)
    starts = admin.list_offsets(tps, "earliest")
    ends = admin.list_offsets(tps, "latest")
    out = {}
    for key in starts:
        lo, hi = starts[key], ends[key]
        if pos.kind == FROM_END:
            out[key] = max(lo, hi - pos.value)
            continue
        want = pos.value
        if clamp and want > hi:
            warn(f"offset {want} is past the end of {key[0]}[{key[1]}] ({hi}); "
                 f"starting at the end")
            want = hi
        elif clamp and want < lo:
            warn(f"offset {want} is before the start of {key[0]}[{key[1]}] ({lo}); "
                 f"starting at the start")
            want = lo
        out[key] = want
    return out


def warn(text: str) -> None:
    print(f"headrace: warning: {text}", file=sys.stderr, flush=True)
