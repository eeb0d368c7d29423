"""CreateTopics, DeleteTopics and CreatePartitions carried out in ZooKeeper,
as a broker's control plane answers them (``next_control_request``).

Each function takes a started KazooClient and the request payload of
docs/cluster.md, and returns the result payload: per topic ``name``,
``error_code`` (Kafka's), ``error_message`` (None on success) and, for
creations, the ``topic_id``, ``num_partitions`` and ``replication_factor``
it got. The controller then creates the partition states (leaders, ISRs)
of what these write.
"""
from __future__ import annotations

import json
import logging
import re
import time
from typing import Any, Callable, Mapping

from kazoo.client import KazooClient
from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError

from headrace.cluster import zk_layout as L
from headrace.cluster.placement import PlacementError, assign_replicas, validate_assignment

log = logging.getLogger("headrace.cluster.admin")

NONE = 0
UNKNOWN_TOPIC_OR_PARTITION = 3
REQUEST_TIMED_OUT = 7
INVALID_TOPIC_EXCEPTION = 17
TOPIC_ALREADY_EXISTS = 36
INVALID_PARTITIONS = 37
INVALID_REPLICATION_FACTOR = 38
INVALID_REPLICA_ASSIGNMENT = 39
INVALID_REQUEST = 42

_LEGAL_NAME = re.compile(r"^[a-zA-Z0-9._-]+$")
MAX_NAME_LENGTH = 249
DELETE_TIMEOUT_MS = 5000


def validate_topic_name(name: Any) -> str | None:
    """Kafka's Topic.validate: the reason the name is illegal, or None."""
    if not isinstance(name, str) or not name:
        return "Topic name is illegal, it can't be empty"
    if name in (".", ".."):
        return "Topic name cannot be \".\" or \"..\""
    if len(name) > MAX_NAME_LENGTH:
        return (f"Topic name is illegal, it can't be longer than {MAX_NAME_LENGTH} "
                "characters")
    if not _LEGAL_NAME.match(name):
        return (f"Topic name \"{name}\" is illegal, it contains a character other than "
                "ASCII alphanumerics, '.', '_' and '-'")
    return None


def live_brokers(zk: KazooClient) -> dict[int, str | None]:
    """{broker id: rack} of the registered brokers."""
    out = {}
    for child in zk.get_children(L.BROKER_IDS):
        try:
            b = int(child)
            data, _ = zk.get(L.broker_path(b))
            out[b] = L.BrokerRegistration.decode(b, data).rack
        except (ValueError, NoNodeError, L.LayoutError):
            continue
    return out


def _result(name, code=NONE, message=None, **extra) -> dict:
    return {"name": name, "error_code": code, "error_message": message, **extra}


def create_topics(zk: KazooClient, payload: Mapping[str, Any],
                  defaults: Mapping[str, str] | None = None) -> dict:
    """``defaults``: broker settings ``num.partitions`` and
    ``default.replication.factor`` for a request's -1."""
    defaults = defaults or {}
    brokers = live_brokers(zk)
    existing = set(zk.get_children(L.TOPICS))
    results = []
    for t in payload.get("topics", []):
        results.append(_create_topic(zk, t, brokers, existing, defaults))
    return {"topics": results}


def _create_topic(zk, t: Mapping[str, Any], brokers, existing: set[str], defaults) -> dict:
    name = t.get("name")
    bad = validate_topic_name(name)
    if bad:
        return _result(name, INVALID_TOPIC_EXCEPTION, bad)
    if name in existing or zk.exists(L.topic_path(name)) is not None:
        if zk.exists(L.delete_topic_path(name)) is not None:
            return _result(name, TOPIC_ALREADY_EXISTS, f"Topic '{name}' is marked for deletion.")
        return _result(name, TOPIC_ALREADY_EXISTS, f"Topic '{name}' already exists.")
    collides = [e for e in existing if e.replace(".", "_") == name.replace(".", "_")]
    if collides:
        return _result(name, INVALID_TOPIC_EXCEPTION,
                       f"Topic '{name}' collides with existing topic: {collides[0]}")
    num_partitions = int(t.get("num_partitions", -1))
    rf = int(t.get("replication_factor", -1))
    explicit = t.get("assignments")
    try:
        if explicit:
            if num_partitions != -1 or rf != -1:
                return _result(name, INVALID_REQUEST,
                               "Both numPartitions or replicationFactor and "
                               "replicasAssignments were set. Both cannot be used at the "
                               "same time.")
            assignment = validate_assignment(explicit, brokers)
        else:
            if num_partitions == -1:
                num_partitions = int(defaults.get("num.partitions", 1))
            if rf == -1:
                rf = int(defaults.get("default.replication.factor", 1))
            if num_partitions <= 0:
                return _result(name, INVALID_PARTITIONS,
                               "Number of partitions must be larger than 0.")
            if rf <= 0:
                return _result(name, INVALID_REPLICATION_FACTOR,
                               "Replication factor must be larger than 0.")
            assignment = assign_replicas(brokers, num_partitions, rf)
    except PlacementError as e:
        return _result(name, e.error_code, str(e))
    extra = {"num_partitions": len(assignment),
             "replication_factor": len(next(iter(assignment.values())))}
    if t.get("validate_only"):
        return _result(name, **extra)
    topic_id = L.new_uuid_base64()
    configs = {str(k): str(v) for k, v in (t.get("configs") or {}).items() if v is not None}
    tx = zk.transaction()
    config_stat = zk.exists(L.topic_config_path(name))
    if config_stat is None:
        tx.create(L.topic_config_path(name), L.encode_topic_config(configs))
    else:  # left by an older topic of the same name: replaced, as Kafka does
        tx.set_data(L.topic_config_path(name), L.encode_topic_config(configs),
                    version=config_stat.version)
    tx.create(L.topic_path(name), L.TopicAssignment(topic_id, assignment).encode())
    results = tx.commit()
    failed = [r for r in results if isinstance(r, Exception)]
    if failed:
        if isinstance(results[1], NodeExistsError):
            return _result(name, TOPIC_ALREADY_EXISTS, f"Topic '{name}' already exists.")
        return _result(name, REQUEST_TIMED_OUT,
                       f"Topic '{name}' was changed concurrently; retry "
                       f"({type(failed[0]).__name__}).")
    existing.add(name)
    log.info("created topic %s (id %s): %s", name, topic_id, assignment)
    return _result(name, topic_id=topic_id, **extra)


def delete_topics(zk: KazooClient, payload: Mapping[str, Any]) -> dict:
    """Marks each topic for deletion (``/admin/delete_topics/<t>``), then
    waits (``timeout_ms`` of the payload, default 5 s) until the controller
    removed it; REQUEST_TIMED_OUT for one still there."""
    timeout_ms = int(payload.get("timeout_ms") or DELETE_TIMEOUT_MS)
    results = {}
    pending = []
    topic_ids = {}  # answered with each result (the asking broker's view may lack it)
    for name in payload.get("topics", []):
        data = None
        if isinstance(name, str):
            try:
                data, _ = zk.get(L.topic_path(name))
            except NoNodeError:
                pass
        if data is None:
            results[name] = _result(name, UNKNOWN_TOPIC_OR_PARTITION,
                                    "This server does not host this topic-partition.")
            continue
        try:
            topic_ids[name] = L.TopicAssignment.decode(name, data).topic_id
        except L.LayoutError:
            pass
        try:
            zk.create(L.delete_topic_path(name), b"", makepath=True)
        except NodeExistsError:
            pass
        pending.append(name)
    deadline = time.monotonic() + timeout_ms / 1000
    for name in pending:
        while zk.exists(L.topic_path(name)) is not None and time.monotonic() < deadline:
            time.sleep(0.05)
        extra = {"topic_id": topic_ids[name]} if name in topic_ids else {}
        if zk.exists(L.topic_path(name)) is None:
            results[name] = _result(name, **extra)
        else:
            results[name] = _result(name, REQUEST_TIMED_OUT,
                                    f"Topic '{name}' is marked for deletion; the controller "
                                    f"has not deleted it within {timeout_ms} ms.", **extra)
    return {"topics": [results[n] for n in payload.get("topics", []) if n in results]}


def create_partitions(zk: KazooClient, payload: Mapping[str, Any]) -> dict:
    """Extends topics' assignments to ``count`` partitions (Kafka's placement,
    continuing the existing one: same replication factor, start index at
    partition 0's first replica)."""
    brokers = live_brokers(zk)
    results = []
    for t in payload.get("topics", []):
        results.append(_create_partitions(zk, t, brokers))
    return {"topics": results}


def _create_partitions(zk, t: Mapping[str, Any], brokers) -> dict:
    name = t.get("name")
    count = int(t.get("count", 0))
    for _ in range(10):
        try:
            data, stat = zk.get(L.topic_path(name))
        except (NoNodeError, TypeError):
            return _result(name, UNKNOWN_TOPIC_OR_PARTITION,
                           "This server does not host this topic-partition.")
        if zk.exists(L.delete_topic_path(name)) is not None:
            return _result(name, UNKNOWN_TOPIC_OR_PARTITION,
                           f"Topic '{name}' is marked for deletion.")
        assignment = L.TopicAssignment.decode(name, data)
        current = len(assignment.partitions)
        if count == current:
            return _result(name, INVALID_PARTITIONS, f"Topic already has {current} partitions.")
        if count < current:
            return _result(name, INVALID_PARTITIONS,
                           f"Topic currently has {current} partitions, which is higher than "
                           f"the requested {count}.")
        first = assignment.partitions.get(0) or next(iter(assignment.partitions.values()))
        try:
            if t.get("assignments"):
                explicit = t["assignments"]
                if isinstance(explicit, list):
                    explicit = {current + i: r for i, r in enumerate(explicit)}
                added = validate_assignment(explicit, brokers, first_partition=current)
                if len(added) != count - current:
                    return _result(name, INVALID_REPLICA_ASSIGNMENT,
                                   f"Increasing the number of partitions by "
                                   f"{count - current} but {len(added)} assignments provided.")
            else:
                ordered = sorted(brokers)
                start = next((i for i, b in enumerate(ordered) if b >= first[0]), 0)
                added = assign_replicas(brokers, count - current, len(first), start_index=start,
                                        start_partition_id=current)
        except PlacementError as e:
            return _result(name, e.error_code, str(e))
        if t.get("validate_only"):
            return _result(name)
        assignment.partitions.update(added)
        try:
            zk.set(L.topic_path(name), assignment.encode(), version=stat.version)
        except BadVersionError:
            continue
        except NoNodeError:
            return _result(name, UNKNOWN_TOPIC_OR_PARTITION,
                           "This server does not host this topic-partition.")
        log.info("topic %s: partitions %d..%d added: %s", name, current, count - 1, added)
        return _result(name)
    return _result(name, REQUEST_TIMED_OUT, f"Topic '{name}' kept changing; retry.")


def alter_topic_configs(zk: KazooClient, payload: Mapping[str, Any]) -> dict:
    """AlterConfigs / IncrementalAlterConfigs on a topic: replaces
    /config/topics/<t> with payload["configs"] (the whole override set,
    validated by the data plane) and announces it under /config/changes as
    Kafka's ZK mode does; every member watches /config/topics/<t> and
    applies it. {"error_code", "error_message"}."""
    topic = str(payload.get("topic", ""))
    configs = {str(k): str(v) for k, v in (payload.get("configs") or {}).items()}
    if zk.exists(L.topic_path(topic)) is None:
        return {"error_code": UNKNOWN_TOPIC_OR_PARTITION,
                "error_message": f"Topic {topic} does not exist."}
    replace_config(zk, L.topic_config_path(topic), L.encode_topic_config(configs),
                   f"topics/{topic}")
    return {"error_code": NONE, "error_message": None}


def replace_config(zk: KazooClient, path: str, data: bytes, entity_path: str) -> None:
    """Writes a config znode (created if absent) and announces the change as
    /config/changes/config_change_N {"version": 2, "entity_path": ...}, as
    Kafka's ZK mode does (members watch the config znodes themselves)."""
    try:
        zk.set(path, data)
    except NoNodeError:
        try:
            zk.create(path, data, makepath=True)
        except NodeExistsError:
            zk.set(path, data)
    _announce_config_change(zk, entity_path)


def update_entity_config(zk: KazooClient, entity_path: str,
                         change: Callable[[dict[str, str]], dict[str, str]]) -> None:
    """Read-modify-write of /config/<entity_path> (users/<u>, clients/<c>,
    ...: {"version":1,"config":{...}}, whose keys SCRAM credentials and
    quotas share) with the znode's version, retried when another writer got
    in between; then announced as replace_config does. `change` gets the
    current keys and returns the new ones."""
    path = L.entity_config_path(entity_path)
    while True:
        try:
            data, stat = zk.get(path)
        except NoNodeError:
            data, stat = None, None
        config = change(L.decode_entity_config(data, entity_path))
        encoded = json.dumps({"version": 1, "config": config}, sort_keys=True).encode()
        try:
            if stat is None:
                zk.create(path, encoded, makepath=True)
            else:
                zk.set(path, encoded, version=stat.version)
            break
        except (BadVersionError, NodeExistsError, NoNodeError):
            continue
    _announce_config_change(zk, entity_path)


def _announce_config_change(zk: KazooClient, entity_path: str) -> None:
    zk.create(f"{L.CONFIG_CHANGES}/config_change_",
              json.dumps({"version": 2, "entity_path": entity_path}).encode(),
              sequence=True, makepath=True)
