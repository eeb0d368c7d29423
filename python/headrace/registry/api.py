"""Confluent Schema Registry's REST API (v1) on the broker's HTTP listener
(docs/schema-registry.md lists the paths). Paths, JSON shapes and error
codes are Confluent's; answers are ``application/vnd.schemaregistry.v1+json``.

Reads answer from this broker's view of ``_schemas``. Lists, "latest",
config, mode and compatibility checks first catch up with the end of the
topic, so a write just made through any broker is seen; a schema by id or
an explicit version (which only a delete changes) answers from the view
and catches up only when it is missing.

Authentication is the console's (headrace.console.auth): when the broker
has a SASL listener, every request needs HTTP Basic credentials of one of
its SASL users (``basic.auth.user.info`` of confluent_kafka's
SchemaRegistryClient), checked by authenticating to that listener; a
success is remembered for AUTH_CACHE_S. Without one, the API is open, as
the console is. What the authenticated principal may do is the broker's
ACL authorizer's answer (headrace.registry.permissions).
"""
from __future__ import annotations

import base64
import binascii
import hashlib
import json
import logging
import threading
import time
from http import HTTPStatus
from urllib.parse import unquote

from headrace.errors import HeadraceError
from headrace.http_server import HttpServer, Request, Response
from headrace.registry import errors as E
from headrace.registry import forward as F
from headrace.registry import permissions as P
from headrace.registry import schema_types as T
from headrace.registry.service import Registry, schema_json

log = logging.getLogger("headrace.registry")

CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"
AUTH_CACHE_S = 60.0
ROOTS = ("/subjects", "/schemas", "/config", "/mode", "/compatibility")
METHODS = ("GET", "POST", "PUT", "DELETE")


def _json(doc, status: int = HTTPStatus.OK) -> Response:
    return Response(status, json.dumps(doc, ensure_ascii=False), CONTENT_TYPE)


def _flag(req: Request, name: str) -> bool:
    return (req.query.get(name) or ["false"])[-1].lower() == "true"


def _page(items: list, req: Request) -> list:
    """``offset`` / ``limit`` query parameters applied to a list answer."""
    try:
        offset = max(0, int((req.query.get("offset") or ["0"])[-1]))
        limit = int((req.query.get("limit") or ["-1"])[-1])
    except ValueError:
        return items
    items = items[offset:]
    return items if limit < 0 else items[:limit]


def _body(req: Request) -> dict:
    try:
        doc = json.loads(req.body or b"{}")
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise E.RegistryError(400, 400, f"The request body is not JSON: {e}") from None
    if not isinstance(doc, dict):
        raise E.RegistryError(400, 400, "The request body must be a JSON object")
    return doc


def _schema_id(text: str) -> int:
    if not text.isdigit():
        raise E.schema_not_found(f"Schema {text} not found")
    return int(text)


class RegistryApi:
    """The routes of one broker's registry. ``auth``: a ConsoleAuth (or
    None: open); ``node_id``: this broker's id (the writer is compared
    with it); ``book``: the writers' URLs (headrace.registry.forward)."""

    def __init__(self, registry: Registry, node_id: int, auth=None, book=None,
                 forward_context=None, unavailable: str = "",
                 permissions: P.Permissions | None = None):
        self.registry = registry
        self.perm = permissions or P.Permissions(None)
        self.node_id = node_id
        self.auth = auth
        self.book = book
        self.forward_context = forward_context
        self.unavailable = unavailable  # why the registry cannot serve ("" = it can)
        self._verified: dict[tuple[str, str], float] = {}
        self._lock = threading.Lock()

    def register(self, server: HttpServer) -> None:
        for root in ROOTS:
            server.add_route(root, self.serve, methods=METHODS)
            server.add_route(root + "/", self.serve, methods=METHODS, prefix=True)

    # -- the request -------------------------------------------------------------------
    def serve(self, req: Request) -> Response:
        try:
            denied, caller = self._authenticate(req)
            if denied is not None:
                return denied
            if self.unavailable:
                raise E.RegistryError(503, E.STORE_ERROR, self.unavailable)
            self.registry.store.start()  # the reader runs from the first request on
            return self._dispatch(req, caller)
        except E.RegistryError as e:
            return _json(e.body(), e.status)
        except Exception as e:  # noqa: BLE001 - Confluent's 50001 in JSON, never a bare 500
            log.exception("schema registry: %s %s failed", req.method, req.path)
            return _json({"error_code": E.STORE_ERROR, "message": f"Internal error: {e!r}"},
                         HTTPStatus.INTERNAL_SERVER_ERROR)

    def _authenticate(self, req: Request) -> tuple[Response | None, P.Caller]:
        """(a refusal or None, who is asking)."""
        anonymous = P.Caller(P.ANONYMOUS, req.client)
        if self.auth is None or not self.auth.login_required:
            return None, anonymous
        if not self.auth.password_login:  # the console logs in by client certificate only
            session = self.auth.certificate_session(req.peer_certificate, req.client)
            if session is None:
                return self._unauthorized("a client certificate the broker's listener "
                                          f"{self.auth.cert_listener} trusts is required"), \
                    anonymous
            forwarded_for = req.headers.get(F.PRINCIPAL_HEADER) if req.headers else None
            if not forwarded_for:
                return None, P.Caller(session.user, req.client)
            # A write another broker forwarded for its certificate login: taken
            # from a principal allowed ClusterAction on the cluster (Kafka's
            # rule for requests forwarded in an Envelope, KIP-590).
            if not self.perm.may_forward(P.Caller(session.user, req.client)):
                return _json({"error_code": E.FORBIDDEN,
                              "message": f"{session.user} may not forward requests "
                                         "(ClusterAction on the cluster)"},
                             HTTPStatus.FORBIDDEN), anonymous
            return None, P.Caller(forwarded_for, req.client)
        from headrace.console.auth import LoginRefused

        header = req.headers.get("Authorization") or ""
        scheme, _, token = header.partition(" ")
        try:
            user, sep, password = base64.b64decode(token.strip(), validate=True) \
                .decode("utf-8").partition(":")
        except (binascii.Error, UnicodeDecodeError):
            sep = ""
        if scheme.lower() != "basic" or not sep:
            return self._unauthorized("Basic credentials of a SASL user are required"), anonymous
        caller = P.Caller(f"User:{user}", req.client)
        key = (user, hashlib.sha256(password.encode()).hexdigest())
        now = time.monotonic()
        with self._lock:
            if self._verified.get(key, 0) > now:
                return None, caller
        try:
            self.auth.verify(user, password)
        except LoginRefused as e:
            return self._unauthorized(str(e)), anonymous
        except HeadraceError as e:
            return _json({"error_code": 50001, "message": str(e)}, 503), anonymous
        with self._lock:
            self._verified = {k: t for k, t in self._verified.items() if t > now}
            self._verified[key] = now + AUTH_CACHE_S
        return None, caller

    @staticmethod
    def _unauthorized(message: str) -> Response:
        r = _json({"error_code": E.UNAUTHORIZED, "message": f"Unauthorized: {message}"},
                  HTTPStatus.UNAUTHORIZED)
        r.headers["WWW-Authenticate"] = 'Basic realm="headrace schema registry"'
        return r

    def _write(self, req: Request, caller: P.Caller, local) -> Response:
        """``local()`` (-> JSON doc) run on the writer, forwarded there if
        this broker is not it: with the caller's Basic credentials, or for a
        certificate login with the caller's principal, which the writer
        takes from a broker it trusts (_authenticate)."""
        certified = self.auth is not None and self.auth.login_required and \
            not self.auth.password_login
        return F.on_writer(req, lambda: _json(local()), node_id=self.node_id,
                           store=self.registry.store, book=self.book,
                           context=self.forward_context,
                           principal=caller.principal if certified else None)

    def _dispatch(self, req: Request, caller: P.Caller) -> Response:
        parts = [unquote(p) for p in req.path.strip("/").split("/")]
        root, rest, m = parts[0], parts[1:], req.method
        handler = {"subjects": self._subjects, "schemas": self._schemas,
                   "config": self._config, "mode": self._mode,
                   "compatibility": self._compatibility}[root]
        answer = handler(req, m, rest, caller)
        if answer is None:
            raise E.RegistryError(404 if m in ("GET", "HEAD") else 405,
                                  404 if m in ("GET", "HEAD") else 405,
                                  f"{m} {req.path} is not part of the registry's API")
        return answer

    # -- /subjects ---------------------------------------------------------------------
    def _subjects(self, req: Request, m: str, rest: list[str],
                  caller: P.Caller) -> Response | None:
        reg = self.registry
        deleted = _flag(req, "deleted")
        if not rest and m in ("GET", "HEAD"):
            reg.store.catch_up()
            prefix = (req.query.get("subjectPrefix") or [""])[-1]
            listed = reg.subjects(prefix, deleted, _flag(req, "deletedOnly"))
            return _json(_page([s for s in listed if self.perm.may(caller, P.READ, s)], req))
        subject = rest[0]
        # Changes: DELETE of the subject or a version, POST of a new version.
        change = m == "DELETE" or (m == "POST" and len(rest) == 2)
        self.perm.require(caller, P.WRITE if change else P.READ, subject)
        if len(rest) == 1:
            if m == "POST":
                body = _body(req)
                rec = reg.fresh(lambda: reg.lookup(subject, body, deleted))
                return _json(schema_json(rec, subject=rec.subject, version=rec.version,
                                         id=rec.id))
            if m == "DELETE":
                permanent = _flag(req, "permanent")
                return self._write(req, caller, lambda: reg.delete_subject(subject, permanent))
            return None
        if rest[1] != "versions":
            return None
        if len(rest) == 2:
            if m in ("GET", "HEAD"):
                reg.store.catch_up()
                recs = reg.versions(subject, deleted)
                return _json(_page([r.version for r in recs], req))
            if m == "POST":
                body = _body(req)
                return self._write(req, caller, lambda: reg.register(subject, body))
            return None
        version = rest[2]
        if len(rest) == 3 and m == "DELETE":
            permanent = _flag(req, "permanent")
            return self._write(req, caller, lambda: reg.delete_version(subject, version, permanent))
        if m not in ("GET", "HEAD") or len(rest) > 4:
            return None
        if version in ("latest", "-1"):
            reg.store.catch_up()
        rec = reg.fresh(lambda: reg.version(subject, version, deleted))
        if len(rest) == 3:
            return _json(schema_json(rec, subject=rec.subject, version=rec.version, id=rec.id,
                                     **self._format(req, rec)))
        if rest[3] == "schema":
            return Response(HTTPStatus.OK, rec.schema, CONTENT_TYPE)
        if rest[3] == "referencedby":
            return _json(_page(reg.view.referenced_by(subject, rec.version), req))
        return None

    # -- /schemas ----------------------------------------------------------------------
    def _schemas(self, req: Request, m: str, rest: list[str],
                 caller: P.Caller) -> Response | None:
        reg = self.registry
        if m not in ("GET", "HEAD"):
            return None
        if rest == ["types"]:
            return _json(list(T.SCHEMA_TYPES))
        if len(rest) < 2 or rest[0] != "ids" or len(rest) > 3:
            return None
        schema_id = _schema_id(rest[1])
        ident = reg.fresh(lambda: reg.schema(schema_id))
        # READ on at least one subject the schema is registered under.
        every = {u.subject for u in reg.view.uses_of(schema_id, True)}
        readable = {s for s in every if self.perm.may(caller, P.READ, s)}
        if every and not readable:
            raise E.RegistryError(403, E.FORBIDDEN, f"User {caller.principal} may read no "
                                                    f"subject of schema {schema_id}")
        if len(rest) == 2:
            return _json(schema_json(ident, **self._format(req, ident)))
        if rest[2] == "schema":
            return Response(HTTPStatus.OK, ident.schema, CONTENT_TYPE)
        reg.store.catch_up()
        uses = reg.view.uses_of(schema_id, _flag(req, "deleted"))
        wanted = (req.query.get("subject") or [""])[-1]
        uses = [u for u in uses if (not wanted or u.subject == wanted) and
                (u.subject in readable or not every)]
        if rest[2] == "subjects":
            return _json(_page(sorted({u.subject for u in uses}), req))
        if rest[2] == "versions":
            return _json(_page([{"subject": u.subject, "version": u.version} for u in uses],
                               req))
        return None

    def _format(self, req: Request, rec) -> dict:
        """``?format=serialized``: a Protobuf schema as its serialized
        descriptor (what confluent_kafka's deserializers ask for)."""
        if (req.query.get("format") or [""])[-1] == "serialized" and \
                rec.schema_type == "PROTOBUF":
            return {"schema": self.registry.serialized(rec)}
        return {}

    # -- /config and /mode -------------------------------------------------------------
    def _config(self, req: Request, m: str, rest: list[str],
                caller: P.Caller) -> Response | None:
        reg = self.registry
        if len(rest) > 1:
            return None
        subject = rest[0] if rest else None
        self.perm.require(caller, P.READ if m in ("GET", "HEAD") else P.WRITE, subject)
        if m in ("GET", "HEAD"):
            reg.store.catch_up()
            level = reg.config(subject, _flag(req, "defaultToGlobal") or subject is None)
            return _json({"compatibilityLevel": level})
        if m == "PUT":
            body = _body(req)
            level = body.get("compatibility", body.get("compatibilityLevel"))
            return self._write(req, caller, lambda: {"compatibility": reg.set_config(subject, level)})
        if m == "DELETE":
            return self._write(req, caller, lambda: {"compatibilityLevel": reg.delete_config(subject)})
        return None

    def _mode(self, req: Request, m: str, rest: list[str],
              caller: P.Caller) -> Response | None:
        reg = self.registry
        if len(rest) > 1:
            return None
        subject = rest[0] if rest else None
        self.perm.require(caller, P.READ if m in ("GET", "HEAD") else P.WRITE, subject)
        if m in ("GET", "HEAD"):
            reg.store.catch_up()
            return _json({"mode": reg.mode(subject, _flag(req, "defaultToGlobal")
                                           or subject is None)})
        if m == "PUT":
            mode = _body(req).get("mode")
            return self._write(req, caller, lambda: {"mode": reg.set_mode(subject, mode)})
        if m == "DELETE" and subject is not None:
            return self._write(req, caller, lambda: {"mode": reg.delete_mode(subject)})
        return None

    # -- /compatibility ----------------------------------------------------------------
    def _compatibility(self, req: Request, m: str, rest: list[str],
                       caller: P.Caller) -> Response | None:
        reg = self.registry
        if m != "POST" or len(rest) not in (3, 4) or rest[0] != "subjects" \
                or rest[2] != "versions":
            return None
        subject = rest[1]
        self.perm.require(caller, P.WRITE, subject)  # Confluent's SUBJECT_WRITE
        body = _body(req)
        reg.store.catch_up()
        if len(rest) == 4:
            messages = reg.fresh(lambda: reg.check(subject, body, rest[3]))
        else:
            messages = reg.check(subject, body)
        doc = {"is_compatible": not messages}
        if _flag(req, "verbose"):
            doc["messages"] = messages
        return _json(doc)
