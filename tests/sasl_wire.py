"""Raw-socket SASL for tests/test_security_sasl.py: SaslHandshake v0/v1 and
SaslAuthenticate v1 framing, a SCRAM client (RFC 5802) and PLAIN tokens,
on top of broker_wire's Connection. Facts from the Kafka protocol guide:
SaslHandshake (17) request = mechanism string, response = error_code int16,
mechanisms [string]; SaslAuthenticate (36) v1 request = auth_bytes bytes,
response = error_code int16, error_message nullable string, auth_bytes
bytes, session_lifetime_ms int64."""
from __future__ import annotations

import base64
import hashlib
import hmac
import os
import struct
from dataclasses import dataclass

from broker_wire import Connection, kstring

API_SASL_HANDSHAKE = 17
API_SASL_AUTHENTICATE = 36
ERR_UNSUPPORTED_SASL_MECHANISM = 33
ERR_ILLEGAL_SASL_STATE = 34
ERR_SASL_AUTHENTICATION_FAILED = 58


def kbytes(b: bytes) -> bytes:
    return struct.pack(">i", len(b)) + b


@dataclass
class AuthResult:
    error_code: int
    error_message: str | None
    auth_bytes: bytes
    session_lifetime_ms: int


def handshake(c: Connection, mechanism: str, version: int = 1) -> tuple[int, list[str]]:
    cid = c.send_request(API_SASL_HANDSHAKE, version, kstring(mechanism))
    got, r = c.recv_response()
    assert got == cid
    return r.i16(), r.array(lambda rr: rr.string())


def authenticate(c: Connection, token: bytes) -> AuthResult:
    cid = c.send_request(API_SASL_AUTHENTICATE, 1, kbytes(token))
    got, r = c.recv_response()
    assert got == cid
    return AuthResult(r.i16(), r.string(), r.nbytes() or b"", r.i64())


def plain_token(user: str, password: str, authzid: str = "") -> bytes:
    return f"{authzid}\0{user}\0{password}".encode()


class ScramClient:
    def __init__(self, mechanism: str, user: str, password: str):
        self.hash = hashlib.sha256 if mechanism == "SCRAM-SHA-256" else hashlib.sha512
        self.user, self.password = user, password
        self.nonce = base64.b64encode(os.urandom(18)).decode()
        self.first_bare = f"n={user},r={self.nonce}"
        self.server_signature = b""

    def first(self) -> bytes:
        return ("n,," + self.first_bare).encode()

    def final(self, server_first: bytes) -> bytes:
        attrs = dict(kv.split("=", 1) for kv in server_first.decode().split(","))
        assert attrs["r"].startswith(self.nonce)
        salted = hashlib.pbkdf2_hmac(self.hash().name, self.password.encode(),
                                     base64.b64decode(attrs["s"]), int(attrs["i"]))
        client_key = hmac.new(salted, b"Client Key", self.hash).digest()
        stored_key = self.hash(client_key).digest()
        without_proof = f"c=biws,r={attrs['r']}"
        auth_message = f"{self.first_bare},{server_first.decode()},{without_proof}".encode()
        signature = hmac.new(stored_key, auth_message, self.hash).digest()
        proof = bytes(a ^ b for a, b in zip(client_key, signature))
        server_key = hmac.new(salted, b"Server Key", self.hash).digest()
        self.server_signature = hmac.new(server_key, auth_message, self.hash).digest()
        return f"{without_proof},p={base64.b64encode(proof).decode()}".encode()

    def verify(self, server_final: bytes) -> bool:
        return server_final.decode() == "v=" + base64.b64encode(self.server_signature).decode()


def scram_login(c: Connection, mechanism: str, user: str, password: str) -> AuthResult:
    err, _ = handshake(c, mechanism)
    assert err == 0, err
    client = ScramClient(mechanism, user, password)
    first = authenticate(c, client.first())
    if first.error_code:
        return first
    final = authenticate(c, client.final(first.auth_bytes))
    if final.error_code == 0:
        assert client.verify(final.auth_bytes), "server signature does not verify"
    return final
