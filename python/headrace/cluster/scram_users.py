"""SCRAM credentials in ZooKeeper, as Kafka's ZooKeeper mode keeps them
(docs/security.md "SCRAM credentials"):

    /config/users/<sanitized user>  {"version": 1, "config": {
        "SCRAM-SHA-256": "salt=<b64>,stored_key=<b64>,server_key=<b64>,iterations=<n>", ...}}

with a change notification ``/config/changes/config_change_<seq>`` =
``{"version": 2, "entity_path": "users/<sanitized user>"}``. Other keys of a
user's config (quotas) are kept as they are. The data plane validates an
AlterUserScramCredentials request and computes the credentials; this module
only writes them (``alter``) and reads the whole set for the cluster state
(``read``), which every broker hands to its credential store."""
from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import urllib.parse
from typing import Any, Callable, Mapping

from headrace.cluster import topic_admin

CONFIG_USERS = "/config/users"
SCRAM_MECHANISMS = ("SCRAM-SHA-256", "SCRAM-SHA-512")


def sanitize(user: str) -> str:
    """Kafka's Sanitizer: the URL-encoded name ('*' as %2A)."""
    return urllib.parse.quote(user, safe="").replace("*", "%2A")


def desanitize(name: str) -> str:
    return urllib.parse.unquote(name)


def _config(data: bytes | None) -> dict[str, str]:
    if not data:
        return {}
    try:
        obj = json.loads(data.decode())
    except (UnicodeDecodeError, json.JSONDecodeError):
        return {}
    config = obj.get("config") if isinstance(obj, dict) else None
    return {str(k): str(v) for k, v in config.items()} if isinstance(config, dict) else {}


def read(children: Callable[[str, Any], list[str]],
         data_many: Callable[[list[str], Any], dict[str, bytes | None]],
         dirty: Any) -> dict[str, dict[str, str]]:
    """{user: {mechanism: credential text}} of every user with a SCRAM
    credential, through the member's cached, watched reads."""
    names = sorted(children(CONFIG_USERS, dirty))
    paths = [f"{CONFIG_USERS}/{n}" for n in names]
    data = data_many(paths, dirty)
    out: dict[str, dict[str, str]] = {}
    for n, p in zip(names, paths):
        creds = {k: v for k, v in _config(data[p]).items() if k in SCRAM_MECHANISMS}
        if creds:
            out[desanitize(n)] = creds
    return out


def alter(zk, payload: Mapping[str, Any]) -> dict:
    """Applies {"deletions": [{"user", "mechanism"}], "upsertions": [{"user",
    "mechanism", "credential"}]} user by user (read-modify-write with the
    znode's version) and announces each changed user."""
    changes: dict[str, dict[str, str | None]] = {}
    for d in payload.get("deletions") or []:
        changes.setdefault(str(d["user"]), {})[str(d["mechanism"])] = None
    for u in payload.get("upsertions") or []:
        changes.setdefault(str(u["user"]), {})[str(u["mechanism"])] = str(u["credential"])
    for user, mechs in changes.items():
        def apply(config: dict[str, str], mechs=mechs) -> dict[str, str]:
            for mech, cred in mechs.items():
                if cred is None:
                    config.pop(mech, None)
                else:
                    config[mech] = cred
            return config

        topic_admin.update_entity_config(zk, f"users/{sanitize(user)}", apply)
    return {"error_code": 0, "error_message": None}


def credential(mechanism: str, password: str, iterations: int = 4096,
               salt: bytes | None = None) -> str:
    """Kafka's credential text of ``password`` (RFC 5802: SaltedPassword =
    PBKDF2-HMAC(password, salt, iterations); StoredKey = H(HMAC(SaltedPassword,
    "Client Key")); ServerKey = HMAC(SaltedPassword, "Server Key"))."""
    if mechanism not in SCRAM_MECHANISMS:
        raise ValueError(f"not a SCRAM mechanism: {mechanism}")
    digest = "sha256" if mechanism == "SCRAM-SHA-256" else "sha512"
    salt = salt if salt is not None else os.urandom(16)
    salted = hashlib.pbkdf2_hmac(digest, password.encode(), salt, iterations)
    client_key = hmac.new(salted, b"Client Key", digest).digest()
    stored_key = hashlib.new(digest, client_key).digest()
    server_key = hmac.new(salted, b"Server Key", digest).digest()

    def b64(b: bytes) -> str:
        return base64.b64encode(b).decode()

    return (f"salt={b64(salt)},stored_key={b64(stored_key)},server_key={b64(server_key)},"
            f"iterations={iterations}")


def upsert_password(zk, user: str, mechanism: str, password: str, iterations: int = 4096) -> None:
    """Sets ``user``'s ``mechanism`` credential straight in ZooKeeper: how a
    secured cluster's inter-broker user is created before any broker runs
    (Kafka: kafka-configs --zookeeper ... --add-config 'SCRAM-SHA-512=[password=...]')."""
    alter(zk, {"upsertions": [{"user": user, "mechanism": mechanism,
                               "credential": credential(mechanism, password, iterations)}]})
