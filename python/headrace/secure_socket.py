"""TLS and SASL for headrace.admin_wire's hand-written connection, from the
same librdkafka properties the CLI gives confluent-kafka
(headrace.client_settings):

- ``security.protocol``: PLAINTEXT (default), SSL, SASL_PLAINTEXT, SASL_SSL.
- TLS (:mod:`ssl`): ``ssl.ca.location`` / ``ssl.ca.pem`` (trust; the
  system's CAs otherwise), ``ssl.certificate.location`` +
  ``ssl.key.location`` (+ ``ssl.key.password``) or ``ssl.certificate.pem``
  + ``ssl.key.pem`` for a client certificate,
  ``ssl.endpoint.identification.algorithm`` (``https``, the default, checks
  the broker's host name; ``none`` does not),
  ``enable.ssl.certificate.verification`` (``false``: no check at all).
- SASL (``sasl.mechanisms``): PLAIN and SCRAM-SHA-256 / SCRAM-SHA-512 with
  ``sasl.username`` / ``sasl.password``; SaslHandshake v1, then
  SaslAuthenticate v2 (KIP-152). SCRAM's client side is the scramp library.
"""
from __future__ import annotations

import os
import ssl
import struct
import tempfile
from collections.abc import Mapping

from headrace.errors import HeadraceError
from headrace.wire_codec import NO_TAGS, error_name, uvarint


class SecureSocketError(HeadraceError):
    """TLS or SASL could not be set up with the given settings."""


_TLS = ("SSL", "SASL_SSL")
_SASL = ("SASL_PLAINTEXT", "SASL_SSL")
_PROTOCOLS = ("PLAINTEXT",) + _TLS + ("SASL_PLAINTEXT",)


def security_protocol(settings: Mapping[str, str]) -> str:
    protocol = settings.get("security.protocol", "PLAINTEXT").upper()
    if protocol not in _PROTOCOLS:
        raise SecureSocketError(f"security.protocol {protocol!r}: expected one of "
                                f"{', '.join(_PROTOCOLS)}")
    return protocol


def _false(value: str | None) -> bool:
    return value is not None and value.strip().lower() in ("false", "0", "no")


def tls_context(settings: Mapping[str, str]) -> ssl.SSLContext:
    """An SSLContext as librdkafka would set it up from ``settings``."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    if _false(settings.get("enable.ssl.certificate.verification")):
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    else:
        algorithm = settings.get("ssl.endpoint.identification.algorithm", "https").lower()
        ctx.check_hostname = algorithm == "https"
        ca, ca_pem = settings.get("ssl.ca.location"), settings.get("ssl.ca.pem")
        try:
            if ca and os.path.isdir(ca):
                ctx.load_verify_locations(capath=ca)
            elif ca:
                ctx.load_verify_locations(cafile=ca)
            if ca_pem:
                ctx.load_verify_locations(cadata=ca_pem)
            if not ca and not ca_pem:
                ctx.load_default_certs()
        except (OSError, ssl.SSLError) as e:
            raise SecureSocketError(f"ssl.ca: {e}") from None
    if settings.get("ssl.keystore.location"):
        raise SecureSocketError("ssl.keystore.location (PKCS#12) is not supported for "
                                "headrace's admin requests: use ssl.certificate.location and "
                                "ssl.key.location (PEM)")
    _load_client_certificate(ctx, settings)
    return ctx


def _load_client_certificate(ctx: ssl.SSLContext, settings: Mapping[str, str]) -> None:
    cert, key = settings.get("ssl.certificate.location"), settings.get("ssl.key.location")
    cert_pem, key_pem = settings.get("ssl.certificate.pem"), settings.get("ssl.key.pem")
    password = settings.get("ssl.key.password")
    try:
        if cert:
            ctx.load_cert_chain(cert, key or cert, password)
        elif cert_pem:
            # ssl loads chains from files only: a private temporary file.
            with tempfile.TemporaryDirectory() as d:
                path = os.path.join(d, "client.pem")
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
                with os.fdopen(fd, "w") as f:
                    f.write(cert_pem + "\n" + (key_pem or ""))
                ctx.load_cert_chain(path, None, password)
    except (OSError, ssl.SSLError) as e:
        raise SecureSocketError(f"client certificate: {e}") from None


def wrap_tls(sock, host: str, settings: Mapping[str, str]):
    """``sock`` under TLS when the protocol asks for it (handshake done)."""
    if security_protocol(settings) not in _TLS:
        return sock
    try:
        return tls_context(settings).wrap_socket(sock, server_hostname=host)
    except ssl.SSLError as e:
        sock.close()
        raise SecureSocketError(f"TLS handshake failed: {e.reason or e}") from None


# -- SASL ----------------------------------------------------------------------
def _mechanism(settings: Mapping[str, str]) -> str:
    return (settings.get("sasl.mechanisms") or settings.get("sasl.mechanism") or "GSSAPI").upper()


def _authenticate_bytes(conn, token: bytes) -> bytes:
    """One SaslAuthenticate v2 round: sends ``token``, returns the broker's."""
    r = conn.call(36, 2, uvarint(len(token) + 1) + token + NO_TAGS)
    code, message = r.int16(), r.cstring()
    answer = r.cbytes() or b""
    r.int64()  # session_lifetime_ms
    if code:
        raise SecureSocketError(f"SASL authentication failed: {message or error_name(code)}")
    return answer


def authenticate(conn, settings: Mapping[str, str]) -> None:
    """Runs the SASL exchange on ``conn`` when the protocol asks for it."""
    if security_protocol(settings) not in _SASL:
        return
    mechanism = _mechanism(settings)
    if mechanism not in ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"):
        raise SecureSocketError(f"sasl.mechanisms {mechanism}: headrace's admin requests "
                                "speak PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512")
    user, password = settings.get("sasl.username"), settings.get("sasl.password")
    if user is None or password is None:
        raise SecureSocketError(f"SASL {mechanism} needs sasl.username and sasl.password")
    name = mechanism.encode()
    r = conn.call(17, 1, struct.pack(">h", len(name)) + name, flexible=False)
    code = r.int16()
    offered = [r.string() for _ in range(r.int32())]
    if code:
        raise SecureSocketError(f"the broker does not offer SASL {mechanism} "
                                f"(it offers {', '.join(m for m in offered if m) or 'none'})")
    if mechanism == "PLAIN":
        _authenticate_bytes(conn, b"\0" + user.encode() + b"\0" + password.encode())
        return
    try:
        from scramp import ScramClient
    except ImportError:  # pragma: no cover - scramp is a dependency
        raise SecureSocketError("SCRAM needs the scramp package") from None
    client = ScramClient([mechanism], user, password)
    try:
        server_first = _authenticate_bytes(conn, client.get_client_first().encode())
        client.set_server_first(server_first.decode())
        server_final = _authenticate_bytes(conn, client.get_client_final().encode())
        client.set_server_final(server_final.decode())
    except Exception as e:  # noqa: BLE001 - scramp's ScramException and decoding errors
        if isinstance(e, SecureSocketError):
            raise
        raise SecureSocketError(f"SASL {mechanism} failed: {e}") from None
