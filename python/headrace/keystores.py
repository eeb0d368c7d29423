"""Kafka's PKCS12 key and trust stores for a core that serves PEM.

The TLS listeners are set up by the C++ core from PEM (a file, or inline:
``ssl.keystore.key`` + ``ssl.keystore.certificate.chain``,
``ssl.truststore.certificates``). Before the settings reach it,
``convert_stores`` reads every PKCS12 store the settings name, the global
``ssl.*`` ones and each ``listener.name.<listener>.ssl.*`` override, with
the ``cryptography`` package (OpenSSL underneath) and hands the core the
same key and certificates as inline PEM:

- ``ssl.keystore.type=PKCS12`` + ``ssl.keystore.location`` (+
  ``ssl.keystore.password``): the private key and its certificate chain
  (leaf first); a key password (``ssl.key.password``) in force for that
  listener encrypts the PEM key again, so the core decrypts it as before;
- ``ssl.truststore.type=PKCS12`` + ``ssl.truststore.location``: every
  certificate in it (keytool's trustedCertEntry entries included).

Java's default store type, and so Kafka's (``ssl.keystore.type`` unset), is
JKS. As Java 9+ does (``keystore.type.compat``), a store of type JKS whose
file is PKCS12 is read as PKCS12; a real JKS file (or JCEKS) is refused with
the ``keytool -importkeystore ... -deststoretype PKCS12`` command that
converts it. Nothing is done when no listener (nor the inter-broker
protocol) uses TLS: the core does not read the stores then either.
"""
from __future__ import annotations

from typing import Mapping

from headrace.errors import HeadraceError

JKS_MAGIC = b"\xfe\xed\xfe\xed"
JCEKS_MAGIC = b"\xce\xce\xce\xce"
_TLS_PROTOCOLS = ("SSL", "SASL_SSL")


class KeystoreError(HeadraceError, ValueError):
    """A key or trust store that cannot be used (one line, naming the key)."""


def tls_in_use(values: Mapping[str, str]) -> bool:
    """Whether a listener (by listener.security.protocol.map, else its name)
    or security.inter.broker.protocol is SSL or SASL_SSL."""
    pmap = {}
    for item in values.get("listener.security.protocol.map", "").split(","):
        name, sep, proto = item.partition(":")
        if sep:
            pmap[name.strip().upper()] = proto.strip().upper()
    for item in values.get("listeners", "").split(","):
        name = item.split("://", 1)[0].strip().upper() if "://" in item else ""
        if pmap.get(name, name) in _TLS_PROTOCOLS:
            return True
    return values.get("security.inter.broker.protocol", "").strip().upper() in _TLS_PROTOCOLS


def _scopes(values: Mapping[str, str]) -> list[str]:
    """"" (the ssl.* keys) and each "listener.name.<l>." with an ssl.* override."""
    prefixes = {""}
    for key in values:
        if key.startswith("listener.name.") and ".ssl." in key:
            prefixes.add(key[:key.index(".ssl.") + 1])
    return sorted(prefixes)


def _get(values: Mapping[str, str], prefix: str, key: str, default: str = "") -> str:
    """The value of ssl.<key> for a scope: its override, else the global one."""
    if prefix and f"{prefix}{key}" in values:
        return values[f"{prefix}{key}"]
    return values.get(key, default)


def _jks_message(key: str, path: str, kind: str) -> str:
    store = "keystore" if "keystore" in key else "truststore"
    dest = path.rsplit(".", 1)[0] + ".p12"
    return (f"{key}={path}: a {kind} store; headrace reads PKCS12 and PEM stores, not {kind} "
            f"(JKS is Java's and so Kafka's default ssl.{store}.type). Convert it with: "
            f"keytool -importkeystore -srckeystore {path} -srcstoretype {kind} "
            f"-destkeystore {dest} -deststoretype PKCS12, then set "
            f"ssl.{store}.type=PKCS12 and ssl.{store}.location={dest}")


def _read(key: str, path: str) -> bytes | None:
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError:
        return None  # the core reports an unreadable file, naming the listener


def _store_kind(declared: str, data: bytes) -> str:
    """What the file is: PKCS12, JKS, JCEKS or PEM (by content; ``declared``
    when it cannot be told)."""
    if data.startswith(JKS_MAGIC):
        return "JKS"
    if data.startswith(JCEKS_MAGIC):
        return "JCEKS"
    if data.lstrip().startswith(b"-----BEGIN"):
        return "PEM"
    if data[:1] == b"\x30":  # a DER SEQUENCE: PKCS#12's PFX
        return "PKCS12"
    return declared


def _load(key: str, path: str, data: bytes, passwords: list[str]):
    """(private key, certificate, additional certificates) of a PKCS12 file,
    trying each password (and none)."""
    try:
        from cryptography.hazmat.primitives.serialization import pkcs12
    except ImportError:  # pragma: no cover - a run dependency
        raise KeystoreError(f"{key}={path}: reading a PKCS12 store needs the 'cryptography' "
                            f"package (pip install cryptography), or use a PEM store") \
            from None
    last = None
    for pw in [p for p in passwords if p] + [None]:
        try:
            return pkcs12.load_key_and_certificates(data, pw.encode() if pw else None)
        except (ValueError, TypeError) as e:
            last = e
    raise KeystoreError(f"{key}={path}: cannot read the PKCS12 store: {last} (a wrong "
                        f"password, or not a PKCS12 file)")


def _pem_certs(certs) -> str:
    from cryptography.hazmat.primitives.serialization import Encoding

    return "".join(c.public_bytes(Encoding.PEM).decode() for c in certs)


def _pem_key(key, password: str) -> str:
    from cryptography.hazmat.primitives.serialization import (BestAvailableEncryption, Encoding,
                                                              NoEncryption, PrivateFormat)

    enc = BestAvailableEncryption(password.encode()) if password else NoEncryption()
    return key.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, enc).decode()


def read_store(key: str, path: str, declared: str, password: str = "",
               key_password: str = "") -> tuple[str, str] | None:
    """A client's (or any) store file as PEM: (private key PEM or "",
    certificates PEM, leaf first) when the file is PKCS12 (whatever
    ``declared`` says, as Java reads a PKCS12 file under type JKS); None
    when it is PEM (or unreadable: the caller's reader says why); ``declared``
    "" when the type is not set. Raises KeystoreError for a JKS/JCEKS file
    (or one declared so that cannot be read) or a PKCS12 one it cannot
    open."""
    declared = (declared or "").strip().upper()  # "": not set
    data = _read(key, path)
    if data is None:
        if declared in ("JKS", "JCEKS"):
            raise KeystoreError(_jks_message(key, path, declared))
        return None
    kind = _store_kind(declared, data)
    if kind in ("JKS", "JCEKS"):
        raise KeystoreError(_jks_message(key, path, kind))
    if kind != "PKCS12":
        return None
    pkey, cert, extra = _load(key, path, data, [password, key_password])
    certs = ([cert] if cert is not None else []) + list(extra)
    key_pem = _pem_key(pkey, key_password) if pkey is not None else ""
    return key_pem, _pem_certs(certs)


def convert_stores(values: Mapping[str, str]) -> tuple[dict[str, str], list[str]]:
    """``values`` with each PKCS12 store replaced by inline PEM (see the
    module docstring), and one note per store converted. Raises
    KeystoreError for a JKS/JCEKS store or a PKCS12 one it cannot read."""
    out = dict(values)
    notes: list[str] = []
    if not tls_in_use(values):
        return out, notes
    for prefix in _scopes(values):
        for store in ("keystore", "truststore"):
            loc_key = f"{prefix}ssl.{store}.location"
            if prefix and loc_key not in values and f"{prefix}ssl.{store}.type" not in values:
                continue  # this listener uses the global store, converted once
            path = _get(values, prefix, f"ssl.{store}.location")
            if not path:
                continue
            declared = _get(values, prefix, f"ssl.{store}.type", "JKS").strip().upper()
            if declared == "PEM":
                continue
            data = _read(loc_key, path)
            if data is None:
                continue
            kind = _store_kind(declared, data)
            if kind in ("JKS", "JCEKS"):
                raise KeystoreError(_jks_message(loc_key, path, kind))
            if kind != "PKCS12":
                continue  # PEM content under another type: the core says what it wants
            password = _get(values, prefix, f"ssl.{store}.password")
            if store == "keystore":
                key_password = _get(values, prefix, "ssl.key.password")
                key, cert, extra = _load(loc_key, path, data, [password, key_password])
                if key is None or cert is None:
                    raise KeystoreError(f"{loc_key}={path}: the PKCS12 store holds no private "
                                        f"key with its certificate")
                out[f"{prefix}ssl.keystore.key"] = _pem_key(key, key_password)
                out[f"{prefix}ssl.keystore.certificate.chain"] = _pem_certs([cert, *extra])
                what = f"the key of {cert.subject.rfc4514_string()} and {1 + len(extra)} " \
                       f"certificate(s)"
            else:
                _, cert, extra = _load(loc_key, path, data, [password])
                certs = ([cert] if cert is not None else []) + list(extra)
                if not certs:
                    raise KeystoreError(f"{loc_key}={path}: the PKCS12 store holds no "
                                        f"certificate")
                out[f"{prefix}ssl.truststore.certificates"] = _pem_certs(certs)
                what = f"{len(certs)} trusted certificate(s)"
            out[f"{prefix}ssl.{store}.type"] = "PEM"
            for gone in (f"ssl.{store}.location", f"ssl.{store}.password"):
                out.pop(f"{prefix}{gone}", None)
            if prefix:  # the global location must not come back through the override
                out[f"{prefix}ssl.{store}.location"] = ""
            notes.append(f"{loc_key}: PKCS12 store {path} read ({what}), handed to the TLS "
                         f"listener{'s' if not prefix else ' ' + prefix.split('.')[2]} as PEM")
    return out, notes
