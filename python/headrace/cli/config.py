"""``headrace config show``: every broker setting `headrace broker` would use
with the same --config/--set (and environment), its effective value and
where that value came from: ``default``, ``file PATH``, ``environment`` or
``flag``. The settings are validated as a broker start would validate them,
so a bad value is one error line and a non-zero exit; a key neither
headrace's nor Kafka's is one warning line each and left out, as at a broker
start.

``headrace config get|set|delete --broker N|--all|--group G``: a running
cluster's broker configs over DescribeConfigs / IncrementalAlterConfigs, as
``kafka-configs --entity-type brokers --entity-name N|--entity-default``
and ``rpk cluster config get|set`` do: ``--broker N`` is broker N's own
dynamic config (asked of broker N), ``--all`` the cluster-wide dynamic
default (BROKER resource "", any broker; every broker applies it unless it
has its own value). ``--group G`` is group G's group configs (GROUP
resource, any broker; ``kafka-configs --entity-type groups``). Sources are
Kafka's names (DYNAMIC_BROKER_CONFIG, DYNAMIC_DEFAULT_BROKER_CONFIG,
DYNAMIC_GROUP_CONFIG, STATIC_BROKER_CONFIG, DEFAULT_CONFIG)."""
from __future__ import annotations

import argparse
import sys

from headrace.cli.common import CliError, add_client_flags, admin_for, parse_pairs
from headrace.cli.output import add_format_flag, emit
from headrace.settings import DEFAULT_SOURCE, EffectiveSetting, effective, gather


def add_config_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("config", help="inspect and change broker configuration")
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

    g = csub.add_parser("get", help="a running broker's configs (DescribeConfigs)",
                        description="Print KEY=VALUE<TAB>(SOURCE) of broker N (--broker N: "
                                    "every key, with where its value comes from) or the "
                                    "cluster-wide dynamic defaults (--all).")
    g.add_argument("keys", nargs="*", metavar="KEY", help="only these keys")
    _add_target(g)
    g.add_argument("--changed", action="store_true",
                   help="only keys not at their built-in default")
    add_format_flag(g)
    g.set_defaults(func=_get)
    st = csub.add_parser("set", help="set dynamic broker configs (IncrementalAlterConfigs)",
                         description="Set dynamic configs of broker N (--broker N) or the "
                                     "cluster-wide default of every broker (--all); they take "
                                     "effect without a restart and survive one.")
    st.add_argument("pairs", nargs="+", metavar="KEY=VALUE")
    _add_target(st)
    st.add_argument("--dry-run", action="store_true",
                    help="let the broker validate the change, change nothing")
    st.set_defaults(func=_set)
    dl = csub.add_parser("delete", help="remove dynamic broker configs (back to the next "
                                        "source: cluster default, file, built-in default)")
    dl.add_argument("keys", nargs="+", metavar="KEY")
    _add_target(dl)
    dl.set_defaults(func=_delete)
    for sp in (g, st, dl):
        add_client_flags(sp)


def _add_target(p: argparse.ArgumentParser) -> None:
    t = p.add_mutually_exclusive_group(required=True)
    t.add_argument("--broker", type=int, metavar="N", help="broker N's own dynamic config")
    t.add_argument("--all", action="store_true",
                   help="the cluster-wide dynamic default (kafka-configs --entity-default)")
    t.add_argument("--group", metavar="G",
                   help="group G's group configs (share.auto.offset.reset, ...; "
                        "kafka-configs --entity-type groups)")


def _resource(args) -> int:
    from headrace.admin_wire import RESOURCE_BROKER, RESOURCE_GROUP

    return RESOURCE_GROUP if args.group is not None else RESOURCE_BROKER


def _target(admin, args) -> tuple[str, list[tuple[int, str, int]]]:
    """(resource name, brokers to ask in order): broker N itself for
    --broker N; any broker (the bootstrap ones first) for --all and --group."""
    if args.group is not None and not args.group:
        raise CliError("--group needs a group id")
    brokers = admin._brokers()
    if args.group is not None:
        return args.group, brokers
    if args.all:
        return "", brokers
    match = [b for b in brokers if b[0] == args.broker]
    if not match:
        ids = ", ".join(str(b[0]) for b in brokers)
        raise CliError(f"no broker {args.broker} in the cluster (brokers: {ids})")
    return str(args.broker), match


def _what(args) -> str:
    if args.group is not None:
        return f"group {args.group}"
    return "the cluster-wide default" if args.all else f"broker {args.broker}"


def _get(args) -> int:
    admin = admin_for(args)
    name, brokers = _target(admin, args)
    entries = admin.configs_from(brokers, _resource(args), name)
    if args.all:  # Kafka answers "" with the dynamic defaults alone; keep only those
        entries = [e for e in entries if e.source in ("DYNAMIC_DEFAULT_BROKER_CONFIG",
                                                      "UNKNOWN")]
    by_name = {e.name: e for e in entries}
    if args.keys:
        unknown = [k for k in args.keys if k not in by_name]
        if unknown and not args.all:
            kind = "group" if args.group is not None else "broker"
            raise CliError(f"unknown {kind} config: {', '.join(unknown)}")
        entries = [by_name[k] for k in args.keys if k in by_name]
    if args.changed:
        entries = [e for e in entries if e.source != "DEFAULT_CONFIG"]
    doc = {"broker": None if args.all or args.group is not None else args.broker,
           **({"group": args.group} if args.group is not None else {}),
           "configs": {e.name: {"value": None if e.sensitive else e.value, "source": e.source,
                                "read_only": e.read_only, "sensitive": e.sensitive}
                       for e in entries}}

    def table():
        for key, c in doc["configs"].items():
            value = "(sensitive)" if c["sensitive"] else ("" if c["value"] is None
                                                          else c["value"])
            print(f"{key}={value}\t({c['source']}{', read-only' if c['read_only'] else ''})")

    return emit(args, doc, table)


def _alter(args, ops: list[tuple[str, str | None]], dry_run: bool = False) -> None:
    admin = admin_for(args)
    name, brokers = _target(admin, args)
    admin.alter_configs_at(brokers[0], _resource(args), name, ops, dry_run)


def _set(args) -> int:
    pairs = parse_pairs(args.pairs, "config set")
    _alter(args, list(pairs.items()), args.dry_run)
    verb = "would set" if args.dry_run else "set"
    print(f"{_what(args)}: {verb} " + ", ".join(f"{k}={v}" for k, v in pairs.items()))
    return 0


def _delete(args) -> int:
    keys = [k.strip() for k in args.keys]
    if not all(keys):
        raise CliError("config delete expects KEY names")
    _alter(args, [(k, None) for k in keys])
    print(f"{_what(args)}: deleted " + ", ".join(keys))
    return 0


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
