"""``headrace config show``: every broker setting `headrace broker` would use
with the same --config/--set (and environment), its effective value and
where that value came from: ``default``, ``file PATH``, ``environment`` or
``flag``. The settings are validated as a broker start would validate them,
so a bad value is one error line and a non-zero exit; a key neither
headrace's nor Kafka's is one warning line each and left out, as at a broker
start."""
from __future__ import annotations

import argparse
import sys

from headrace.cli.common import parse_pairs
from headrace.cli.output import add_format_flag, emit
from headrace.settings import DEFAULT_SOURCE, EffectiveSetting, effective, gather


def add_config_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("config", help="inspect broker configuration")
    csub = p.add_subparsers(dest="config_command", metavar="ACTION")
    csub.required = True
    s = csub.add_parser("show", help="effective broker settings and their sources",
                        description="Print every broker setting as KEY=VALUE<TAB>(SOURCE), "
                                    "SOURCE being default, file PATH, environment or flag.")
    s.add_argument("--config", metavar="FILE", help="config file (TOML or server.properties), as for `headrace broker`")
    s.add_argument("--set", action="append", metavar="KEY=VALUE", help="as for `headrace broker`")
    s.add_argument("--changed", action="store_true",
                   help="only the settings a file, the environment or a flag set")
    s.add_argument("--doc", action="store_true",
                   help="append each setting's built-in default and a one-line description")
    add_format_flag(s)
    s.set_defaults(func=_show)
    d = csub.add_parser("docs", help="the generated key reference of docs/configuration.md",
                        description="Print the broker and topic key tables (Markdown) that "
                                    "docs/configuration.md holds between its GENERATED markers; "
                                    "--check FILE exits 1 when FILE's copy differs.")
    d.add_argument("--check", metavar="FILE", help="compare with the copy in FILE instead")
    d.set_defaults(func=_docs)


def _source(row: EffectiveSetting) -> str:
    if row.set_as and row.set_as != row.name:
        return f"{row.source}, as {row.set_as}"
    return row.source


def _show(args) -> int:
    settings = gather(args.config, parse_pairs(args.set, "--set"))
    for warning in settings.unknown_warnings():  # left out, as the broker does
        print(f"headrace: warning: {warning}", file=sys.stderr)
    rows = [row for row in effective(settings)
            if not (args.changed and row.source == DEFAULT_SOURCE)]
    doc = {"settings": [{"name": row.name, "value": row.value, "source": row.source,
                         "set_as": row.set_as or None, "default": row.default,
                         "doc": row.doc} for row in rows]}

    def table():
        for row in rows:
            line = f"{row.name}={row.value}\t({_source(row)})"
            if args.doc:
                default = row.default if row.default else '""'
                line += f"\t# default {default}: {row.doc}"
            print(line)

    return emit(args, doc, table)


def generated_section(text: str) -> str | None:
    """The GENERATED section of a docs file (markers included), or None."""
    begin = text.find("<!-- BEGIN GENERATED: headrace config docs -->")
    end_marker = "<!-- END GENERATED -->\n"
    end = text.find(end_marker, begin)
    if begin < 0 or end < 0:
        return None
    return text[begin:end + len(end_marker)]


def _docs(args) -> int:
    from headrace._core import config_docs

    docs = config_docs()
    if not args.check:
        print(docs, end="")
        return 0
    with open(args.check, encoding="utf-8") as f:
        current = generated_section(f.read())
    if current != docs:
        print(f"{args.check}: the generated key reference differs from the tables; "
              f"regenerate it with `headrace config docs`")
        return 1
    return 0
