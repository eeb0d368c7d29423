"""``headrace acl create|list|delete``: ACLs, with kafka-acls.sh's flags
(docs/cli.md, docs/security.md). Talks CreateAcls / DescribeAcls /
DeleteAcls through confluent-kafka's AdminClient, so it works against any
Kafka-compatible cluster with an authorizer."""
from __future__ import annotations

import argparse
import itertools

from headrace.cli.common import CliError, add_client_flags, admin_for
from headrace.cli.output import add_format_flag, emit, print_rows

OPERATIONS = ("All", "Read", "Write", "Create", "Delete", "Alter", "Describe", "ClusterAction",
              "DescribeConfigs", "AlterConfigs", "IdempotentWrite")
CLUSTER_NAME = "kafka-cluster"


def _norm(text: str) -> str:
    return text.replace("_", "").replace("-", "").lower()


def add_acl_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("acl", help="create, list and delete ACLs (needs an authorizer)")
    asub = p.add_subparsers(dest="acl_command", metavar="ACTION")
    asub.required = True

    c = asub.add_parser("create", help="add ACLs: every principal x operation x resource")
    _resource_flags(c, pattern_default="LITERAL", patterns=("LITERAL", "PREFIXED"))
    _principal_flags(c)
    c.add_argument("--operation", action="append", metavar="OP",
                   help=f"operation to allow/deny (repeatable; {', '.join(OPERATIONS)}; "
                        "default All)")
    c.add_argument("--host", action="append", metavar="HOST",
                   help="client IP the ACLs apply to (repeatable; default * = every host)")
    c.set_defaults(func=_create)

    ls = asub.add_parser("list", help="the ACLs matching the filter (default: all)")
    _resource_flags(ls, pattern_default="ANY",
                    patterns=("ANY", "MATCH", "LITERAL", "PREFIXED"))
    ls.add_argument("--principal", metavar="PRINCIPAL", help="only this principal (User:name)")
    ls.add_argument("--host", metavar="HOST", help="only ACLs for this host")
    ls.add_argument("--operation", metavar="OP", help="only this operation")
    add_format_flag(ls)
    ls.set_defaults(func=_list)

    rm = asub.add_parser("delete", help="remove the ACLs matching the filter; prints them")
    _resource_flags(rm, pattern_default="LITERAL",
                    patterns=("ANY", "MATCH", "LITERAL", "PREFIXED"))
    _principal_flags(rm)
    rm.add_argument("--operation", action="append", metavar="OP",
                    help="only these operations (repeatable; default: any)")
    rm.add_argument("--host", metavar="HOST", help="only ACLs for this host (default: any)")
    rm.add_argument("--all", action="store_true",
                    help="match every principal (needed when no --*-principal is given)")
    add_format_flag(rm)
    rm.set_defaults(func=_delete)

    for sp in (c, ls, rm):
        add_client_flags(sp)


def _resource_flags(p: argparse.ArgumentParser, pattern_default: str, patterns) -> None:
    p.add_argument("--topic", action="append", metavar="TOPIC", help="a topic (repeatable)")
    p.add_argument("--group", action="append", metavar="GROUP",
                   help="a consumer group (repeatable)")
    p.add_argument("--transactional-id", action="append", metavar="ID",
                   help="a transactional id (repeatable)")
    p.add_argument("--cluster", action="store_true", help="the cluster (kafka-cluster)")
    p.add_argument("--resource-pattern-type", default=pattern_default, type=str.upper,
                   choices=patterns,
                   help=f"how resource names match (default {pattern_default})")


def _principal_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--allow-principal", action="append", metavar="PRINCIPAL",
                   help="principal to allow, e.g. User:alice or User:* (repeatable)")
    p.add_argument("--deny-principal", action="append", metavar="PRINCIPAL",
                   help="principal to deny (repeatable)")


def _resources(args, required: bool):
    """[(ResourceType, name)]; None names = any (list/delete without a resource)."""
    from confluent_kafka.admin import ResourceType

    out = [(ResourceType.TOPIC, t) for t in args.topic or []]
    out += [(ResourceType.GROUP, g) for g in args.group or []]
    out += [(ResourceType.TRANSACTIONAL_ID, t) for t in args.transactional_id or []]
    if args.cluster:
        out.append((ResourceType.BROKER, CLUSTER_NAME))
    if not out and required:
        raise CliError("name a resource: --topic, --group, --transactional-id or --cluster")
    return out


def _operation(name: str):
    from confluent_kafka.admin import AclOperation

    for op in AclOperation:
        if _norm(op.name) == _norm(name) and op.name not in ("UNKNOWN", "ANY"):
            return op
    raise CliError(f"unknown operation {name!r} (use one of {', '.join(OPERATIONS)})")


def _pattern(name: str):
    from confluent_kafka.admin import ResourcePatternType

    return ResourcePatternType[name]


def _principals(args, required: bool):
    from confluent_kafka.admin import AclPermissionType

    out = [(p, AclPermissionType.ALLOW) for p in args.allow_principal or []]
    out += [(p, AclPermissionType.DENY) for p in args.deny_principal or []]
    for p, _ in out:
        kind, sep, name = p.partition(":")
        if not sep or not kind or not name:
            raise CliError(f"principal {p!r} must be TYPE:NAME, e.g. User:alice")
    if not out and required:
        raise CliError("name a principal: --allow-principal or --deny-principal")
    return out


def _row(b) -> dict:
    restype = "Cluster" if b.restype.name == "BROKER" else \
        {"TOPIC": "Topic", "GROUP": "Group", "TRANSACTIONAL_ID": "TransactionalId"}.get(
            b.restype.name, b.restype.name)
    return {"resource_type": restype, "pattern_type": b.resource_pattern_type.name,
            "name": b.name, "principal": b.principal, "host": b.host,
            "operation": b.operation.name, "permission": b.permission_type.name}


def _table(rows: list[dict]) -> None:
    keys = ["resource_type", "pattern_type", "name", "principal", "host", "operation",
            "permission"]
    print_rows([k.upper() for k in keys], [[r[k] for k in keys] for r in rows])


def _sorted(rows: list[dict]) -> list[dict]:
    return sorted(rows, key=lambda r: tuple(r.values()))


def _create(args) -> int:
    from confluent_kafka.admin import AclBinding

    resources = _resources(args, required=True)
    principals = _principals(args, required=True)
    ops = [_operation(o) for o in args.operation or ["All"]]
    hosts = args.host or ["*"]
    pattern = _pattern(args.resource_pattern_type)
    bindings = [AclBinding(rt, name, pattern, principal, host, op, perm)
                for (rt, name), (principal, perm), op, host
                in itertools.product(resources, principals, ops, hosts)]
    admin = admin_for(args)
    futures = admin.client.create_acls(bindings, request_timeout=args.timeout)
    from headrace.admin import _wait

    for binding, future in futures.items():
        _wait(future, args.timeout, "create ACL")
    for b in bindings:
        r = _row(b)
        print(f"created: {r['permission']} {r['principal']} {r['operation']} from "
              f"{r['host']} on {r['resource_type']}:{r['pattern_type']}:{r['name']}")
    return 0


def _filters(args, principals, ops, host):
    from confluent_kafka.admin import AclBindingFilter, AclPermissionType, ResourceType

    resources = _resources(args, required=False) or [(ResourceType.ANY, None)]
    principals = principals or [(None, AclPermissionType.ANY)]
    pattern = _pattern(args.resource_pattern_type)
    return [AclBindingFilter(rt, name, pattern, principal, host, op, perm)
            for (rt, name), (principal, perm), op in itertools.product(resources, principals, ops)]


def _list(args) -> int:
    from confluent_kafka.admin import AclOperation, AclPermissionType

    from headrace.admin import _wait

    ops = [_operation(args.operation)] if args.operation else [AclOperation.ANY]
    principals = [(args.principal, AclPermissionType.ANY)] if args.principal else []
    admin = admin_for(args)
    rows = []
    for f in _filters(args, principals, ops, args.host):
        found = _wait(admin.client.describe_acls(f, request_timeout=args.timeout), args.timeout,
                      "list ACLs")
        rows.extend(_row(b) for b in found)
    rows = _sorted({tuple(r.items()): r for r in rows}.values())
    return emit(args, {"acls": rows}, lambda: _table(rows))


def _delete(args) -> int:
    from confluent_kafka.admin import AclOperation

    from headrace.admin import _wait

    principals = _principals(args, required=False)
    if not principals and not args.all:
        raise CliError("name the principals (--allow-principal / --deny-principal) or pass "
                       "--all to delete for every principal")
    if not _resources(args, required=False) and not args.all:
        raise CliError("name a resource (--topic, --group, --transactional-id, --cluster) or "
                       "pass --all")
    ops = [_operation(o) for o in args.operation] if args.operation else [AclOperation.ANY]
    admin = admin_for(args)
    filters = _filters(args, principals, ops, args.host)
    futures = admin.client.delete_acls(filters, request_timeout=args.timeout)
    rows = []
    for f, future in futures.items():
        rows.extend(_row(b) for b in _wait(future, args.timeout, "delete ACLs"))
    rows = _sorted({tuple(r.items()): r for r in rows}.values())

    def table():
        if rows:
            _table(rows)
        print(f"deleted {len(rows)} ACL(s)")

    return emit(args, {"deleted": rows}, table)
