"""Auto-creation runs on the broker's admin worker, not on a network thread:
the Metadata or Produce that names an unknown topic is answered at once with
LEADER_NOT_AVAILABLE (retriable, as Kafka answers while it creates a topic)
and every real client retries into the new topic by itself.
"""
from __future__ import annotations

import struct
import time

import pytest

from broker_kafka_clients import CLIENTS, ConfluentClient, Out
from broker_wire import API_METADATA, Connection


@pytest.mark.parametrize("client_name", list(CLIENTS))
def test_client_produces_to_a_topic_it_never_created(module_broker, client_name):
    client = CLIENTS[client_name](module_broker.bootstrap)
    topic = f"auto-new-{client_name}"
    reports = client.produce(topic, [Out(b"first"), Out(b"second")])
    # (partition, offset) delivery reports; kcat reports none (None).
    assert reports is None or reports == [(0, 0), (0, 1)], reports
    recs = ConfluentClient(module_broker.bootstrap).read(topic, 1, "earliest")
    assert [r.value for r in recs] == [b"first", b"second"]


def test_first_metadata_answers_leader_not_available_then_the_topic(module_broker):
    body = struct.pack(">i", 1) + struct.pack(">h", len("auto-raw")) + b"auto-raw"
    codes = []
    with Connection(module_broker.address) as c:
        for _ in range(200):
            c.send_request(API_METADATA, 1, body)
            _, r = c.recv_response()
            for _ in range(r.i32()):  # brokers: node_id, host, port, rack
                r.i32(), r.string(), r.i32(), r.string()
            r.i32()  # controller id
            assert r.i32() == 1
            codes.append(r.i16())
            if codes[-1] == 0:
                break
            time.sleep(0.01)
    assert codes[-1] == 0, codes
    assert set(codes[:-1]) <= {5}, codes  # LEADER_NOT_AVAILABLE while it was created
