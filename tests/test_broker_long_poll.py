"""Fetch long polling: a Fetch parked on an empty partition with a large
max_wait_ms is answered soon after a message is produced; an empty Fetch is
answered after about max_wait_ms (not at once, not much later).

The Fetch is a hand-built v4 request on a raw socket (broker_wire.py), so the
measured time is the broker's, not a client library's fetch loop.
"""
from __future__ import annotations

import statistics
import threading
import time

import pytest

from broker_wire import API_FETCH, Connection, batch_headers, decode_fetch_v4, encode_fetch_v4

pytestmark = pytest.mark.timeout(240)

# Filled by the wake-up test, printed at the end of the session (pytest -s or -rA).
MEASURED = {}


def _create_topic(bootstrap, topic, partitions=1):
    from confluent_kafka.admin import AdminClient, NewTopic
    admin = AdminClient({"bootstrap.servers": bootstrap})  # must outlive the future
    admin.create_topics([NewTopic(topic, partitions, 1)], request_timeout=30)[topic].result(60)


@pytest.fixture(scope="module")
def warm_producer(module_broker):
    """A connected producer (linger 0) so that produce latency is only the broker's."""
    from confluent_kafka import Producer
    p = Producer({"bootstrap.servers": module_broker.bootstrap, "linger.ms": 0, "acks": 1})
    p.list_topics(timeout=30)
    yield p
    p.flush(30)


def _produce(p, topic, partition, value):
    done = []
    p.produce(topic, value=value, partition=partition,
              on_delivery=lambda err, m: done.append(err or m.offset()))
    return done


def test_parked_fetch_wakes_up_when_a_message_is_produced(module_broker, warm_producer):
    b = module_broker
    topic = "long-poll-wake"
    _create_topic(b.bootstrap, topic, 2)
    samples = []
    for i in range(7):
        with Connection(b.address, timeout=60) as c:
            sent = time.monotonic()
            c.send_request(API_FETCH, 4, encode_fetch_v4(topic, 0, i, max_wait_ms=30000))
            time.sleep(0.3)  # let the request park
            produced_at = time.monotonic()
            done = _produce(warm_producer, topic, 0, b"wake-%d" % i)
            result = {}

            def _recv():
                result["resp"] = c.recv_response()
                result["t"] = time.monotonic()

            t = threading.Thread(target=_recv)
            t.start()
            while t.is_alive():
                warm_producer.poll(0.01)
                t.join(0.01)
            assert "resp" in result, "no fetch response"
            _, r = result["resp"]
            fp = decode_fetch_v4(r)[(topic, 0)]
            assert fp.error_code == 0
            assert fp.high_watermark == i + 1
            batches = batch_headers(fp.records)
            assert [(x.base_offset, x.record_count) for x in batches] == [(i, 1)]
            assert result["t"] - sent >= 0.3 - 0.05, "fetch answered before anything was produced"
            samples.append(result["t"] - produced_at)
        warm_producer.flush(30)
        assert done == [i]
    median = statistics.median(samples)
    MEASURED["wake_latency_s"] = samples
    print(f"\nlong-poll wake-up latency: median {median * 1000:.1f} ms, "
          f"max {max(samples) * 1000:.1f} ms over {len(samples)} runs")
    assert median < 1.0, samples
    assert max(samples) < 5.0, samples  # far below the 30 s max_wait: it was a wake-up


@pytest.mark.parametrize("max_wait_ms", [500, 1500])
def test_empty_fetch_returns_after_max_wait(module_broker, max_wait_ms):
    b = module_broker
    topic = f"long-poll-empty-{max_wait_ms}"
    _create_topic(b.bootstrap, topic, 1)
    elapsed = []
    for _ in range(3):
        with Connection(b.address, timeout=60) as c:
            t0 = time.monotonic()
            c.send_request(API_FETCH, 4, encode_fetch_v4(topic, 0, 0, max_wait_ms=max_wait_ms))
            _, r = c.recv_response()
            elapsed.append(time.monotonic() - t0)
            fp = decode_fetch_v4(r)[(topic, 0)]
            assert fp.error_code == 0 and fp.high_watermark == 0
            assert not fp.records
    print(f"\nempty fetch max_wait {max_wait_ms} ms: elapsed "
          f"{', '.join(f'{e * 1000:.0f}' for e in elapsed)} ms")
    for e in elapsed:
        assert e >= 0.95 * max_wait_ms / 1000, elapsed   # not immediately
        assert e <= max_wait_ms / 1000 + 1.5, elapsed    # not much later


def test_zero_max_wait_returns_immediately(module_broker):
    b = module_broker
    topic = "long-poll-zero"
    _create_topic(b.bootstrap, topic, 1)
    with Connection(b.address, timeout=60) as c:
        t0 = time.monotonic()
        c.send_request(API_FETCH, 4, encode_fetch_v4(topic, 0, 0, max_wait_ms=0))
        _, r = c.recv_response()
        elapsed = time.monotonic() - t0
    fp = decode_fetch_v4(r)[(topic, 0)]
    assert fp.error_code == 0 and fp.high_watermark == 0 and not fp.records
    assert elapsed < 1.0


def test_parked_fetch_not_woken_by_another_partition(module_broker, warm_producer):
    """A produce to partition 1 does not answer a fetch parked on partition 0
    early with nothing; the fetch then wakes on its own partition's data."""
    b = module_broker
    topic = "long-poll-other-partition"
    _create_topic(b.bootstrap, topic, 2)
    with Connection(b.address, timeout=60) as c:
        t0 = time.monotonic()
        c.send_request(API_FETCH, 4, encode_fetch_v4(topic, 0, 0, max_wait_ms=30000))
        time.sleep(0.2)
        _produce(warm_producer, topic, 1, b"elsewhere")
        warm_producer.flush(30)
        assert not c.is_closed_by_peer(timeout=1.0)  # no answer (and no close) yet
        _produce(warm_producer, topic, 0, b"here")
        warm_producer.flush(30)
        c.sock.settimeout(30)
        _, r = c.recv_response()
        elapsed = time.monotonic() - t0
    fp = decode_fetch_v4(r)[(topic, 0)]
    assert fp.error_code == 0 and fp.high_watermark == 1
    assert [(x.base_offset, x.record_count) for x in batch_headers(fp.records)] == [(0, 1)]
    assert elapsed < 15
