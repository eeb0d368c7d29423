"""``headrace quota set|describe``: client quotas (Kafka's
producer_byte_rate, consumer_byte_rate, request_percentage,
controller_mutation_rate) on users, client ids, both, or their defaults,
through AlterClientQuotas (49) / DescribeClientQuotas (48)
(:class:`headrace.admin.Admin`; docs/security.md "Quotas").

An entity is named with ``--user NAME`` / ``--client-id NAME`` and
``--default user`` / ``--default client-id`` for Kafka's ``<default>``
entities. ``describe`` prints one row per entity and key; ``--format
json`` prints ``{"quotas": [{"entity": {"user": "alice", "client-id":
null}, "values": {"producer_byte_rate": 1048576.0}}]}`` (a null name is the
default).
"""
from __future__ import annotations

import argparse

from headrace.cli.common import CliError, add_client_flags, admin_for
from headrace.cli.output import add_format_flag, emit, print_rows

USER, CLIENT_ID = "user", "client-id"
# Flag -> Kafka quota key.
QUOTA_FLAGS = {"producer_byte_rate": "--producer-byte-rate",
               "consumer_byte_rate": "--consumer-byte-rate",
               "request_percentage": "--request-percentage",
               "controller_mutation_rate": "--controller-mutation-rate"}


def _add_entity_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--user", metavar="NAME", help="the user (principal name, e.g. alice; "
                   "unauthenticated clients are ANONYMOUS)")
    p.add_argument("--client-id", metavar="NAME", help="the client id")
    p.add_argument("--default", action="append", choices=(USER, CLIENT_ID), default=[],
                   help="the default user or client id (Kafka's <default> entity; repeatable)")


def add_quota_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("quota", help="set and describe client quotas")
    qsub = p.add_subparsers(dest="quota_command", metavar="ACTION")
    qsub.required = True

    s = qsub.add_parser("set", help="set or remove quotas of one user / client-id entity")
    _add_entity_flags(s)
    for key, flag in QUOTA_FLAGS.items():
        s.add_argument(flag, dest=key, type=float, metavar="N",
                       help=f"set {key}" + (" (bytes/s)" if "byte" in key else ""))
    s.add_argument("--delete", action="append", default=[], metavar="KEY",
                   choices=list(QUOTA_FLAGS), help="remove a quota key (repeatable)")
    s.add_argument("--validate-only", action="store_true",
                   help="check the change without making it")
    s.set_defaults(func=_set)

    d = qsub.add_parser("describe", help="quotas of the entities matching a filter")
    _add_entity_flags(d)
    d.add_argument("--strict", action="store_true",
                   help="only entities with exactly the named components")
    add_format_flag(d)
    d.set_defaults(func=_describe)
    for sp in (s, d):
        add_client_flags(sp)


def entity_of(args: argparse.Namespace) -> list[tuple[str, str | None]]:
    """The entity the flags name: [(type, name or None for the default)]."""
    out: list[tuple[str, str | None]] = []
    for kind, name in ((USER, args.user), (CLIENT_ID, args.client_id)):
        if name is not None and kind in args.default:
            raise CliError(f"--{kind} and --default {kind} exclude each other")
        if name is not None:
            if not name:
                raise CliError(f"--{kind} needs a name (use --default {kind} for the default)")
            out.append((kind, name))
        elif kind in args.default:
            out.append((kind, None))
    return out


def _set(args: argparse.Namespace) -> int:
    entity = entity_of(args)
    if not entity:
        raise CliError("name an entity: --user, --client-id and/or --default user|client-id")
    values: dict[str, float | None] = {}
    for key in QUOTA_FLAGS:
        if getattr(args, key) is not None:
            values[key] = getattr(args, key)
    for key in args.delete:
        if key in values:
            raise CliError(f"{QUOTA_FLAGS[key]} and --delete {key} exclude each other")
        values[key] = None
    if not values:
        raise CliError("nothing to change: give a quota (e.g. --producer-byte-rate 1048576) "
                       "or --delete KEY")
    admin_for(args).alter_quotas(entity, values, args.validate_only)
    return 0


def _name(n: str | None) -> str:
    return "<default>" if n is None else n


def _describe(args: argparse.Namespace) -> int:
    components = [(kind, 1 if name is None else 0, name) for kind, name in entity_of(args)]
    found = admin_for(args).describe_quotas(components, args.strict)
    found.sort(key=lambda e: [(t, _name(n)) for t, n in e[0]])
    doc = {"quotas": [{"entity": {t: n for t, n in entity}, "values": values}
                      for entity, values in found]}

    def table():
        rows = []
        for entity, values in found:
            user = next((_name(n) for t, n in entity if t == USER), None)
            client = next((_name(n) for t, n in entity if t == CLIENT_ID), None)
            for key, value in sorted(values.items()):
                rows.append([user, client, key, f"{value:g}" if value != int(value)
                             else str(int(value))])
        print_rows(["USER", "CLIENT_ID", "KEY", "VALUE"], rows)
    return emit(args, doc, table)
