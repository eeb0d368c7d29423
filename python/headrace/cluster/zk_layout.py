"""ZooKeeper paths and the JSON of every znode the cluster uses.

Kafka's layout and Kafka's JSON (docs/cluster.md lists them with examples),
so that an operator's ZooKeeper tools and habits carry over. Decoders are
lenient about fields they do not need (Kafka writes more than we read) and
strict about the ones they do: a malformed znode raises LayoutError naming
the path.
"""
from __future__ import annotations

import base64
import json
import time
import uuid
from dataclasses import dataclass, field
from typing import Mapping

# -- paths --------------------------------------------------------------------
BROKER_IDS = "/brokers/ids"
TOPICS = "/brokers/topics"
CONTROLLER = "/controller"
CONTROLLER_EPOCH = "/controller_epoch"
CONFIG_TOPICS = "/config/topics"
CONFIG_BROKERS = "/config/brokers"
# Group configs (the GROUP config resource, Kafka 4.x): /config/groups/<group id>.
CONFIG_GROUPS = "/config/groups"
CONFIG_CHANGES = "/config/changes"
# Client quotas (and, from the SASL work, SCRAM credentials) as Kafka's ZK
# mode keeps them: /config/users/<user>[/clients/<client-id>] and
# /config/clients/<client-id>, "<default>" for defaults.
CONFIG_USERS = "/config/users"
CONFIG_CLIENTS = "/config/clients"
QUOTA_KEYS = ("producer_byte_rate", "consumer_byte_rate", "request_percentage",
              "controller_mutation_rate")
# The entity name of the cluster-wide dynamic broker default (Kafka's).
BROKER_DEFAULT_ENTITY = "<default>"
ADMIN_DELETE_TOPICS = "/admin/delete_topics"
ADMIN_CONTROLLED_SHUTDOWN = "/admin/controlled_shutdown"
ADMIN_ELECT_LEADERS = "/admin/elect_leaders"
ADMIN_REASSIGNMENTS = "/admin/reassignments"
# headrace's: a broker's replicas whose log directory failed (Kafka's ZooKeeper
# mode signals /log_dir_event_notification and the controller asks the broker).
ADMIN_OFFLINE_REPLICAS = "/admin/offline_replicas"
CLUSTER_ID = "/cluster/id"
# headrace's: each broker's HTTP listener URL, for the schema registry's
# forwarding of writes (headrace.registry.forward).
REGISTRY_URLS = "/headrace/schema_registry/urls"

# Persistent znodes every member makes sure exist (Kafka's ZkData.PersistentZkPaths,
# the ones this cluster uses).
BASE_PATHS = (BROKER_IDS, TOPICS, CONFIG_TOPICS, ADMIN_DELETE_TOPICS,
              ADMIN_CONTROLLED_SHUTDOWN, ADMIN_ELECT_LEADERS, ADMIN_REASSIGNMENTS,
              ADMIN_OFFLINE_REPLICAS, "/cluster")


def ensure_base_paths(zk) -> None:
    """Creates the persistent base znodes that do not exist yet."""
    for path in BASE_PATHS:
        zk.ensure_path(path)


class LayoutError(ValueError):
    """A znode whose content is not what the layout says."""


def broker_path(broker_id: int) -> str:
    return f"{BROKER_IDS}/{int(broker_id)}"


def topic_path(topic: str) -> str:
    return f"{TOPICS}/{topic}"


def partitions_path(topic: str) -> str:
    return f"{TOPICS}/{topic}/partitions"


def partition_path(topic: str, partition: int) -> str:
    return f"{TOPICS}/{topic}/partitions/{int(partition)}"


def partition_state_path(topic: str, partition: int) -> str:
    return f"{partition_path(topic, partition)}/state"


def topic_config_path(topic: str) -> str:
    return f"{CONFIG_TOPICS}/{topic}"


def broker_config_path(entity: str) -> str:
    """/config/brokers/<id> (one broker's dynamic configs) or
    /config/brokers/<default> (the cluster-wide default), as Kafka's ZK mode."""
    return f"{CONFIG_BROKERS}/{entity}"


def encode_broker_config(config: dict[str, str]) -> bytes:
    return json.dumps({"version": 1, "config": dict(config)}, sort_keys=True).encode()


def decode_broker_config(data: bytes | None, entity: str = "") -> dict[str, str]:
    if not data:
        return {}
    obj = _load(data, broker_config_path(entity))
    config = obj.get("config") or {}
    if not isinstance(config, dict):
        raise LayoutError(f"{broker_config_path(entity)}: config must be an object")
    return {str(k): str(v) for k, v in config.items()}


def group_config_path(group: str) -> str:
    """/config/groups/<group id>: one group's group configs, {"version": 1,
    "config": {...}} as the other config znodes."""
    return f"{CONFIG_GROUPS}/{group}"


def encode_group_config(config: dict[str, str]) -> bytes:
    return json.dumps({"version": 1, "config": dict(config)}, sort_keys=True).encode()


def decode_group_config(data: bytes | None, group: str) -> dict[str, str]:
    if not data:
        return {}
    obj = _load(data, group_config_path(group))
    config = obj.get("config") or {}
    if not isinstance(config, dict):
        raise LayoutError(f"{group_config_path(group)}: config must be an object")
    return {str(k): str(v) for k, v in config.items()}


def quota_entity_paths(users: dict[str, list[str]], clients: list[str]) -> list[str]:
    """Entity paths relative to /config ("users/alice", "users/alice/clients/app",
    "clients/<default>") of the znodes under /config/users and /config/clients;
    ``users`` maps each user znode to its clients/ children."""
    out = []
    for user, user_clients in sorted(users.items()):
        out.append(f"users/{user}")
        out.extend(f"users/{user}/clients/{c}" for c in sorted(user_clients))
    out.extend(f"clients/{c}" for c in sorted(clients))
    return out


def entity_config_path(entity_path: str) -> str:
    """/config/<entity path> (users/..., clients/...)."""
    return f"/config/{entity_path}"


def decode_entity_config(data: bytes | None, entity_path: str) -> dict[str, str]:
    """{"version":1,"config":{...}} of a user / client entity (quota keys
    and SCRAM credentials share it, as in Kafka)."""
    if not data:
        return {}
    obj = _load(data, entity_config_path(entity_path))
    config = obj.get("config") or {}
    if not isinstance(config, dict):
        raise LayoutError(f"{entity_config_path(entity_path)}: config must be an object")
    return {str(k): str(v) for k, v in config.items()}


def delete_topic_path(topic: str) -> str:
    return f"{ADMIN_DELETE_TOPICS}/{topic}"


def controlled_shutdown_path(broker_id: int) -> str:
    return f"{ADMIN_CONTROLLED_SHUTDOWN}/{int(broker_id)}"


def offline_replicas_path(broker_id: int) -> str:
    return f"{ADMIN_OFFLINE_REPLICAS}/{int(broker_id)}"


def encode_offline_replicas(broker_id: int, partitions: list[tuple[str, int]]) -> bytes:
    """/admin/offline_replicas/<id> (ephemeral, written by the broker's member):
    {"version":1,"broker_id":2,"partitions":[{"topic":"t","partition":0}],"timestamp":"ms"}."""
    return _dump({"version": 1, "broker_id": int(broker_id), "timestamp": now_ms(),
                  "partitions": [{"topic": t, "partition": p} for t, p in partitions]})


def decode_offline_replicas(broker_id: int, data: bytes | None) -> list[tuple[str, int]]:
    if not data:
        return []
    obj = _load(data, offline_replicas_path(broker_id))
    return [(str(r["topic"]), int(r["partition"])) for r in obj.get("partitions", [])]


# -- helpers ------------------------------------------------------------------
def now_ms() -> str:
    """Kafka writes timestamps in znodes as a decimal string of epoch ms."""
    return str(int(time.time() * 1000))


def new_uuid_base64() -> str:
    """A Kafka Uuid as Kafka prints it: url-safe base64 of the 16 bytes,
    no padding (22 characters). Kafka never hands out the all-zero id
    (ZERO_UUID) nor one that starts with '-' (awkward on command lines)."""
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not text.startswith("-") and text != "AAAAAAAAAAAAAAAAAAAAAA":
            return text


def _dump(obj) -> bytes:
    return json.dumps(obj, separators=(",", ":"), sort_keys=False).encode()


def _load(data: bytes | None, path: str) -> dict:
    if not data:
        raise LayoutError(f"{path}: empty znode")
    try:
        obj = json.loads(data.decode())
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise LayoutError(f"{path}: not JSON: {e}") from None
    if not isinstance(obj, dict):
        raise LayoutError(f"{path}: expected a JSON object")
    return obj


def _int_list(value, path: str, what: str) -> list[int]:
    if not isinstance(value, list) or not all(isinstance(v, int) for v in value):
        raise LayoutError(f"{path}: {what} must be a list of integers")
    return list(value)


# -- /brokers/ids/<id> ----------------------------------------------------------
@dataclass
class BrokerRegistration:
    id: int
    host: str
    port: int
    rack: str | None = None
    timestamp: str = field(default_factory=now_ms)
    # Every listener's advertised endpoint ("NAME://host:port") and security
    # protocol, as Kafka registers them; host/port above are the inter-broker
    # listener's (what other brokers connect to). Empty: one PLAINTEXT
    # listener at host:port.
    endpoints: list[str] = field(default_factory=list)
    protocol_map: dict[str, str] = field(default_factory=dict)

    def encode(self) -> bytes:
        # Kafka's BrokerIdZNode version 5 (without features: nothing to list).
        endpoints = self.endpoints or [f"PLAINTEXT://{_host_for_url(self.host)}:{self.port}"]
        return _dump({
            "listener_security_protocol_map": self.protocol_map or {"PLAINTEXT": "PLAINTEXT"},
            "endpoints": endpoints,
            "jmx_port": -1,
            "host": self.host,
            "timestamp": self.timestamp,
            "port": self.port,
            "rack": self.rack,
            "version": 5,
        })

    @classmethod
    def decode(cls, broker_id: int, data: bytes, path: str = "") -> "BrokerRegistration":
        path = path or broker_path(broker_id)
        obj = _load(data, path)
        host, port = obj.get("host"), obj.get("port")
        if (not host or not isinstance(port, int) or port < 0) and obj.get("endpoints"):
            # Kafka writes host null / port -1 when PLAINTEXT is not the first
            # listener; the endpoints always say it.
            host, port = _parse_endpoint(obj["endpoints"][0], path)
        if not isinstance(host, str) or not isinstance(port, int):
            raise LayoutError(f"{path}: no host/port")
        rack = obj.get("rack")
        endpoints = obj.get("endpoints")
        protocols = obj.get("listener_security_protocol_map")
        return cls(id=int(broker_id), host=host, port=port,
                   rack=rack if isinstance(rack, str) else None,
                   timestamp=str(obj.get("timestamp", "")),
                   endpoints=[e for e in endpoints if isinstance(e, str)]
                   if isinstance(endpoints, list) else [],
                   protocol_map=dict(protocols) if isinstance(protocols, dict) else {})

    def to_state(self) -> dict:
        # endpoints: every listener's address; the broker answers each client
        # with the one of the listener it connected on.
        return {"id": self.id, "host": self.host, "port": self.port, "rack": self.rack,
                "endpoints": self.endpoints}


def _host_for_url(host: str) -> str:
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


def _parse_endpoint(text: str, path: str) -> tuple[str, int]:
    try:
        _, _, hostport = text.partition("://")
        host, _, port = hostport.rpartition(":")
        return host.strip("[]"), int(port)
    except ValueError:
        raise LayoutError(f"{path}: bad endpoint {text!r}") from None


# -- /controller, /controller_epoch ------------------------------------------------
def encode_controller(broker_id: int) -> bytes:
    return _dump({"version": 1, "brokerid": int(broker_id), "timestamp": now_ms()})


def decode_controller(data: bytes | None) -> int:
    """The controller's broker id; -1 for an empty or unreadable znode."""
    try:
        obj = _load(data, CONTROLLER)
        return int(obj["brokerid"])
    except (LayoutError, KeyError, TypeError, ValueError):
        # Very old Kafka wrote the bare id.
        try:
            return int((data or b"").decode())
        except ValueError:
            return -1


def encode_controller_epoch(epoch: int) -> bytes:
    return str(int(epoch)).encode()


def decode_controller_epoch(data: bytes | None) -> int:
    try:
        return int((data or b"0").decode())
    except ValueError:
        raise LayoutError(f"{CONTROLLER_EPOCH}: not an integer: {data!r}") from None


# -- /brokers/topics/<t> -----------------------------------------------------------
@dataclass
class TopicAssignment:
    """`partitions`: every partition's replicas; during a reassignment the
    full set (target first, then the replicas being removed), with
    `adding` (target minus original) and `removing` (original minus target)
    per partition, as Kafka's version 2+ topic znode (KIP-455)."""
    topic_id: str
    partitions: dict[int, list[int]]
    adding: dict[int, list[int]] = field(default_factory=dict)
    removing: dict[int, list[int]] = field(default_factory=dict)

    def encode(self) -> bytes:
        return _dump({
            "version": 3,
            "topic_id": self.topic_id,
            "partitions": {str(p): list(r) for p, r in sorted(self.partitions.items())},
            "adding_replicas": {str(p): list(r) for p, r in sorted(self.adding.items()) if r},
            "removing_replicas": {str(p): list(r) for p, r in sorted(self.removing.items())
                                  if r},
        })

    def reassigning(self, partition: int) -> bool:
        return bool(self.adding.get(partition) or self.removing.get(partition))

    def target(self, partition: int) -> list[int]:
        """The replicas the partition ends with (its replicas when no
        reassignment is in progress)."""
        removing = set(self.removing.get(partition, ()))
        return [b for b in self.partitions[partition] if b not in removing]

    @classmethod
    def decode(cls, topic: str, data: bytes) -> "TopicAssignment":
        path = topic_path(topic)
        obj = _load(data, path)
        parts = obj.get("partitions")
        if not isinstance(parts, dict):
            raise LayoutError(f"{path}: no partitions")

        def by_partition(value, what: str) -> dict[int, list[int]]:
            if value is None:
                return {}
            if not isinstance(value, dict):
                raise LayoutError(f"{path}: {what} must be an object")
            try:
                return {int(p): _int_list(r, path, f"{what} of {p}") for p, r in value.items()}
            except ValueError:
                raise LayoutError(f"{path}: partition ids must be integers") from None

        topic_id = obj.get("topic_id")
        return cls(topic_id=topic_id if isinstance(topic_id, str) else "",
                   partitions=by_partition(parts, "partitions"),
                   adding=by_partition(obj.get("adding_replicas"), "adding_replicas"),
                   removing=by_partition(obj.get("removing_replicas"), "removing_replicas"))


# -- /brokers/topics/<t>/partitions/<p>/state -----------------------------------------
@dataclass
class PartitionState:
    leader: int
    leader_epoch: int
    isr: list[int]
    controller_epoch: int
    # headrace's field: the broker epoch (registration czxid, KIP-380) each
    # ISR member had when it was put in the ISR. A live member registered
    # under another epoch has bounced since (docs/cluster.md, "Broker
    # epochs"). Missing for a member: written by an older version, unknown.
    broker_epochs: dict[int, int] = field(default_factory=dict)

    def encode(self) -> bytes:
        obj = {"controller_epoch": self.controller_epoch, "leader": self.leader,
               "version": 1, "leader_epoch": self.leader_epoch, "isr": list(self.isr)}
        if self.broker_epochs:
            obj["broker_epochs"] = {str(b): e for b, e in sorted(self.broker_epochs.items())}
        return _dump(obj)

    @classmethod
    def decode(cls, data: bytes, path: str = "") -> "PartitionState":
        obj = _load(data, path)
        try:
            epochs = obj.get("broker_epochs") or {}
            return cls(leader=int(obj["leader"]), leader_epoch=int(obj["leader_epoch"]),
                       isr=_int_list(obj["isr"], path, "isr"),
                       controller_epoch=int(obj.get("controller_epoch", 0)),
                       broker_epochs={int(b): int(e) for b, e in epochs.items()})
        except (AttributeError, KeyError, TypeError, ValueError) as e:
            raise LayoutError(f"{path}: bad partition state: {e}") from None

    def bounced(self, epochs: Mapping[int, int]) -> set[int]:
        """ISR members registered now (``epochs``: live broker -> epoch)
        under another epoch than the one they joined the ISR with."""
        return {b for b in self.isr
                if b in epochs and b in self.broker_epochs and self.broker_epochs[b] != epochs[b]}


# -- /config/topics/<t> ----------------------------------------------------------------
def encode_topic_config(config: dict[str, str]) -> bytes:
    return _dump({"version": 1, "config": {str(k): str(v) for k, v in config.items()}})


def decode_topic_config(data: bytes | None, topic: str = "") -> dict[str, str]:
    if not data:
        return {}
    obj = _load(data, topic_config_path(topic))
    config = obj.get("config") or {}
    if not isinstance(config, dict):
        raise LayoutError(f"{topic_config_path(topic)}: config must be an object")
    return {str(k): str(v) for k, v in config.items()}


# -- /cluster/id -------------------------------------------------------------------------
def encode_cluster_id(cluster_id: str) -> bytes:
    return _dump({"version": "1", "id": cluster_id})


def decode_cluster_id(data: bytes | None) -> str:
    obj = _load(data, CLUSTER_ID)
    cid = obj.get("id")
    if not isinstance(cid, str) or not cid:
        raise LayoutError(f"{CLUSTER_ID}: no id")
    return cid


# -- /admin/controlled_shutdown/<id> (headrace's; Kafka uses a request instead) ---------
@dataclass
class ControlledShutdown:
    broker_id: int
    done: bool = False
    remaining: list[tuple[str, int]] = field(default_factory=list)  # partitions still led
    timestamp: str = field(default_factory=now_ms)

    def encode(self) -> bytes:
        obj = {"version": 1, "broker_id": self.broker_id, "timestamp": self.timestamp}
        if self.done:
            obj["done"] = True
            obj["remaining"] = [{"topic": t, "partition": p} for t, p in self.remaining]
        return _dump(obj)

    @classmethod
    def decode(cls, broker_id: int, data: bytes | None) -> "ControlledShutdown":
        path = controlled_shutdown_path(broker_id)
        if not data:
            return cls(broker_id=broker_id)
        obj = _load(data, path)
        remaining = [(str(r["topic"]), int(r["partition"])) for r in obj.get("remaining", [])]
        return cls(broker_id=broker_id, done=bool(obj.get("done")), remaining=remaining,
                   timestamp=str(obj.get("timestamp", "")))


# -- /admin/elect_leaders/<seq> (headrace's; ElectLeaders, Kafka's ZK mode used
# /admin/preferred_replica_election for the preferred kind only) ----------------------
PREFERRED_ELECTION, UNCLEAN_ELECTION = 0, 1


# A request znode the controller answers in place (ElectLeaders,
# AlterPartitionReassignments): "done" and one result per partition.
PartitionResult = tuple[str, int, int, "str | None"]  # topic, partition, error code, message


def _with_results(obj: dict, done: bool, results: list[PartitionResult]) -> dict:
    if done:
        obj["done"] = True
        obj["results"] = [{"topic": t, "partition": p, "error_code": c, "error_message": m}
                          for t, p, c, m in results]
    return obj


def _results_of(obj: dict) -> list[PartitionResult]:
    return [(str(r["topic"]), int(r["partition"]), int(r["error_code"]), r.get("error_message"))
            for r in obj.get("results", [])]


@dataclass
class ElectLeaders:
    """One ElectLeaders request: `partitions` None = every partition. The
    controller answers by writing `done` and one (topic, partition,
    error_code, error_message) per partition into `results`."""
    election_type: int = PREFERRED_ELECTION
    partitions: list[tuple[str, int]] | None = None
    done: bool = False
    results: list[PartitionResult] = field(default_factory=list)

    def encode(self) -> bytes:
        obj: dict = {"version": 1, "election_type": self.election_type,
                     "partitions": None if self.partitions is None else
                     [{"topic": t, "partition": p} for t, p in self.partitions]}
        return _dump(_with_results(obj, self.done, self.results))

    @classmethod
    def decode(cls, data: bytes | None, path: str) -> "ElectLeaders":
        obj = _load(data, path)
        parts = obj.get("partitions")
        return cls(election_type=int(obj.get("election_type", PREFERRED_ELECTION)),
                   partitions=None if parts is None else
                   [(str(x["topic"]), int(x["partition"])) for x in parts],
                   done=bool(obj.get("done")), results=_results_of(obj))


# -- /admin/reassignments/<seq> (headrace's; AlterPartitionReassignments. Kafka's
# ZK mode had one /admin/reassign_partitions znode, without cancel or results) -------
@dataclass
class AlterReassignments:
    """One AlterPartitionReassignments request: per (topic, partition) the
    target replicas, or None to cancel. The controller answers by writing
    `done` and one (topic, partition, error_code, error_message) per
    partition into `results`."""
    partitions: list[tuple[str, int, list[int] | None]] = field(default_factory=list)
    done: bool = False
    results: list[PartitionResult] = field(default_factory=list)

    def encode(self) -> bytes:
        obj: dict = {"version": 1,
                     "partitions": [{"topic": t, "partition": p, "replicas": r}
                                    for t, p, r in self.partitions]}
        return _dump(_with_results(obj, self.done, self.results))

    @classmethod
    def decode(cls, data: bytes | None, path: str) -> "AlterReassignments":
        obj = _load(data, path)
        try:
            parts = [(str(x["topic"]), int(x["partition"]),
                      None if x.get("replicas") is None else
                      _int_list(x["replicas"], path, "replicas"))
                     for x in obj.get("partitions", [])]
            results = _results_of(obj)
        except (KeyError, TypeError, ValueError):
            raise LayoutError(f"{path}: malformed reassignment request") from None
        return cls(partitions=parts, done=bool(obj.get("done")), results=results)
