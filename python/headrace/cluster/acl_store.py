"""ACLs in ZooKeeper, in Kafka's ZooKeeper-mode layout (docs/security.md).

One znode per resource pattern holds every binding on it:

- literal patterns: ``/kafka-acl/<ResourceType>/<name>``
- prefixed patterns: ``/kafka-acl-extended/prefixed/<ResourceType>/<name>``

with ``{"version": 1, "acls": [{"principal": "User:alice", "permissionType":
"Allow", "operation": "Read", "host": "*"}]}``. Every change is announced as
Kafka does: a sequential ``/kafka-acl-changes/acl_changes_`` znode holding
``Topic:orders`` (literal), or ``/kafka-acl-extended-changes/acl_changes_``
holding ``{"version": 1, "resourceType": "Topic", "name": "pay",
"patternType": "PREFIXED"}``. headrace's brokers do not need the
notifications: each member watches the ACL znodes themselves and pushes the
whole set to its C++ broker with the cluster state (``"acls"``).

A binding here is the dict the C++ core reads (broker/security/auth/acl.h):
``{"resource_type": "Topic", "pattern_type": "LITERAL", "name", "principal",
"host", "operation": "Read", "permission": "Allow"}``.
"""
from __future__ import annotations

import json
from collections import defaultdict
from typing import Any, Callable, Iterable

from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError

LITERAL_ROOT = "/kafka-acl"
PREFIXED_ROOT = "/kafka-acl-extended/prefixed"
LITERAL_CHANGES = "/kafka-acl-changes"
EXTENDED_CHANGES = "/kafka-acl-extended-changes"
RESOURCE_TYPES = ("Topic", "Group", "Cluster", "TransactionalId", "DelegationToken", "User")
PATTERNS = {"LITERAL": LITERAL_ROOT, "PREFIXED": PREFIXED_ROOT}
INVALID_REQUEST = 42
UNKNOWN_SERVER_ERROR = -1


class AclLayoutError(ValueError):
    """An ACL znode whose content is not Kafka's JSON."""


def type_path(pattern: str, resource_type: str) -> str:
    return f"{PATTERNS[pattern]}/{resource_type}"


def resource_path(pattern: str, resource_type: str, name: str) -> str:
    return f"{type_path(pattern, resource_type)}/{name}"


def encode(entries: Iterable[dict]) -> bytes:
    acls = sorted(entries, key=lambda e: (e["principal"], e["permissionType"], e["operation"],
                                          e["host"]))
    return json.dumps({"version": 1, "acls": acls}, sort_keys=True).encode()


def decode(data: bytes | None, path: str) -> list[dict]:
    """The entries of one resource znode (empty when missing)."""
    if not data:
        return []
    try:
        obj = json.loads(data)
        return [{"principal": str(a["principal"]), "permissionType": str(a["permissionType"]),
                 "operation": str(a["operation"]), "host": str(a["host"])}
                for a in obj.get("acls", [])]
    except (ValueError, KeyError, TypeError, AttributeError) as e:
        raise AclLayoutError(f"{path}: not Kafka's ACL JSON ({e})") from e


def entry_of(binding: dict) -> dict:
    return {"principal": binding["principal"], "permissionType": binding["permission"],
            "operation": binding["operation"], "host": binding["host"]}


def canonical(bindings: Iterable[dict]) -> set[str]:
    """Bindings (the C++ core's dicts) as comparable strings."""
    return {json.dumps(b, sort_keys=True)
            for b in (bindings_of(b["pattern_type"], b["resource_type"], b["name"], [entry_of(b)])[0]
                      for b in bindings)}


def bindings_of(pattern: str, resource_type: str, name: str, entries: list[dict]) -> list[dict]:
    return [{"resource_type": resource_type, "pattern_type": pattern, "name": name,
             "principal": e["principal"], "host": e["host"], "operation": e["operation"],
             "permission": e["permissionType"]} for e in entries]


def read_all(children: Callable[[str], list[str]],
             data_many: Callable[[list[str]], dict[str, bytes | None]],
             on_error: Callable[[str], None] = lambda _: None) -> list[dict]:
    """Every binding, sorted, read through ``children(path)`` and
    ``data_many(paths)`` (the member's watching cache)."""
    out = []
    for pattern in PATTERNS:
        for rtype in RESOURCE_TYPES:
            names = sorted(children(type_path(pattern, rtype)))
            paths = [resource_path(pattern, rtype, n) for n in names]
            datas = data_many(paths)
            for name, path in zip(names, paths):
                try:
                    out.extend(bindings_of(pattern, rtype, name, decode(datas[path], path)))
                except AclLayoutError as e:
                    on_error(str(e))
    return sorted(out, key=lambda b: tuple(b[k] for k in sorted(b)))


def _announce(zk, pattern: str, resource_type: str, name: str) -> None:
    if pattern == "LITERAL":
        zk.create(f"{LITERAL_CHANGES}/acl_changes_", f"{resource_type}:{name}".encode(),
                  sequence=True, makepath=True)
    else:
        zk.create(f"{EXTENDED_CHANGES}/acl_changes_",
                  json.dumps({"version": 1, "resourceType": resource_type, "name": name,
                              "patternType": pattern}).encode(),
                  sequence=True, makepath=True)


def _update(zk, path: str, change: Callable[[list[dict]], list[dict]]) -> bool:
    """Read-modify-write of one resource znode with a version check; an
    empty result deletes it. True when it changed."""
    while True:
        try:
            data, stat = zk.get(path)
            version = stat.version
        except NoNodeError:
            data, version = None, None
        before = decode(data, path)
        after = change(before)
        if sorted(map(json.dumps, after)) == sorted(map(json.dumps, before)):
            return False
        try:
            if version is None:
                zk.create(path, encode(after), makepath=True)
            elif after:
                zk.set(path, encode(after), version=version)
            else:
                zk.delete(path, version=version)
            return True
        except (BadVersionError, NodeExistsError, NoNodeError):
            continue  # raced with another writer: read again


def _by_resource(payload: dict[str, Any]) -> dict[tuple[str, str, str], list[dict]]:
    grouped: dict[tuple[str, str, str], list[dict]] = defaultdict(list)
    for b in payload.get("acls") or []:
        pattern, rtype = str(b["pattern_type"]), str(b["resource_type"])
        if pattern not in PATTERNS or rtype not in RESOURCE_TYPES:
            raise ValueError(f"unsupported ACL pattern {pattern}/{rtype}")
        grouped[(pattern, rtype, str(b["name"]))].append(entry_of(b))
    return grouped


def _apply(zk, payload: dict[str, Any], add: bool) -> dict:
    try:
        grouped = _by_resource(payload)
    except (KeyError, ValueError, TypeError) as e:
        return {"error_code": INVALID_REQUEST, "error_message": f"bad ACL payload: {e}"}
    for (pattern, rtype, name), entries in grouped.items():
        wanted = [json.dumps(e, sort_keys=True) for e in entries]

        def change(current: list[dict]) -> list[dict]:
            kept = [e for e in current if json.dumps(e, sort_keys=True) not in wanted]
            if not add:
                return kept
            return kept + [json.loads(w) for w in dict.fromkeys(wanted)]

        if _update(zk, resource_path(pattern, rtype, name), change):
            _announce(zk, pattern, rtype, name)
    return {"error_code": 0, "error_message": None}


def create_acls(zk, payload: dict[str, Any]) -> dict:
    """Adds payload["acls"] (validated by the data plane)."""
    return _apply(zk, payload, add=True)


def delete_acls(zk, payload: dict[str, Any]) -> dict:
    """Removes exactly payload["acls"] (matched by the data plane)."""
    return _apply(zk, payload, add=False)
