"""Raw Kafka requests for the admin APIs confluent-kafka 2.16 has no call
for: DescribeLogDirs (35, v4), ListTransactions (66, v0),
DescribeTransactions (65, v0), AlterPartitionReassignments (45, v0),
ListPartitionReassignments (46, v0), DescribeClientQuotas (48, v1) and
AlterClientQuotas (49, v1), plus FindCoordinator (10, v1) to reach
a transactional id's coordinator and Metadata (3, v1) to ask one given
broker what it answers (librdkafka picks the broker itself).
:class:`Connection` speaks the client settings of the CLI
(headrace.client_settings): TLS through :mod:`ssl` (security.protocol SSL /
SASL_SSL) and SASL PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512 (SaslHandshake v1
+ SaslAuthenticate v2; SCRAM by scramp). This replaces kafka-python, which
the CLI carried for these calls only.

The request bodies and answers of those APIs, and :class:`Connection`, one
blocking socket per broker; the wire format's primitives (framing, varints,
compact strings, tagged fields, :class:`Reader`) are headrace.wire_codec's.
"""
from __future__ import annotations

import socket
import ssl
import struct
from collections.abc import Mapping
from dataclasses import dataclass, field

from headrace.secure_socket import SecureSocketError, authenticate, wrap_tls
from headrace.wire_codec import (NO_TAGS, Reader, WireError, WireSecurityError, carray, cstr,
                                 request)
from headrace.wire_codec import error_name  # noqa: F401 - headrace.admin imports it from here

class Connection:
    """One blocking connection to one broker, secured as ``settings`` say
    (librdkafka property names; see headrace.secure_socket). Not
    thread-safe."""

    def __init__(self, host: str, port: int, timeout: float,
                 settings: Mapping[str, str] | None = None):
        self.address = f"{host}:{port}"
        settings = settings or {}
        try:
            self.sock = socket.create_connection((host, port), timeout=timeout)
        except OSError as e:
            raise WireError(f"broker {self.address} unreachable ({e.strerror or e})") from None
        self.next_id = 0
        try:
            self.sock = wrap_tls(self.sock, host, settings)
            authenticate(self, settings)
        except (SecureSocketError, ssl.SSLError) as e:
            self.sock.close()
            raise WireSecurityError(f"broker {self.address}: {e}") from None
        except OSError as e:
            self.sock.close()
            raise WireError(f"broker {self.address}: {e}") from None

    def call(self, api_key: int, version: int, body: bytes, flexible: bool = True) -> Reader:
        """Sends one request and returns a Reader positioned at the body."""
        self.next_id += 1
        try:
            self.sock.sendall(request(api_key, version, self.next_id, body, flexible))
            size = struct.unpack(">i", self._recv(4))[0]
            r = Reader(self._recv(size))
        except (OSError, struct.error) as e:
            raise WireError(f"broker {self.address}: {e}") from None
        if r.int32() != self.next_id:
            raise WireError(f"broker {self.address}: answer to another request")
        if flexible:
            r.tags()
        return r

    def _recv(self, n: int) -> bytes:
        buf = bytearray()
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            if not chunk:
                raise OSError("connection closed")
            buf += chunk
        return bytes(buf)

    def close(self) -> None:
        self.sock.close()


# -- DescribeLogDirs v4 -------------------------------------------------------
@dataclass
class LogDirAnswer:
    error_code: int
    path: str
    total_bytes: int
    usable_bytes: int
    sizes: dict[tuple[str, int], int] = field(default_factory=dict)
    # copies being moved into this directory (AlterReplicaLogDirs): is_future_key
    future: dict[tuple[str, int], int] = field(default_factory=dict)


def describe_log_dirs(conn: Connection, topics: dict[str, list[int]] | None
                      ) -> list[LogDirAnswer]:
    """``topics``: {topic: partitions}, None for every partition."""
    body = carray(None if topics is None else [
        cstr(t) + carray([struct.pack(">i", p) for p in ps]) + NO_TAGS
        for t, ps in sorted(topics.items())]) + NO_TAGS
    r = conn.call(35, 4, body)
    r.int32()  # throttle
    top_error = r.int16()
    if top_error:
        raise WireError(f"broker {conn.address}: describe log dirs: {error_name(top_error)}")

    def partition(r: Reader):
        p, size = r.int32(), r.int64()
        r.int64()  # offset lag
        future = r.int8() != 0
        r.tags()
        return p, size, future

    def topic(r: Reader):
        name = r.cstring()
        parts = r.carray(partition)
        r.tags()
        return name, parts

    def result(r: Reader) -> LogDirAnswer:
        code, path = r.int16(), r.cstring()
        ts = r.carray(topic)
        total, usable = r.int64(), r.int64()
        r.tags()
        return LogDirAnswer(code, path, total, usable,
                            {(t, p): size for t, parts in ts for p, size, fut in parts if not fut},
                            {(t, p): size for t, parts in ts for p, size, fut in parts if fut})

    return r.carray(result)


# -- Metadata v1 ----------------------------------------------------------------
def partition_leaders(conn: Connection, topic: str) -> tuple[int, dict[int, int]]:
    """What this broker's Metadata answers for ``topic``: (the topic's error
    code, {partition: leader node id, -1 for none})."""
    name = topic.encode()
    r = conn.call(3, 1, struct.pack(">ih", 1, len(name)) + name, flexible=False)

    def broker(r: Reader):
        r.int32(), r.string(), r.int32(), r.string()  # node id, host, port, rack

    def partition(r: Reader):
        r.int16()  # error (LEADER_NOT_AVAILABLE comes with leader -1)
        p, leader = r.int32(), r.int32()
        r.array(Reader.int32), r.array(Reader.int32)  # replicas, isr
        return p, leader

    def topic_(r: Reader):
        code, name_ = r.int16(), r.string()
        r.int8()  # is_internal
        return code, name_, dict(r.array(partition))

    r.array(broker)
    r.int32()  # controller id
    for code, name_, parts in r.array(topic_):
        if name_ == topic:
            return code, parts
    raise WireError(f"broker {conn.address}: Metadata answered without topic {topic!r}")


def cluster_metadata(conn: Connection):
    """Metadata v4 of every topic (no auto-creation) as this one broker
    answers it, as confluent-kafka's ClusterMetadata (what
    ``AdminClient.list_topics`` returns): for a caller that must ask a
    given broker, where librdkafka may pick a hung one."""
    from confluent_kafka import KafkaError
    from confluent_kafka.admin import (BrokerMetadata, ClusterMetadata, PartitionMetadata,
                                       TopicMetadata)

    r = conn.call(3, 4, struct.pack(">ib", -1, 0), flexible=False)
    r.int32()  # throttle
    md = ClusterMetadata()

    def broker(r: Reader):
        b = BrokerMetadata()
        b.id, b.host, b.port = r.int32(), r.string(), r.int32()
        r.string()  # rack
        md.brokers[b.id] = b

    def partition(r: Reader):
        pm = PartitionMetadata()
        code = r.int16()
        pm.id, pm.leader = r.int32(), r.int32()
        pm.replicas, pm.isrs = r.array(Reader.int32), r.array(Reader.int32)
        pm.error = KafkaError(code) if code else None
        return pm

    def topic(r: Reader):
        tm = TopicMetadata()
        code, tm.topic = r.int16(), r.string()
        r.int8()  # is_internal
        tm.partitions = {pm.id: pm for pm in r.array(partition)}
        tm.error = KafkaError(code) if code else None
        md.topics[tm.topic] = tm

    r.array(broker)
    md.cluster_id = r.string()
    md.controller_id = r.int32()
    r.array(topic)
    return md


# -- transactions -------------------------------------------------------------
def list_transactions(conn: Connection, states: list[str]) -> list[tuple[str, int, str]]:
    """ListTransactions v0: [(transactional id, producer id, state)]."""
    body = carray([cstr(s) for s in states]) + carray([]) + NO_TAGS
    r = conn.call(66, 0, body)
    r.int32()
    code = r.int16()
    if code:
        raise WireError(f"broker {conn.address}: list transactions: {error_name(code)}")
    r.carray(lambda r: r.cstring())  # unknown state filters

    def state(r: Reader):
        out = (r.cstring(), r.int64(), r.cstring())
        r.tags()
        return out

    return r.carray(state)


# ListGroups' GroupType names (v5 TypesFilter); `headrace group` and the
# console's consumer-group pages list these, `share-group` lists "share".
CONSUMER_GROUP_TYPES = ("consumer", "classic")


def list_groups(conn: Connection, types: tuple[str, ...] = ()
                ) -> list[tuple[str, str, str]]:
    """ListGroups v5 with TypesFilter ``types`` (() = every type): [(group
    id, protocol type, state)] of the groups this broker coordinates."""
    r = conn.call(16, 5, carray([]) + carray([cstr(t) for t in types]) + NO_TAGS)
    r.int32()
    code = r.int16()
    if code:
        raise WireError(f"broker {conn.address}: list groups: {error_name(code)}")

    def group(r: Reader):
        out = (r.cstring(), r.cstring(), r.cstring())
        r.cstring()  # GroupType
        r.tags()
        return out

    return r.carray(group)


@dataclass
class TransactionAnswer:
    error_code: int
    transactional_id: str
    state: str
    timeout_ms: int
    start_time_ms: int
    producer_id: int
    producer_epoch: int
    partitions: list[tuple[str, int]]


def describe_transactions(conn: Connection, ids: list[str]) -> list[TransactionAnswer]:
    """DescribeTransactions v0 of ``ids`` (all coordinated by this broker)."""
    r = conn.call(65, 0, carray([cstr(i) for i in ids]) + NO_TAGS)
    r.int32()

    def topic(r: Reader):
        name = r.cstring()
        parts = r.carray(lambda r: r.int32())
        r.tags()
        return [(name, p) for p in parts]

    def state(r: Reader) -> TransactionAnswer:
        code, tid, st = r.int16(), r.cstring(), r.cstring()
        timeout, start, pid, epoch = r.int32(), r.int64(), r.int64(), r.int16()
        topics = r.carray(topic)
        r.tags()
        return TransactionAnswer(code, tid, st, timeout, start, pid, epoch,
                                 sorted(tp for t in topics for tp in t))

    return r.carray(state)


def find_transaction_coordinator(conn: Connection, transactional_id: str
                                 ) -> tuple[int, str, int]:
    """FindCoordinator v1 (key type 1 = transaction): (node id, host, port)."""
    return find_coordinator(conn, transactional_id, 1)


def find_coordinator(conn: Connection, key: str, key_type: int = 0) -> tuple[int, str, int]:
    """FindCoordinator v1 (key type 0 = group, 1 = transaction): (node id,
    host, port); WireError naming Kafka's error (e.g.
    COORDINATOR_NOT_AVAILABLE) otherwise."""
    raw = key.encode()
    r = conn.call(10, 1, struct.pack(">h", len(raw)) + raw + bytes([key_type]), flexible=False)
    r.int32()
    code = r.int16()
    r.string()  # error message
    node, host, port = r.int32(), r.string(), r.int32()
    if code:
        raise WireError(f"find coordinator of {key!r}: {error_name(code)}")
    return node, host, port


def api_versions(conn: Connection) -> int:
    """ApiVersions v0: the broker answers (its error code, 0 when fine)."""
    r = conn.call(18, 0, b"", flexible=False)
    return r.int16()


# -- partition reassignments (KIP-455) -----------------------------------------
def alter_partition_reassignments(conn: Connection, targets: dict[tuple[str, int], list[int] | None],
                                  timeout_ms: int) -> dict[tuple[str, int], tuple[int, str | None]]:
    """AlterPartitionReassignments v0: {(topic, partition): target replicas,
    or None to cancel} -> {(topic, partition): (error code, message)}."""
    by_topic: dict[str, list[tuple[int, list[int] | None]]] = {}
    for (t, p), replicas in sorted(targets.items()):
        by_topic.setdefault(t, []).append((p, replicas))
    body = struct.pack(">i", timeout_ms) + carray([
        cstr(t) + carray([struct.pack(">i", p) +
                            carray(None if r is None else [struct.pack(">i", b) for b in r]) +
                            NO_TAGS for p, r in parts]) + NO_TAGS
        for t, parts in by_topic.items()]) + NO_TAGS
    r = conn.call(45, 0, body)
    r.int32()  # throttle
    code, message = r.int16(), r.cstring()
    if code:
        raise WireError(f"broker {conn.address}: alter reassignments: {error_name(code)}"
                        + (f" ({message})" if message else ""))

    def partition(r: Reader):
        p, c, m = r.int32(), r.int16(), r.cstring()
        r.tags()
        return p, c, m

    def topic(r: Reader):
        name = r.cstring()
        parts = r.carray(partition)
        r.tags()
        return [((name, p), (c, m)) for p, c, m in parts]

    return dict(kv for t in r.carray(topic) for kv in t)


def list_partition_reassignments(conn: Connection, timeout_ms: int
                                 ) -> dict[tuple[str, int], tuple[list[int], list[int], list[int]]]:
    """ListPartitionReassignments v0 of every partition: {(topic, partition):
    (replicas, adding, removing)} of those with a reassignment in progress."""
    r = conn.call(46, 0, struct.pack(">i", timeout_ms) + carray(None) + NO_TAGS)
    r.int32()
    code, message = r.int16(), r.cstring()
    if code:
        raise WireError(f"broker {conn.address}: list reassignments: {error_name(code)}"
                        + (f" ({message})" if message else ""))
    ids = lambda r: r.carray(lambda r: r.int32())  # noqa: E731

    def partition(r: Reader):
        out = (r.int32(), ids(r), ids(r), ids(r))
        r.tags()
        return out

    def topic(r: Reader):
        name = r.cstring()
        parts = r.carray(partition)
        r.tags()
        return [((name, p), (rs, add, rem)) for p, rs, add, rem in parts]

    return dict(kv for t in r.carray(topic) for kv in t)


# -- client quotas (48, 49; v1) -----------------------------------------------
def _entity(parts: list[tuple[str, str | None]]) -> bytes:
    return carray([cstr(t) + cstr(n) + NO_TAGS for t, n in parts])


def describe_client_quotas(conn: Connection, components: list[tuple[str, int, str | None]],
                           strict: bool = False
                           ) -> list[tuple[list[tuple[str, str | None]], dict[str, float]]]:
    """DescribeClientQuotas v1: [(entity [(type, name|None=default)],
    {key: value})]. ``components``: (entity_type, match_type 0 exact /
    1 default / 2 any, match)."""
    body = carray([cstr(t) + struct.pack(">b", m) + cstr(name) + NO_TAGS
                    for t, m, name in components]) + bytes([1 if strict else 0]) + NO_TAGS
    r = conn.call(48, 1, body)
    r.int32()  # throttle_time_ms
    code, message = r.int16(), r.cstring()
    if code:
        raise WireError(f"{error_name(code)}: {message}" if message else error_name(code))

    def part(r: Reader):
        out = (r.cstring(), r.cstring())
        r.tags()
        return out

    def value(r: Reader):
        out = (r.cstring(), r.float64())
        r.tags()
        return out

    def entry(r: Reader):
        out = (r.carray(part), dict(r.carray(value)))
        r.tags()
        return out

    return r.carray(entry)


def alter_client_quotas(conn: Connection,
                        entries: list[tuple[list[tuple[str, str | None]],
                                            list[tuple[str, float | None]]]],
                        validate_only: bool = False) -> list[tuple[int, str | None]]:
    """AlterClientQuotas v1: for each (entity, [(key, value, or None to
    remove)]) the (error_code, error_message)."""
    def ops(items):
        return carray([cstr(k) + struct.pack(">d", 0.0 if v is None else float(v)) +
                        bytes([1 if v is None else 0]) + NO_TAGS for k, v in items])

    body = carray([_entity(e) + ops(o) + NO_TAGS for e, o in entries]) + \
        bytes([1 if validate_only else 0]) + NO_TAGS
    r = conn.call(49, 1, body)
    r.int32()  # throttle_time_ms

    def result(r: Reader):
        code, message = r.int16(), r.cstring()
        r.carray(lambda r: (r.cstring(), r.cstring(), r.tags()))
        r.tags()
        return code, message

    return r.carray(result)


# -- configs: DescribeConfigs (32, v1) and IncrementalAlterConfigs (44, v0) ---
# Raw because confluent-kafka refuses the empty BROKER resource name that
# addresses the cluster-wide dynamic default (kafka-configs --entity-default),
# and because librdkafka sends a topic's DescribeConfigs to the controller
# only, while any broker can answer it.
RESOURCE_TOPIC, RESOURCE_BROKER, RESOURCE_GROUP = 2, 4, 32
CONFIG_SOURCES = {0: "UNKNOWN", 1: "DYNAMIC_TOPIC_CONFIG", 2: "DYNAMIC_BROKER_CONFIG",
                  3: "DYNAMIC_DEFAULT_BROKER_CONFIG", 4: "STATIC_BROKER_CONFIG",
                  5: "DEFAULT_CONFIG", 6: "DYNAMIC_BROKER_LOGGER_CONFIG",
                  7: "CLIENT_METRICS_CONFIG", 8: "DYNAMIC_GROUP_CONFIG"}


def _str(s: str | None) -> bytes:
    if s is None:
        return struct.pack(">h", -1)
    b = s.encode()
    return struct.pack(">h", len(b)) + b


@dataclass
class ConfigAnswer:
    name: str
    value: str | None
    read_only: bool
    source: str          # Kafka's ConfigSource name, e.g. DYNAMIC_BROKER_CONFIG
    sensitive: bool
    synonyms: list[tuple[str, str | None, str]] = field(default_factory=list)


def describe_configs(conn: Connection, resource_type: int, name: str,
                     keys: list[str] | None = None, synonyms: bool = True
                     ) -> list[ConfigAnswer]:
    """DescribeConfigs v1 of one resource (``keys`` None: every key);
    WireError naming Kafka's error otherwise."""
    body = struct.pack(">ib", 1, resource_type) + _str(name)
    if keys is None:
        body += struct.pack(">i", -1)
    else:
        body += struct.pack(">i", len(keys)) + b"".join(_str(k) for k in keys)
    body += struct.pack(">?", synonyms)
    r = conn.call(32, 1, body, flexible=False)
    r.int32()  # throttle_time_ms
    results = r.int32()
    if results != 1:
        raise WireError(f"broker {conn.address}: {results} config resources in the answer")
    code, message = r.int16(), r.string()
    r.int8()
    r.string()

    def entry(r: Reader) -> ConfigAnswer:
        key, value = r.string(), r.string()
        read_only, source, sensitive = r.int8() != 0, r.int8(), r.int8() != 0
        syn = r.array(lambda r: (r.string(), r.string(), CONFIG_SOURCES.get(r.int8(), "?")))
        return ConfigAnswer(key, value, read_only, CONFIG_SOURCES.get(source, str(source)),
                            sensitive, syn)

    entries = r.array(entry)
    if code:
        raise WireError(f"{message or error_name(code)} ({error_name(code)})")
    return entries


def incremental_alter_configs(conn: Connection, resource_type: int, name: str,
                              ops: list[tuple[str, str | None]], validate_only: bool = False
                              ) -> None:
    """IncrementalAlterConfigs v0 of one resource: SET (a value) or DELETE
    (None) per key; WireError naming Kafka's error otherwise."""
    body = struct.pack(">ib", 1, resource_type) + _str(name) + struct.pack(">i", len(ops))
    for key, value in ops:
        body += _str(key) + struct.pack(">b", 1 if value is None else 0) + _str(value)
    body += struct.pack(">?", validate_only)
    r = conn.call(44, 0, body, flexible=False)
    r.int32()  # throttle_time_ms
    results = r.int32()
    if results != 1:
        raise WireError(f"broker {conn.address}: {results} config resources in the answer")
    code, message = r.int16(), r.string()
    if code:
        raise WireError(f"{message or error_name(code)} ({error_name(code)})")
