"""Garbage on the wire: the broker drops the offending connection (or, for an
unsupported ApiVersions version, answers v0 with UNSUPPORTED_VERSION and its
API list), stays up, and other clients are unaffected.

Responses are decoded with the struct helper in broker_wire.py.
"""
from __future__ import annotations

import random
import struct
import threading
import time

import pytest

from broker_wire import (API_API_VERSIONS, API_FETCH, API_METADATA, API_PRODUCE,
                         ERR_UNSUPPORTED_VERSION, Connection, decode_api_versions, frame,
                         request_header)

pytestmark = pytest.mark.timeout(180)

HANDSHAKE_APIS = {API_PRODUCE, API_FETCH, 2, API_METADATA, API_API_VERSIONS}


def _roundtrip_with_confluent(bootstrap: str, topic: str, n: int = 20) -> None:
    """A well-behaved client produces n messages and reads exactly them back."""
    from confluent_kafka import Consumer, Producer, TopicPartition

    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5,
                  "message.timeout.ms": 60000})
    reports = []
    for i in range(n):
        p.produce(topic, key=b"k%d" % i, value=b"v%d" % i, headers=[("i", b"%d" % i)],
                  partition=0, on_delivery=lambda err, m: reports.append(
                      err or (m.partition(), m.offset())))
    assert p.flush(60) == 0
    assert all(isinstance(r, tuple) for r in reports), reports
    first = reports[0][1]
    assert [r for r in reports] == [(0, first + i) for i in range(n)]

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "malformed-check",
                  "enable.auto.commit": False, "fetch.wait.max.ms": 100})
    try:
        c.assign([TopicPartition(topic, 0, first)])
        got = []
        deadline = time.monotonic() + 60
        while len(got) < n and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is None:
                continue
            assert m.error() is None, m.error()
            got.append((m.offset(), m.key(), m.value(), m.headers()))
        assert got == [(first + i, b"k%d" % i, b"v%d" % i, [("i", b"%d" % i)]) for i in range(n)]
    finally:
        c.close()


def _assert_healthy(b, topic="malformed-health"):
    b.assert_alive()
    _roundtrip_with_confluent(b.bootstrap, topic)


def _send_and_expect_close(b, data: bytes, half_close: bool = False):
    with Connection(b.address) as c:
        try:
            c.send_raw(data)
        except (BrokenPipeError, ConnectionResetError):
            return  # closed while we were still sending: also a close
        if half_close:
            c.sock.shutdown(1)  # SHUT_WR: our side ends mid-frame
        assert c.is_closed_by_peer(timeout=30), f"broker kept the connection after {data[:32]!r}"


def test_api_versions_v0_sanity(module_broker):
    with Connection(module_broker.address) as c:
        cid = c.send_request(API_API_VERSIONS, 0, correlation_id=4242)
        got_cid, r = c.recv_response()
        resp = decode_api_versions(r, 0)
    assert got_cid == cid == 4242
    assert resp.error_code == 0
    assert HANDSHAKE_APIS <= set(resp.apis)
    assert resp.apis[API_API_VERSIONS][0] == 0 and resp.apis[API_API_VERSIONS][1] >= 3


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_random_bytes_with_valid_length_prefix_close_connection(module_broker, seed):
    rnd = random.Random(seed)
    body = bytes(rnd.getrandbits(8) for _ in range(200))
    # Make the api key certainly unknown (> 10000) so the outcome is determined.
    body = struct.pack(">h", 20000 + seed) + body[2:]
    _send_and_expect_close(module_broker, frame(body))
    module_broker.assert_alive()


@pytest.mark.parametrize("seed", [7, 8])
def test_random_bytes_without_framing(module_broker, seed):
    rnd = random.Random(seed)
    data = bytes([0x80 | rnd.getrandbits(7)]) + bytes(rnd.getrandbits(8) for _ in range(4095))
    _send_and_expect_close(module_broker, data)  # first byte >= 0x80: negative size
    module_broker.assert_alive()


@pytest.mark.parametrize("size", [0x7FFFFFFF, -1, -0x80000000, 0x7FFFFFF0])
def test_absurd_size_prefix_closes_connection(module_broker, size):
    _send_and_expect_close(module_broker, struct.pack(">i", size) + b"\x00" * 16)
    module_broker.assert_alive()


def test_zero_size_frame_closes_connection(module_broker):
    _send_and_expect_close(module_broker, struct.pack(">i", 0))
    module_broker.assert_alive()


@pytest.mark.parametrize("header_bytes", [b"", b"\x00", b"\x00\x12\x00", b"\x00\x12\x00\x00\x00"])
def test_frame_shorter_than_request_header_closes_connection(module_broker, header_bytes):
    _send_and_expect_close(module_broker, frame(header_bytes) if header_bytes else
                           struct.pack(">i", 1) + b"\x00")
    module_broker.assert_alive()


def test_client_id_longer_than_frame_closes_connection(module_broker):
    hdr = struct.pack(">hhih", API_API_VERSIONS, 0, 1, 500) + b"abc"
    _send_and_expect_close(module_broker, frame(hdr))
    module_broker.assert_alive()


def test_truncated_frame_then_eof(module_broker):
    """A size prefix promising 100 bytes, 20 sent, then our side closes."""
    _send_and_expect_close(module_broker, struct.pack(">i", 100) + b"\x00" * 20, half_close=True)
    module_broker.assert_alive()


def test_truncated_frame_waits_without_answer(module_broker):
    """Half a request is not answered; the rest of it completes it."""
    req = frame(request_header(API_API_VERSIONS, 0, 77))
    with Connection(module_broker.address) as c:
        c.send_raw(req[:7])
        assert not c.is_closed_by_peer(timeout=1.0)
        c.sock.settimeout(30)
        c.send_raw(req[7:])
        cid, r = c.recv_response()
        assert cid == 77 and decode_api_versions(r, 0).error_code == 0


@pytest.mark.parametrize("api_key", [999, 32767, -1, -32768])
def test_unknown_api_key_closes_connection(module_broker, api_key):
    _send_and_expect_close(module_broker, frame(request_header(api_key, 0, 5)))
    module_broker.assert_alive()


@pytest.mark.parametrize("version", [5, 99, 32767])
def test_unsupported_api_versions_version_gets_v0_error_35_and_api_list(module_broker, version):
    with Connection(module_broker.address) as c:
        c.send_request(API_API_VERSIONS, version, correlation_id=31337)
        cid, r = c.recv_response()
        resp = decode_api_versions(r, 0)
        assert cid == 31337
        assert resp.error_code == ERR_UNSUPPORTED_VERSION
        assert HANDSHAKE_APIS <= set(resp.apis)
        lo, hi = resp.apis[API_API_VERSIONS]
        assert lo == 0 and 3 <= hi < 5
        assert r.remaining == 0, f"{r.remaining} trailing bytes in the v0 response"
        # The connection stays usable: the client retries with a version it can speak.
        c.send_request(API_API_VERSIONS, 0, correlation_id=31338)
        cid, r = c.recv_response()
        assert cid == 31338 and decode_api_versions(r, 0).apis == resp.apis


@pytest.mark.parametrize("api_key,version", [(API_METADATA, 99), (API_PRODUCE, 99),
                                             (API_FETCH, 0), (API_FETCH, 99), (2, 0)])
def test_unsupported_version_of_other_api_closes_connection(module_broker, api_key, version):
    with Connection(module_broker.address) as c:
        adv = c.send_request(API_API_VERSIONS, 0)
        _, r = c.recv_response()
        lo, hi = decode_api_versions(r, 0).apis[api_key]
        assert not lo <= version <= hi, f"test assumes v{version} of {api_key} is unsupported"
        del adv
    _send_and_expect_close(module_broker, frame(request_header(api_key, version, 9) + b"\x00" * 40))
    module_broker.assert_alive()


def test_garbage_after_a_good_request_closes_after_answering_it(module_broker):
    good = frame(request_header(API_API_VERSIONS, 0, 1))
    bad = frame(request_header(12345, 0, 2))
    with Connection(module_broker.address) as c:
        c.send_raw(good + bad)
        cid, r = c.recv_response()
        assert cid == 1 and decode_api_versions(r, 0).error_code == 0
        assert c.is_closed_by_peer(timeout=30)


def test_well_behaved_client_unaffected_after_all_kinds_of_garbage(module_broker):
    _assert_healthy(module_broker, "malformed-after-garbage")


def test_concurrent_garbage_does_not_disturb_a_well_behaved_client(module_broker):
    """A thread opens 150 connections sending garbage while confluent-kafka
    produces and consumes; the garbage never reaches the good client."""
    b = module_broker
    stop = threading.Event()
    sent = [0]
    errors = []

    def _garbage():
        rnd = random.Random(99)
        kinds = [
            lambda: struct.pack(">i", 0x7FFFFFFF) + b"x" * 10,
            lambda: struct.pack(">i", -5),
            lambda: frame(request_header(rnd.randrange(1000, 30000), 0, 1)),
            lambda: frame(request_header(API_METADATA, 999, 1)),
            lambda: bytes(rnd.getrandbits(8) for _ in range(64)),
        ]
        try:
            while not stop.is_set() and sent[0] < 150:
                with Connection(b.address, timeout=10) as c:
                    try:
                        c.send_raw(rnd.choice(kinds)())
                    except (BrokenPipeError, ConnectionResetError):
                        pass
                sent[0] += 1
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(repr(e))

    t = threading.Thread(target=_garbage, daemon=True)
    t.start()
    try:
        for round_ in range(3):
            _roundtrip_with_confluent(b.bootstrap, "malformed-concurrent", n=30)
    finally:
        stop.set()
        t.join(60)
    assert not errors, errors
    assert sent[0] > 0
    _assert_healthy(b, "malformed-concurrent")
