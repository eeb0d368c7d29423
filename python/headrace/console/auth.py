"""Who may use the web console, and as whom it reads (docs/console.md
"Security").

The console decides nothing itself: it reads the cluster over Kafka as the
person logged in, so the broker's own SASL check and ACL authorizer decide,
exactly as for any client of that user.

- **Login** (a SASL_PLAINTEXT or SASL_SSL listener exists): the console
  asks for a user name and password and checks them by authenticating to
  that listener (headrace.admin_wire.Connection: SaslHandshake +
  SaslAuthenticate, the CLI's own client), with each mechanism the listener
  enables — SCRAM-SHA-512, SCRAM-SHA-256, then PLAIN — so PLAIN users are
  checked against the listener's JAAS ``user_<name>`` entries and SCRAM
  users against the SCRAM credential store, by the broker. A session
  (random token in an HttpOnly, SameSite=Strict cookie) then gets its own
  Admin and Consumer with those credentials: every page is what the broker
  answers that user (Metadata leaves out the topics the user may not
  Describe, ListGroups the groups, Fetch refuses the topics it may not
  Read).
- **Open** (no SASL listener): as before, the console reads as an
  unauthenticated client of the broker's first PLAINTEXT listener (the
  authorizer, if on, decides as for ``User:ANONYMOUS``). Bound to a
  non-loopback address, the broker logs a loud warning at start.
- **HTTPS**: when a listener uses TLS and the broker has its key store
  (``ssl.keystore.*``, or the first TLS listener's
  ``listener.name.<l>.ssl.keystore.*``), the
  console is served over HTTPS with that key and certificate chain and the
  listener's ``ssl.enabled.protocols``; HTTP is then not served.
"""
from __future__ import annotations

import ipaddress
import os
import secrets
import ssl
import tempfile
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Mapping

from headrace.errors import HeadraceError

COOKIE = "headrace_session"
SESSION_IDLE_S = 30 * 60      # a session unused this long is closed
SESSION_MAX_S = 12 * 3600     # and any session after this long
MAX_SESSIONS = 64             # the least recently used goes first
LOGIN_TIMEOUT_S = 5.0
MECHANISM_ORDER = ("SCRAM-SHA-512", "SCRAM-SHA-256", "PLAIN")
DEFAULT_MECHANISMS = "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512"  # headrace's sasl.enabled.mechanisms


def local_bootstrap(listen_address: str) -> str:
    """The address to connect to a listener of this broker on (``host:port``
    as it listens), a wildcard host replaced by loopback; "" before it
    listens (port 0 not yet bound)."""
    host, _, port = listen_address.rpartition(":")
    if not port or port == "0":
        return ""
    if host in ("", "0.0.0.0"):
        host = "127.0.0.1"
    elif host in ("::", "[::]"):
        host = "[::1]"
    return f"{host}:{port}"


class LoginRefused(HeadraceError):
    """Wrong user name or password (the broker's answer)."""


def listener_protocols(values: Mapping[str, str]) -> dict[str, str]:
    """{listener name: security protocol} of ``listeners`` (as the broker
    reads them: a bare HOST:PORT is PLAINTEXT; Kafka's default map)."""
    pmap = {}
    for item in values.get("listener.security.protocol.map", "").split(","):
        name, sep, proto = item.partition(":")
        if sep:
            pmap[name.strip().upper()] = proto.strip().upper()
    out = {}
    for item in values.get("listeners", "").split(","):
        item = item.strip()
        if not item:
            continue
        name = item.split("://", 1)[0].strip().upper() if "://" in item else "PLAINTEXT"
        out[name] = pmap.get(name, name)
    return out


def _scope_get(values: Mapping[str, str], prefix: str, key: str, default: str = "") -> str:
    if prefix and f"{prefix}{key}" in values:
        return values[f"{prefix}{key}"]
    return values.get(key, default)


def https_context(values: Mapping[str, str]) -> ssl.SSLContext | None:
    """A server SSLContext from the broker's key store (``values`` as the
    core gets them: PKCS12 already turned into inline PEM by
    headrace.keystores.convert_stores), or None when it has none."""
    from headrace.keystores import tls_in_use

    if not tls_in_use(values):  # a key store no listener uses is not read (as the core)
        return None
    protocols = listener_protocols(values)
    scopes = [""] + [f"listener.name.{n.lower()}." for n, p in protocols.items()
                     if p in ("SSL", "SASL_SSL")]
    for prefix in scopes:
        location = _scope_get(values, prefix, "ssl.keystore.location")
        key = _scope_get(values, prefix, "ssl.keystore.key")
        chain = _scope_get(values, prefix, "ssl.keystore.certificate.chain")
        if not location and not (key and chain):
            continue
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        enabled = _scope_get(values, prefix, "ssl.enabled.protocols", "TLSv1.2,TLSv1.3")
        ctx.minimum_version = (ssl.TLSVersion.TLSv1_2 if "TLSv1.2" in enabled
                               else ssl.TLSVersion.TLSv1_3)
        password = _scope_get(values, prefix, "ssl.key.password") or None
        where = f"{prefix}ssl.keystore.location={location}" if location else \
            f"{prefix}ssl.keystore.key"
        try:
            if location:
                ctx.load_cert_chain(location, password=password)
            else:
                # ssl loads a chain from a file only: a private temporary one.
                fd, path = tempfile.mkstemp(prefix="headrace-console-", suffix=".pem")
                try:
                    with os.fdopen(fd, "w") as f:
                        f.write(key.strip() + "\n" + chain.strip() + "\n")
                    ctx.load_cert_chain(path, password=password)
                finally:
                    os.unlink(path)
        except (ssl.SSLError, OSError) as e:
            raise HeadraceError(f"console HTTPS: cannot use {where}: "
                                f"{getattr(e, 'reason', None) or e}") from None
        return ctx
    return None


def is_loopback(address: str) -> bool:
    """Whether HOST of HOST:PORT / [V6]:PORT is a loopback address or name."""
    host = address.rpartition(":")[0].strip("[]")
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@dataclass
class Session:
    user: str
    mechanism: str
    settings: dict[str, str]        # librdkafka client properties with the credentials
    created: float
    used: float
    clients: Any = None             # routes.Clients, made by the console on first use


class ConsoleAuth:
    """The console's access mode, derived from the broker's settings
    (``values``) and, once it listens, its endpoints (``endpoints()``:
    ``broker.advertised_endpoints``, "NAME://host:port,...")."""

    def __init__(self, values: Mapping[str, str], endpoints: Callable[[], str],
                 clock: Callable[[], float] = time.monotonic):
        self._values = dict(values)
        self._endpoints = endpoints
        self._clock = clock
        protocols = listener_protocols(values)
        sasl = [n for n, p in protocols.items() if p in ("SASL_PLAINTEXT", "SASL_SSL")]
        # SASL_PLAINTEXT first: a loopback connection to this broker needs no TLS trust.
        sasl.sort(key=lambda n: protocols[n] != "SASL_PLAINTEXT")
        self.listener = sasl[0] if sasl else None
        self.protocol = protocols.get(self.listener) if self.listener else None
        self.login_required = self.listener is not None
        plain = [n for n, p in protocols.items() if p == "PLAINTEXT"]
        self.open_listener = plain[0] if plain else None
        self.https = https_context(values)
        self._sessions: dict[str, Session] = {}
        self._lock = threading.Lock()
        self.on_close: Callable[[Session], None] = lambda s: None

    # -- where the console connects -------------------------------------------
    def mechanisms(self) -> list[str]:
        prefix = f"listener.name.{self.listener.lower()}." if self.listener else ""
        enabled = {m.strip().upper() for m in _scope_get(
            self._values, prefix, "sasl.enabled.mechanisms", DEFAULT_MECHANISMS).split(",")}
        return [m for m in MECHANISM_ORDER if m in enabled]

    def address_of(self, listener: str | None) -> str:
        """HOST:PORT of ``listener``'s endpoint, a wildcard host as loopback;
        "" before the broker listens."""
        if listener is None:
            return ""
        for item in self._endpoints().split(","):
            name, sep, rest = item.strip().partition("://")
            if sep and name.upper() == listener:
                return local_bootstrap(rest)
        return ""

    def login_address(self) -> str:
        return self.address_of(self.listener)

    def tls_client_settings(self) -> dict[str, str]:
        """ssl.* client properties for a SASL_SSL login listener: trust the
        broker's own trust store (PEM), else the system's CAs."""
        if self.protocol != "SASL_SSL":
            return {}
        prefix = f"listener.name.{self.listener.lower()}."
        out = {}
        location = _scope_get(self._values, prefix, "ssl.truststore.location")
        inline = _scope_get(self._values, prefix, "ssl.truststore.certificates")
        if location and _scope_get(self._values, prefix, "ssl.truststore.type",
                                   "PEM").upper() == "PEM":
            out["ssl.ca.location"] = location
        elif inline:
            out["ssl.ca.pem"] = inline
        return out

    def credentials(self, user: str, password: str, mechanism: str) -> dict[str, str]:
        return {"security.protocol": self.protocol, "sasl.mechanisms": mechanism,
                "sasl.username": user, "sasl.password": password,
                **self.tls_client_settings()}

    # -- login ------------------------------------------------------------------
    def verify(self, user: str, password: str) -> str:
        """The mechanism with which the login listener accepts ``user`` /
        ``password``; LoginRefused (the broker's reason) when none does;
        HeadraceError when the listener cannot be reached."""
        from headrace.admin_wire import Connection
        from headrace.wire_codec import WireError

        if not user or not password:
            raise LoginRefused("user name and password are required")
        address = self.login_address()
        if not address:
            raise HeadraceError("the broker is not listening yet")
        host, _, port = address.rpartition(":")
        reasons = []
        deadline = time.monotonic() + LOGIN_TIMEOUT_S  # for all mechanisms together
        for mechanism in self.mechanisms():
            wait = deadline - time.monotonic()
            if wait <= 0:
                raise HeadraceError(f"cannot check the login: the broker's listener "
                                    f"{self.listener} did not answer within "
                                    f"{LOGIN_TIMEOUT_S:g}s")
            try:
                conn = Connection(host.strip("[]"), int(port), wait,
                                  self.credentials(user, password, mechanism))
            except WireError as e:
                text = str(e)
                if "authentication failed" in text.lower() or "SASL" in text:
                    reasons.append(text.split(": ", 1)[-1])
                    continue
                raise HeadraceError(f"cannot check the login: {text}") from None
            conn.close()
            return mechanism
        raise LoginRefused("wrong user name or password" +
                           (f" ({reasons[-1]})" if reasons else ""))

    def login(self, user: str, password: str) -> tuple[str, Session]:
        """(token, session) for a user the broker accepts; LoginRefused."""
        mechanism = self.verify(user, password)
        now = self._clock()
        session = Session(user, mechanism, self.credentials(user, password, mechanism),
                          now, now)
        token = secrets.token_urlsafe(32)
        evicted = []
        with self._lock:
            self._sessions[token] = session
            evicted += self._expire_locked(now)
            while len(self._sessions) > MAX_SESSIONS:
                oldest = min(self._sessions, key=lambda t: self._sessions[t].used)
                evicted.append(self._sessions.pop(oldest))
        for s in evicted:
            self.on_close(s)
        return token, session

    def session(self, token: str | None) -> Session | None:
        """The live session of ``token`` (its use time refreshed), or None."""
        if not token:
            return None
        now = self._clock()
        with self._lock:
            evicted = self._expire_locked(now)
            s = self._sessions.get(token)
            if s is not None:
                s.used = now
        for e in evicted:
            self.on_close(e)
        return s

    def logout(self, token: str | None) -> None:
        with self._lock:
            s = self._sessions.pop(token, None) if token else None
        if s is not None:
            self.on_close(s)

    def close(self) -> None:
        with self._lock:
            gone, self._sessions = list(self._sessions.values()), {}
        for s in gone:
            self.on_close(s)

    def _expire_locked(self, now: float) -> list[Session]:
        dead = [t for t, s in self._sessions.items()
                if now - s.used > SESSION_IDLE_S or now - s.created > SESSION_MAX_S]
        return [self._sessions.pop(t) for t in dead]


def session_token(headers) -> str | None:
    """The console's session cookie of a request, or None."""
    from http.cookies import CookieError, SimpleCookie

    raw = headers.get("Cookie") if headers is not None else None
    if not raw:
        return None
    try:
        jar = SimpleCookie(raw)
    except CookieError:
        return None
    morsel = jar.get(COOKIE)
    return morsel.value if morsel else None
