#!/usr/bin/env python3
"""What SASL costs (docs/performance.md, "SASL"): logins per second per
mechanism, and produce throughput with confluent-kafka over PLAINTEXT vs an
authenticated SASL_PLAINTEXT session.

    bench/sasl_bench.py [--logins 300] [--messages 300000] [--pairs 3]

Logins: one raw connection per login (ApiVersions-free: SaslHandshake v1 +
SaslAuthenticate v1), sequential, client-side SCRAM salting cached so the
figure is the broker's exchange plus the round trips. OAUTHBEARER tokens are
RS256 JWTs checked against a JWKS file. Produce: 100-byte values, acks=1,
linger.ms=5, one partition; per pair a fresh broker for each mode, the order
alternating so drift of the shared machine's load cancels; the median is
printed.
"""
from __future__ import annotations

import argparse
import hashlib
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

from broker_process import BrokerProcess  # noqa: E402
from broker_wire import Connection  # noqa: E402
import sasl_wire  # noqa: E402
from sasl_wire import authenticate, handshake, plain_token  # noqa: E402
from test_security_sasl import (ALICE, SCRAM_USER, Idp, broker_args, create_scram_user,  # noqa: E402
                                free_port)

_salted_cache: dict = {}
_pbkdf2 = hashlib.pbkdf2_hmac


def _cached_pbkdf2(name, password, salt, iterations):
    key = (name, password, salt, iterations)
    if key not in _salted_cache:
        _salted_cache[key] = _pbkdf2(name, password, salt, iterations)
    return _salted_cache[key]


def logins_per_s(b: BrokerProcess, mechanism: str, n: int, idp: Idp) -> float:
    token = idp.token()[0]
    start = time.perf_counter()
    for _ in range(n):
        with Connection(b.address) as c:
            if mechanism == "PLAIN":
                handshake(c, "PLAIN")
                assert authenticate(c, plain_token(*ALICE)).error_code == 0
            elif mechanism == "OAUTHBEARER":
                handshake(c, "OAUTHBEARER")
                msg = b"n,,\x01auth=Bearer " + token.encode() + b"\x01\x01"
                assert authenticate(c, msg).error_code == 0
            else:
                assert sasl_wire.scram_login(c, mechanism, *SCRAM_USER).error_code == 0
    return n / (time.perf_counter() - start)


def produce_rate(conf: dict, n: int) -> float:
    from confluent_kafka import Producer
    p = Producer({**conf, "acks": 1, "linger.ms": 5, "queue.buffering.max.messages": 1_000_000})
    value = b"x" * 100
    p.produce("bench", value)
    p.flush(30)  # topic created, session up
    start = time.perf_counter()
    for _ in range(n):
        while True:
            try:
                p.produce("bench", value)
                break
            except BufferError:
                p.poll(0.01)
    p.flush(60)
    return n / (time.perf_counter() - start)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--logins", type=int, default=300)
    ap.add_argument("--messages", type=int, default=300_000)
    ap.add_argument("--pairs", type=int, default=3)
    args = ap.parse_args()
    hashlib.pbkdf2_hmac = _cached_pbkdf2  # the client's salting is not what we measure
    tmp = Path(tempfile.mkdtemp(prefix="sasl-bench-"))
    idp = Idp(tmp / "jwks.json")

    b = BrokerProcess(tmp / "logins", *broker_args(idp),
                      listen=f"SASL_PLAINTEXT://127.0.0.1:{free_port()}").start()
    try:
        create_scram_user(b, *SCRAM_USER)
        for m in ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER"):
            print(f"logins/s {m:14s} {logins_per_s(b, m, args.logins, idp):8.0f}", flush=True)
    finally:
        b.stop()

    rates: dict[str, list[float]] = {"PLAINTEXT": [], "SASL_PLAINTEXT": []}
    for pair in range(args.pairs):
        modes = ["PLAINTEXT", "SASL_PLAINTEXT"] if pair % 2 == 0 else ["SASL_PLAINTEXT", "PLAINTEXT"]
        for mode in modes:
            d = tmp / f"{mode}-{pair}"
            b = BrokerProcess(d, *broker_args(idp),
                              listen=f"{mode}://127.0.0.1:{free_port()}").start()
            try:
                conf = {"bootstrap.servers": b.bootstrap}
                if mode == "SASL_PLAINTEXT":
                    conf.update({"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
                                 "sasl.username": ALICE[0], "sasl.password": ALICE[1]})
                rates[mode].append(produce_rate(conf, args.messages))
            finally:
                b.stop()
    for mode, r in rates.items():
        print(f"produce msgs/s {mode:15s} median {statistics.median(r):10.0f}  runs "
              + " ".join(f"{x:.0f}" for x in r), flush=True)
    ratio = statistics.median(rates["SASL_PLAINTEXT"]) / statistics.median(rates["PLAINTEXT"])
    print(f"produce SASL_PLAINTEXT / PLAINTEXT: {ratio:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
