"""Config requests to one chosen broker over the wire:
IncrementalAlterConfigs on the cluster-wide dynamic broker default (BROKER
resource "": confluent-kafka and kafka-python both refuse an empty broker
resource name, while Kafka's Java admin and `kafka-configs --entity-default`
send it), and DescribeConfigs of a topic (or a GROUP) as one given broker
answers it (clients pick the broker themselves)."""
from __future__ import annotations

import struct

from broker_wire import Connection, kstring

API_DESCRIBE_CONFIGS = 32
API_INCREMENTAL_ALTER_CONFIGS = 44
RESOURCE_TOPIC = 2
RESOURCE_BROKER = 4
RESOURCE_GROUP = 32
OP_SET, OP_DELETE = 0, 1


def alter_cluster_default(address, ops: dict[str, str | None]) -> tuple[int, str | None]:
    """IncrementalAlterConfigs v0 on BROKER "" with SET (value) / DELETE
    (None) per key, sent to `address` ((host, port)); returns the resource's
    (error_code, error_message)."""
    return alter_config(address, RESOURCE_BROKER, "", ops)


def alter_config(address, resource_type: int, name: str,
                 ops: dict[str, str | None]) -> tuple[int, str | None]:
    """IncrementalAlterConfigs v0 on one resource, as alter_cluster_default."""
    body = struct.pack(">ib", 1, resource_type) + kstring(name) + struct.pack(">i", len(ops))
    for key, value in ops.items():
        body += kstring(key) + struct.pack(">b", OP_DELETE if value is None else OP_SET)
        body += kstring(value)
    body += struct.pack(">?", False)  # validate_only
    with Connection(address) as conn:
        conn.send_request(API_INCREMENTAL_ALTER_CONFIGS, 0, body)
        _, r = conn.recv_response()
    r.i32()  # throttle_time_ms
    assert r.i32() == 1, "one resource answered"
    return r.i16(), r.string()


def describe_topic_config(address, topic: str) -> tuple[int, dict[str, str | None]]:
    """DescribeConfigs v1 (headrace's lowest) of TOPIC `topic` sent to
    `address`: (error_code, {name: value})."""
    return describe_config(address, RESOURCE_TOPIC, topic)


def describe_config(address, resource_type: int, name: str) -> tuple[int, dict[str, str | None]]:
    """DescribeConfigs v1 of one resource, as describe_topic_config."""
    body = struct.pack(">ib", 1, resource_type) + kstring(name) + struct.pack(">i", -1)
    body += struct.pack(">?", False)  # include_synonyms
    with Connection(address) as conn:
        conn.send_request(API_DESCRIBE_CONFIGS, 1, body)
        _, r = conn.recv_response()
    r.i32()  # throttle_time_ms
    assert r.i32() == 1, "one resource answered"
    code, _message, _type, _name = r.i16(), r.string(), r.i8(), r.string()

    def entry(r):
        name, value = r.string(), r.string()
        r.take(3)  # read_only, config_source, is_sensitive
        r.array(lambda r: (r.string(), r.string(), r.i8()))  # synonyms
        return name, value

    return code, dict(r.array(entry) or [])
