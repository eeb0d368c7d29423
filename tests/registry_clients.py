"""Helpers of the schema registry tests (tests/test_registry_*.py): a
SchemaRegistryClient for a broker's HTTP listener, raw HTTP calls, and the
records of ``_schemas`` as a consumer reads them."""
from __future__ import annotations

import http.client
import json

from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.schema_registry import SchemaRegistryClient

CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"


def sr_client(address: str, **conf) -> SchemaRegistryClient:
    """A client of the registry at "host:port" (a fresh cache: every call asks)."""
    return SchemaRegistryClient({"url": f"http://{address}", **conf})


def call(address: str, method: str, path: str, body=None, headers=None):
    """(status, JSON or text, headers) of one raw request."""
    host, _, port = address.rpartition(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=30)
    data = json.dumps(body) if isinstance(body, (dict, list)) else body
    conn.request(method, path, body=data,
                 headers={"Content-Type": CONTENT_TYPE, **(headers or {})})
    resp = conn.getresponse()
    raw = resp.read().decode()
    conn.close()
    try:
        doc = json.loads(raw)
    except json.JSONDecodeError:
        doc = raw
    return resp.status, doc, dict(resp.getheaders())


def schemas_records(bootstrap: str) -> list[tuple[int, dict, dict | None]]:
    """(offset, key, value) of every record of ``_schemas``, parsed."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "registry-test-dump",
                  "enable.partition.eof": True, "enable.auto.commit": False})
    try:
        c.assign([TopicPartition("_schemas", 0, 0)])
        out = []
        while True:
            m = c.poll(10)
            assert m is not None, "no end of _schemas within 10 s"
            if m.error():
                break
            out.append((m.offset(), json.loads(m.key()),
                        json.loads(m.value()) if m.value() is not None else None))
        return out
    finally:
        c.close()
