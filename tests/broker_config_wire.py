"""IncrementalAlterConfigs on the cluster-wide dynamic broker default
(BROKER resource "") over the wire: confluent-kafka and kafka-python both
refuse an empty broker resource name, while Kafka's Java admin and
`kafka-configs --entity-default` send it."""
from __future__ import annotations

import struct

from broker_wire import Connection, kstring

API_INCREMENTAL_ALTER_CONFIGS = 44
RESOURCE_BROKER = 4
OP_SET, OP_DELETE = 0, 1


def alter_cluster_default(address, ops: dict[str, str | None]) -> tuple[int, str | None]:
    """IncrementalAlterConfigs v0 on BROKER "" with SET (value) / DELETE
    (None) per key, sent to `address` ((host, port)); returns the resource's
    (error_code, error_message)."""
    body = struct.pack(">ib", 1, RESOURCE_BROKER) + kstring("") + struct.pack(">i", len(ops))
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
