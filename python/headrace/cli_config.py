"""``headrace config show``: the broker settings `headrace broker` would use
with the same --config/--set, and where each value came from (file,
environment, flag). Unlisted keys keep the core's built-in defaults
(docs/configuration.md)."""
from __future__ import annotations

import argparse

from headrace.cli_common import parse_pairs
from headrace.settings import gather


def add_config_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("config", help="inspect broker configuration")
    csub = p.add_subparsers(dest="config_command", metavar="ACTION")
    csub.required = True
    s = csub.add_parser("show", help="effective broker settings and their sources")
    s.add_argument("--config", metavar="FILE", help="TOML config file, as for `headrace broker`")
    s.add_argument("--set", action="append", metavar="KEY=VALUE", help="as for `headrace broker`")
    s.set_defaults(func=_show)


def _show(args) -> int:
    settings = gather(args.config, parse_pairs(args.set, "--set"))
    for key in sorted(settings.values):
        print(f"{key}={settings.values[key]}\t({settings.sources[key]})")
    print("# every other key: built-in default (docs/configuration.md)")
    return 0
