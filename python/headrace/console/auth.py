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
- **Client certificate** (an SSL listener with ``ssl.client.auth``
  required or requested, and HTTPS): the console asks browsers for a
  certificate and verifies it with that listener's trust store; a browser
  presenting one is logged in as the principal the listener would give it
  (``User:`` + the subject in RFC 2253, ``headrace._core
  .certificate_principal``). The console cannot connect as that user (it
  has no key), so it reads with the broker's own key store on that
  listener and every answer is cut by the broker's authorizer to what the
  principal may see (headrace.console.acting). With a SASL listener too, a
  browser without a certificate gets the password form.
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


def client_auth_listener(values: Mapping[str, str]) -> str | None:
    """The first SSL listener that asks clients for a certificate
    (``ssl.client.auth`` required or requested, for the listener or the
    broker), or None. SASL_SSL is not one: its principal comes from SASL."""
    for name, proto in listener_protocols(values).items():
        prefix = f"listener.name.{name.lower()}."
        if proto == "SSL" and _scope_get(values, prefix, "ssl.client.auth",
                                         "none").strip().lower() in ("required", "requested"):
            return name
    return None


def _key_store(values: Mapping[str, str], prefix: str) -> tuple[str, str, str, str] | None:
    """(location, inline key, inline chain, key password) of the key store
    of scope ``prefix`` ("" or "listener.name.<l>."), or None if it has
    none."""
    location = _scope_get(values, prefix, "ssl.keystore.location")
    key = _scope_get(values, prefix, "ssl.keystore.key")
    chain = _scope_get(values, prefix, "ssl.keystore.certificate.chain")
    if not location and not (key and chain):
        return None
    return location, key, chain, _scope_get(values, prefix, "ssl.key.password")


def _trust_store(values: Mapping[str, str], prefix: str) -> dict[str, str]:
    """The trust store of scope ``prefix`` as librdkafka properties
    (ssl.ca.location of a PEM file, or ssl.ca.pem); {} when it has none."""
    location = _scope_get(values, prefix, "ssl.truststore.location")
    inline = _scope_get(values, prefix, "ssl.truststore.certificates")
    if location and _scope_get(values, prefix, "ssl.truststore.type",
                               "PEM").strip().upper() == "PEM":
        return {"ssl.ca.location": location}
    if inline:
        return {"ssl.ca.pem": inline}
    return {}


def _trust_client_certificates(ctx: ssl.SSLContext, values: Mapping[str, str]) -> None:
    """Asks browsers for a certificate and verifies it with the trust store
    of the listener that checks client certificates (client_auth_listener);
    a browser without one is still served (the login form, or 403)."""
    listener = client_auth_listener(values)
    if listener is None:
        return
    trust = _trust_store(values, f"listener.name.{listener.lower()}.")
    if not trust:
        raise HeadraceError(f"console HTTPS: listener {listener} checks client certificates "
                            f"but has no ssl.truststore.location (PEM) or "
                            f"ssl.truststore.certificates to check the browsers' with")
    try:
        if "ssl.ca.location" in trust:
            ctx.load_verify_locations(cafile=trust["ssl.ca.location"])
        else:
            ctx.load_verify_locations(cadata=trust["ssl.ca.pem"])
    except (ssl.SSLError, OSError) as e:
        raise HeadraceError(f"console HTTPS: cannot use listener {listener}'s trust store: "
                            f"{getattr(e, 'reason', None) or e}") from None
    ctx.verify_mode = ssl.CERT_OPTIONAL


def https_context(values: Mapping[str, str]) -> ssl.SSLContext | None:
    """A server SSLContext from the broker's key store (``values`` as the
    core gets them: PKCS12 already turned into inline PEM by
    headrace.keystores.convert_stores), or None when it has none."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    prefix = load_own_certificate(ctx, values, "console HTTPS")
    if prefix is None:
        return None
    enabled = _scope_get(values, prefix, "ssl.enabled.protocols", "TLSv1.2,TLSv1.3")
    ctx.minimum_version = (ssl.TLSVersion.TLSv1_2 if "TLSv1.2" in enabled
                           else ssl.TLSVersion.TLSv1_3)
    _trust_client_certificates(ctx, values)
    return ctx


def load_own_certificate(ctx: ssl.SSLContext, values: Mapping[str, str],
                         what: str) -> str | None:
    """Loads the broker's own certificate and key (its key store: the
    broker-wide one, else the first SSL / SASL_SSL listener's) into
    ``ctx``; the scope it came from ("" or "listener.name.<l>."), or None
    when the broker has none in use. HeadraceError naming the setting (and
    ``what`` needed it) when it cannot be loaded."""
    from headrace.keystores import tls_in_use

    if not tls_in_use(values):  # a key store no listener uses is not read (as the core)
        return None
    protocols = listener_protocols(values)
    scopes = [""] + [f"listener.name.{n.lower()}." for n, p in protocols.items()
                     if p in ("SSL", "SASL_SSL")]
    for prefix in scopes:
        store = _key_store(values, prefix)
        if store is None:
            continue
        location, key, chain, password = store
        password = password or None
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
            raise HeadraceError(f"{what}: cannot use {where}: "
                                f"{getattr(e, 'reason', None) or e}") from None
        return prefix
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
    acting: Any = None              # headrace.console.acting.Acting of a certificate login


class ConsoleAuth:
    """The console's access mode, derived from the broker's settings
    (``values``) and, once it listens, its endpoints (``endpoints()``:
    ``broker.advertised_endpoints``, "NAME://host:port,...")."""

    def __init__(self, values: Mapping[str, str], endpoints: Callable[[], str],
                 clock: Callable[[], float] = time.monotonic,
                 authorize: Callable[[str, str, str, str, str], bool] | None = None):
        self._values = dict(values)
        self._endpoints = endpoints
        self._clock = clock
        self._authorize = authorize  # headrace._core.Broker.authorize
        protocols = listener_protocols(values)
        sasl = [n for n, p in protocols.items() if p in ("SASL_PLAINTEXT", "SASL_SSL")]
        # SASL_PLAINTEXT first: a loopback connection to this broker needs no TLS trust.
        sasl.sort(key=lambda n: protocols[n] != "SASL_PLAINTEXT")
        self.listener = sasl[0] if sasl else None
        self.protocol = protocols.get(self.listener) if self.listener else None
        self.password_login = self.listener is not None
        plain = [n for n, p in protocols.items() if p == "PLAINTEXT"]
        self.open_listener = plain[0] if plain else None
        self.https = https_context(values)
        # Browsers' certificates: only over HTTPS, and with the authorizer at hand.
        self.cert_listener = (client_auth_listener(values)
                              if self.https is not None and authorize is not None else None)
        self.login_required = self.password_login or self.cert_listener is not None
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
        return _trust_store(self._values, f"listener.name.{self.listener.lower()}.")

    def service_settings(self, listener: str | None = None) -> dict[str, str]:
        """librdkafka properties with which the console reads for a
        certificate login: the broker's own key store on ``listener`` (an
        SSL listener; default cert_listener), trusting that listener's trust
        store. Host names are not checked: the console connects to its own
        process's listener (address_of)."""
        listener = listener or self.cert_listener
        prefix = f"listener.name.{listener.lower()}."
        store = _key_store(self._values, prefix)
        if store is None:
            raise HeadraceError(f"listener {listener} has no key store")
        location, key, chain, password = store
        out = {"security.protocol": "SSL", "ssl.endpoint.identification.algorithm": "none",
               **_trust_store(self._values, prefix)}
        if location:
            out.update({"ssl.certificate.location": location, "ssl.key.location": location})
        else:
            out.update({"ssl.certificate.pem": chain, "ssl.key.pem": key})
        if password:
            out["ssl.key.password"] = password
        return out

    def service_address(self) -> str:
        return self.address_of(self.cert_listener)

    def service_login(self) -> tuple[str, dict[str, str]] | None:
        """(listener, librdkafka properties) with which the broker's own
        services (the schema registry's clients) reach this broker: its
        first PLAINTEXT listener; else its SASL listener with the broker's
        own credentials (broker_credentials); else an SSL listener with a
        key store, presenting the broker's own certificate as brokers do to
        each other. None when there is none of these."""
        if self.open_listener is not None:
            return self.open_listener, {}
        credentials = self.broker_credentials()
        if credentials is not None:
            return self.listener, credentials
        for name, protocol in listener_protocols(self._values).items():
            if protocol == "SSL" and _key_store(self._values,
                                                f"listener.name.{name.lower()}.") is not None:
                return name, self.service_settings(name)
        return None

    def broker_credentials(self) -> dict[str, str] | None:
        """librdkafka properties with which the broker's own services (the
        schema registry's clients) log in on the SASL listener: the username
        and password in the listener's JAAS config for
        ``sasl.mechanism.inter.broker.protocol``, else for the first enabled
        mechanism whose JAAS config has them (the credentials a broker uses
        as a client of other brokers, as in Kafka; Confluent's registry
        takes them as ``kafkastore.sasl.jaas.config``). None when no JAAS
        config of the listener carries them."""
        if self.listener is None:
            return None
        from headrace.client_settings import ClientSettingsError, from_java

        prefix = f"listener.name.{self.listener.lower()}."
        order = self.mechanisms()
        preferred = self._values.get("sasl.mechanism.inter.broker.protocol", "").upper()
        if preferred in order:
            order = [preferred] + [m for m in order if m != preferred]
        for mechanism in order:
            jaas = _scope_get(self._values, f"{prefix}{mechanism.lower()}.", "sasl.jaas.config")
            try:
                login = from_java({"sasl.jaas.config": jaas}) if jaas else {}
            except ClientSettingsError:
                continue
            if login.get("sasl.username") and "sasl.password" in login:
                return self.credentials(login["sasl.username"], login["sasl.password"], mechanism)
        return None

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
        self._add(token, session, now)
        return token, session

    def _add(self, key: str, session: Session, now: float) -> Session:
        """Adds ``session`` under ``key`` and returns it, or the session
        already there when another request added one first (``session`` is
        then dropped unused)."""
        evicted = []
        with self._lock:
            evicted += self._expire_locked(now)
            session = self._sessions.setdefault(key, session)
            while len(self._sessions) > MAX_SESSIONS:
                oldest = min(self._sessions, key=lambda t: self._sessions[t].used)
                evicted.append(self._sessions.pop(oldest))
        for s in evicted:
            self.on_close(s)
        return session

    def certificate_session(self, der: bytes | None, host: str) -> Session | None:
        """The session of a browser that presented the (verified)
        certificate ``der`` from IP ``host``: one per principal and host,
        made on first use, expiring as password sessions do; None without a
        certificate or certificate logins."""
        from headrace._core import certificate_principal
        from headrace.console.acting import Acting

        if not der or self.cert_listener is None:
            return None
        principal = certificate_principal(der)
        if not principal:
            return None
        key = f"certificate {principal} {host}"  # never a token (token_urlsafe has no space)
        found = self.session(key)
        if found is not None:
            return found
        now = self._clock()
        session = Session(principal, "certificate", self.service_settings(), now, now,
                          acting=Acting(principal, host, self._authorize))
        return self._add(key, session, now)

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
