"""``--format table|json`` of the list and describe commands.

``table`` (the default) is text for people: tab-separated columns under a
header line. ``json`` is for programs: exactly one JSON document on stdout
(an object; lists sit under a named key), with the keys documented per
command in docs/cli.md. Keys are only ever added, never renamed.
"""
from __future__ import annotations

import argparse
import json
import sys
from typing import Any, Callable

FORMATS = ("table", "json")


def add_format_flag(p: argparse.ArgumentParser) -> None:
    p.add_argument("--format", choices=FORMATS, default="table",
                   help="table (default, for people) or json (one document, for programs)")


def emit(args: argparse.Namespace, doc: dict[str, Any], table: Callable[[], None]) -> int:
    """Prints ``doc`` as JSON when --format json, else calls ``table()``."""
    if args.format == "json":
        sys.stdout.write(json.dumps(doc, indent=2, ensure_ascii=False) + "\n")
    else:
        table()
    return 0


def print_rows(header: list[str], rows: list[list[Any]]) -> None:
    """A tab-separated table; None cells print as '-'."""
    print("\t".join(header))
    for row in rows:
        print("\t".join("-" if c is None else str(c) for c in row))
