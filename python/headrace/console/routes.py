"""The web console's pages and JSON endpoints on the broker's HTTP listener
(headrace.http_server; docs/console.md lists them).

Pages are rendered on the server by Jinja2 with autoescaping on, so every
name, key, value and header a client wrote reaches the browser as text,
never as markup; the only script is the package's own static/console.js
(the live charts), and the Content-Security-Policy header allows no other.
Every page has a JSON twin under /api/ with the same document.

REQUIRES of a route handler (http_server's contract): it runs on a request
thread of its own, returns a Response and may raise (500). Errors map to
404 (NotFound), 400 (BadRequest) and 503 (any other HeadraceError: the
cluster did not answer).

With a login (headrace.console.auth: the broker has a SASL listener, or
an SSL listener that checks client certificates) every page and JSON route
is wrapped by Console._guarded: without a live session a page answers 303
to /login (403 when only a certificate logs in), JSON 401 (403); with one,
the handler gets that session's Clients (an Admin and a Consumer with the
user's credentials, or, for a certificate, the console's service
connection cut by the authorizer to that principal: headrace.console.acting).
"""
from __future__ import annotations

import json
import threading
import time
from datetime import datetime, timezone
from http import HTTPStatus
from pathlib import Path
from typing import Callable
from urllib.parse import parse_qs, quote, unquote

from headrace.console.auth import (COOKIE, ConsoleAuth, LoginRefused, Session, local_bootstrap,
                                   session_token)
from headrace.console.browser import DEFAULT_RECORDS, MAX_RECORDS, MessageBrowser
from headrace.console.data import BadRequest, ClusterView, Forbidden, NotFound
from headrace.console.metrics_history import MetricsHistory
from headrace.errors import HeadraceError
from headrace.http_server import HttpServer, Request, Response

HERE = Path(__file__).parent
HTML = "text/html; charset=utf-8"
JSON = "application/json"
SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'self'; script-src 'self'; "
                               "style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
                               "frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}
DISPLAY_CHARS = 2000  # a key, value or header longer than this is cut on the page
# Content types of the files under static/ (not the system's mime.types:
# the same answer on every machine).
STATIC_TYPES = {".js": "text/javascript; charset=utf-8", ".css": "text/css; charset=utf-8",
                ".txt": "text/plain; charset=utf-8", ".md": "text/markdown; charset=utf-8"}


class Clients:
    """What one viewer reads the cluster with: the console's own (no login)
    or a logged-in user's (their credentials)."""

    def __init__(self, view: ClusterView, browser: MessageBrowser, user: str | None = None):
        self.view, self.browser, self.user = view, browser, user

    def close(self) -> None:
        self.browser.close()
        self.view.close()


class Console:
    """The console of one broker process: its pages, their data sources and
    the chart history. ``node_id`` marks this broker in the broker table.
    ``auth`` (headrace.console.auth) decides whether a login is needed and
    as whom the pages read; ``zookeeper()`` says why this broker has no
    ZooKeeper session ("" when it has one or is not in a cluster)."""

    def __init__(self, bootstrap: Callable[[], str], metrics_text: Callable[[], str],
                 node_id: int, auth: ConsoleAuth | None = None,
                 zookeeper: Callable[[], str] | None = None,
                 registry_url: Callable[[], str | None] | None = None):
        """``registry_url()``: the URL of this broker's schema registry for
        the message browser's decoding (None: values are not decoded)."""
        from jinja2 import Environment, FileSystemLoader, StrictUndefined

        from headrace.cli.topic import format_bytes

        self.node_id = node_id
        self.auth = auth
        self._zookeeper = zookeeper
        self._registry_url = registry_url
        view = ClusterView(bootstrap, zookeeper=zookeeper)
        self._open = Clients(view, MessageBrowser(view, bootstrap,
                                                  registry=lambda: self._registry_conf({})))
        if auth is not None:
            auth.on_close = lambda s: s.clients.close() if s.clients is not None else None
        self.history = MetricsHistory(metrics_text)
        self._clients_lock = threading.Lock()
        self.env = Environment(loader=FileSystemLoader(HERE / "templates"), autoescape=True,
                               undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True)
        self.env.filters.update(
            bytes=lambda n: "?" if n is None else format_bytes(n),
            utc=_utc, q=lambda s: quote(str(s), safe=""), clip=_clip, dash=_dash,
            unknown=_unknown)
        self._static = {p.relative_to(HERE / "static").as_posix(): p
                        for p in (HERE / "static").rglob("*") if p.is_file()}

    @property
    def view(self) -> ClusterView:
        """The console's own view (no login); tests and tools."""
        return self._open.view

    @property
    def login_required(self) -> bool:
        return self.auth is not None and self.auth.login_required

    def auth_password_login(self) -> bool:
        return self.auth is not None and self.auth.password_login

    def register(self, server: HttpServer) -> None:
        for path, handler in (("/", self.overview_page), ("/topics", self.topics_page),
                              ("/groups", self.groups_page), ("/api/cluster", self.cluster_api),
                              ("/api/topics", self.topics_api), ("/api/groups", self.groups_api),
                              ("/share-groups", self.share_groups_page),
                              ("/api/share-groups", self.share_groups_api),
                              ("/api/metrics", self.metrics_api)):
            server.add_route(path, self._guarded(handler, path.startswith("/api/")))
        for path, handler in (("/topics/", self.topic_page), ("/groups/", self.group_page),
                              ("/api/topics/", self.topic_api), ("/api/groups/", self.group_api),
                              ("/share-groups/", self.share_group_page),
                              ("/api/share-groups/", self.share_group_api)):
            server.add_route(path, self._guarded(handler, path.startswith("/api/")),
                             prefix=True)
        server.add_route("/static/", self.static, prefix=True)
        server.add_route("/login", self.login, methods=("GET", "POST"))
        server.add_route("/logout", self.logout, methods=("POST",))

    def close(self) -> None:
        """Closes the cached Consumers and drops the Admins (the console's
        and every session's). REQUIRES: no request is being served (the
        listener has stopped)."""
        self._open.close()
        if self.auth is not None:
            self.auth.close()

    # -- who is asking -----------------------------------------------------------
    def _guarded(self, handler, as_json: bool):
        """`handler(req, clients)` for a viewer allowed in: the console's own
        clients without login; with login, the session's, else a redirect
        to /login (pages) or 401 (JSON)."""
        def serve(req: Request) -> Response:
            if not self.login_required:
                return handler(req, self._open)
            session = self.auth.session(session_token(req.headers)) or \
                self.auth.certificate_session(req.peer_certificate, req.client)
            if session is None and not self.auth.password_login:
                message = ("this console logs in with a client certificate: present one "
                           "signed by a CA the broker's listener "
                           f"{self.auth.cert_listener} trusts")
                if as_json:
                    return _json({"error": message}, HTTPStatus.FORBIDDEN)
                return self._page("error.html", http_status=HTTPStatus.FORBIDDEN,
                                  status=int(HTTPStatus.FORBIDDEN), message=message, viewer=None)
            if session is None:
                if as_json:
                    return _json({"error": "not logged in: POST /login first"},
                                 HTTPStatus.UNAUTHORIZED)
                target = req.path + ("?" + _query_string(req.query) if req.query else "")
                return Response(HTTPStatus.SEE_OTHER, "log in first\n",
                                headers={"Location": "/login?next=" + quote(target, safe=""),
                                         **SECURITY_HEADERS})
            return handler(req, self._session_clients(session))
        return serve

    def _session_clients(self, session: Session) -> Clients:
        with self._clients_lock:  # one set per session, whichever request comes first
            return self._session_clients_locked(session)

    def _session_clients_locked(self, session: Session) -> Clients:
        if session.clients is None:
            bootstrap = (self.auth.service_address if session.acting is not None
                         else self.auth.login_address)
            view = ClusterView(bootstrap, settings=session.settings, zookeeper=self._zookeeper,
                               acting=session.acting)
            settings = session.settings
            session.clients = Clients(view, MessageBrowser(
                view, bootstrap, settings, registry=lambda: self._registry_conf(settings)),
                session.user)
        return session.clients

    def _registry_conf(self, settings: dict) -> dict | None:
        """SchemaRegistryClient settings for this broker's registry as the
        user of ``settings``: their SASL name and password as Basic
        credentials, or for a certificate login the broker's own certificate
        file (the session's settings; an inline key store cannot be handed
        to the client: its pages then say why values are not decoded).
        Over HTTPS the client is this process talking to its own listener
        on a loopback address, which no certificate names: the server's
        certificate is not checked (``ssl.ca.location`` False). None
        without a registry URL."""
        url = self._registry_url() if self._registry_url is not None else None
        if not url:
            return None
        conf = {"url": url}
        if settings.get("sasl.username"):
            conf["basic.auth.user.info"] = (f"{settings['sasl.username']}:"
                                            f"{settings.get('sasl.password', '')}")
        if url.startswith("https:"):
            conf["ssl.ca.location"] = False
            if settings.get("ssl.certificate.location"):
                conf["ssl.certificate.location"] = settings["ssl.certificate.location"]
                conf["ssl.key.location"] = settings.get("ssl.key.location") or \
                    settings["ssl.certificate.location"]
                if settings.get("ssl.key.password"):
                    conf["ssl.key.password"] = settings["ssl.key.password"]
        return conf

    def login(self, req: Request) -> Response:
        """GET: the login form (with login off, a redirect to /). POST: checks
        user/password with the broker; a session cookie and a redirect to
        `next`, or the form again with 401 and the reason."""
        if not self.auth_password_login():
            return Response(HTTPStatus.SEE_OTHER, "no password login\n",
                            headers={"Location": "/"})
        form = req.query
        if req.method == "POST":
            form = parse_qs(req.body.decode("utf-8", "replace"), keep_blank_values=True)
        next_path = _safe_next((form.get("next") or ["/"])[0])
        if req.method != "POST":
            return self._page("login.html", user_name="", message=None, next_path=next_path,
                              viewer=None)
        user = (form.get("user") or [""])[0]
        password = (form.get("password") or [""])[0]
        try:
            token, _ = self.auth.login(user, password)
        except LoginRefused as e:
            return self._page("login.html", HTTPStatus.UNAUTHORIZED, user_name=user,
                              message=str(e), next_path=next_path, viewer=None)
        except HeadraceError as e:
            return self._page("login.html", HTTPStatus.SERVICE_UNAVAILABLE, user_name=user,
                              message=str(e), next_path=next_path, viewer=None)
        cookie = f"{COOKIE}={token}; Path=/; HttpOnly; SameSite=Strict"
        if self.auth.https is not None:
            cookie += "; Secure"
        return Response(HTTPStatus.SEE_OTHER, "logged in\n",
                        headers={"Location": next_path, "Set-Cookie": cookie})

    def logout(self, req: Request) -> Response:
        if self.auth is not None:
            self.auth.logout(session_token(req.headers))
        return Response(HTTPStatus.SEE_OTHER, "logged out\n",
                        headers={"Location": "/login" if self.login_required else "/",
                                 "Set-Cookie": f"{COOKIE}=; Path=/; Max-Age=0; HttpOnly; "
                                               f"SameSite=Strict"})

    # -- pages -----------------------------------------------------------------
    def overview_page(self, req: Request, c: Clients) -> Response:
        # The charts need only this broker's metrics: the page is shown
        # (with the error) when the cluster does not answer.
        try:
            cluster, error = c.view.cluster(), None
        except HeadraceError as e:
            cluster, error = None, str(e)
        return self._page("overview.html", viewer=c.user, cluster=cluster, error=error,
                          zookeeper_error=(self._zookeeper() if self._zookeeper else "") or None)

    def topics_page(self, req: Request, c: Clients) -> Response:
        return self._guard(lambda: self._page("topics.html", viewer=c.user, **c.view.topics()),
                           viewer=c.user)

    def topic_page(self, req: Request, c: Clients) -> Response:
        def render():
            name, partition = _topic_path(req.path, "/topics/")
            if partition is None:
                return self._page("topic.html", viewer=c.user, topic=c.view.topic(name))
            form = _browse_form(req)
            page = c.browser.page(name, partition, form["from"], form["count"],
                                  form["encoding"])
            return self._page("messages.html", viewer=c.user, page=page, form=form,
                              max_records=MAX_RECORDS)
        return self._guard(render, viewer=c.user)

    def groups_page(self, req: Request, c: Clients) -> Response:
        return self._guard(lambda: self._page("groups.html", viewer=c.user, **c.view.groups()),
                           viewer=c.user)

    def group_page(self, req: Request, c: Clients) -> Response:
        return self._guard(lambda: self._page(
            "group.html", viewer=c.user,
            group=c.view.group(_one_segment(req.path, "/groups/"))), viewer=c.user)

    def share_groups_page(self, req: Request, c: Clients) -> Response:
        return self._guard(lambda: self._page("share_groups.html", viewer=c.user,
                                              **c.view.share_groups()), viewer=c.user)

    def share_group_page(self, req: Request, c: Clients) -> Response:
        return self._guard(lambda: self._page(
            "share_group.html", viewer=c.user,
            group=c.view.share_group(_one_segment(req.path, "/share-groups/"))), viewer=c.user)

    # -- JSON ------------------------------------------------------------------
    def cluster_api(self, req: Request, c: Clients) -> Response:
        return self._guard(lambda: _json(c.view.cluster()), as_json=True)

    def topics_api(self, req: Request, c: Clients) -> Response:
        return self._guard(lambda: _json(c.view.topics()), as_json=True)

    def topic_api(self, req: Request, c: Clients) -> Response:
        def answer():
            name, partition = _topic_path(req.path, "/api/topics/")
            if partition is None:
                return _json(c.view.topic(name))
            form = _browse_form(req)
            return _json(c.browser.page(name, partition, form["from"], form["count"],
                                        form["encoding"]))
        return self._guard(answer, as_json=True)

    def groups_api(self, req: Request, c: Clients) -> Response:
        return self._guard(lambda: _json(c.view.groups()), as_json=True)

    def group_api(self, req: Request, c: Clients) -> Response:
        return self._guard(lambda: _json(c.view.group(_one_segment(req.path, "/api/groups/"))),
                           as_json=True)

    def share_groups_api(self, req: Request, c: Clients) -> Response:
        return self._guard(lambda: _json(c.view.share_groups()), as_json=True)

    def share_group_api(self, req: Request, c: Clients) -> Response:
        return self._guard(lambda: _json(c.view.share_group(
            _one_segment(req.path, "/api/share-groups/"))), as_json=True)

    def metrics_api(self, req: Request, c: Clients) -> Response:
        doc = self.history.series()
        doc["node_id"] = self.node_id
        return _json(doc)

    def static(self, req: Request) -> Response:
        path = self._static.get(req.path[len("/static/"):])
        if path is None:
            return Response(HTTPStatus.NOT_FOUND, f"no such file: {req.path}\n")
        kind = STATIC_TYPES.get(path.suffix, "application/octet-stream")
        return Response(HTTPStatus.OK, path.read_bytes(), kind,
                        {"X-Content-Type-Options": "nosniff"})

    # -- helpers ---------------------------------------------------------------
    def _page(self, template: str, http_status: int = HTTPStatus.OK, **context) -> Response:
        context.setdefault("viewer", None)
        html = self.env.get_template(template).render(
            node_id=self.node_id, login_required=self.login_required, **context)
        return Response(http_status, html, HTML, dict(SECURITY_HEADERS))

    def _guard(self, render: Callable[[], Response], as_json: bool = False,
               viewer: str | None = None) -> Response:
        """render(), with NotFound/BadRequest/Forbidden/HeadraceError as
        404/400/403/503."""
        try:
            return render()
        except NotFound as e:
            status, message = HTTPStatus.NOT_FOUND, str(e)
        except BadRequest as e:
            status, message = HTTPStatus.BAD_REQUEST, str(e)
        except Forbidden as e:
            status, message = HTTPStatus.FORBIDDEN, str(e)
        except HeadraceError as e:
            status, message = HTTPStatus.SERVICE_UNAVAILABLE, str(e)
        if as_json:
            return _json({"error": message}, status)
        return self._page("error.html", http_status=status, status=int(status), message=message,
                          viewer=viewer)


def add_console_routes(server: HttpServer, broker, auth: ConsoleAuth | None = None,
                       zookeeper: Callable[[], str] | None = None) -> Console:
    """Adds the console of `broker` (a headrace._core.Broker) to `server`.
    ``auth``: the console's access (headrace.console.auth; None: no login,
    the broker's first listener); ``zookeeper``: see Console."""
    def bootstrap() -> str:
        if auth is not None and auth.open_listener is not None:
            return auth.address_of(auth.open_listener)
        return local_bootstrap(broker.listen_address)

    def registry_url() -> str | None:
        """This listener's URL for the browser's decoding (https when it
        serves TLS; see Console._registry_conf for the trust)."""
        host, _, port = server.address.rpartition(":")
        if host in ("0.0.0.0", "[::]", "::", ""):
            host = "127.0.0.1"
        scheme = "https" if server.ssl_context is not None else "http"
        return f"{scheme}://{host}:{port}"

    console = Console(bootstrap, broker.metrics_text, broker.node_id, auth, zookeeper,
                      registry_url)
    console.register(server)
    server.on_stop(console.close)  # before the broker stops: its clients leave first
    return console


def _json(doc, status: int = HTTPStatus.OK) -> Response:
    return Response(status, json.dumps(doc, ensure_ascii=False), JSON)


def _one_segment(path: str, prefix: str) -> str:
    """The percent-decoded rest of `path` after `prefix` (a group id may
    hold any character, '/' included, written %2F)."""
    rest = path[len(prefix):]
    if not rest or "/" in rest:
        raise NotFound(f"no such page: {path}")
    return unquote(rest)


def _topic_path(path: str, prefix: str) -> tuple[str, int | None]:
    """TOPIC or TOPIC/PARTITION after `prefix` (topic names never hold '/')."""
    parts = path[len(prefix):].split("/")
    if not parts[0] or len(parts) > 2:
        raise NotFound(f"no such page: {path}")
    if len(parts) == 1:
        return unquote(parts[0]), None
    if not parts[1].isdigit():
        raise NotFound(f"no such page: {path}")
    return unquote(parts[0]), int(parts[1])


def _browse_form(req: Request) -> dict:
    """The message browser's query: from (a position, default earliest),
    time (ISO, UTC; wins over from when given), count, encoding."""
    def arg(name: str, default: str) -> str:
        values = req.query.get(name)
        return values[0].strip() if values and values[0].strip() else default

    start = arg("from", "earliest")
    at = arg("time", "")
    if at:
        try:
            when = datetime.fromisoformat(at.replace("Z", "+00:00"))
        except ValueError:
            raise BadRequest(f"time must be an ISO date and time, e.g. "
                             f"2026-11-25T10:00:00, got {at!r}") from None
        if when.tzinfo is None:
            when = when.replace(tzinfo=timezone.utc)
        start = f"@{int(when.timestamp() * 1000)}"
    count = arg("count", str(DEFAULT_RECORDS))
    if not count.isdigit():
        raise BadRequest(f"count must be a number, got {count!r}")
    return {"from": start, "time": at, "count": int(count),
            "encoding": arg("encoding", "text")}


def _utc(ms) -> str:
    """Epoch milliseconds -> ISO 8601 UTC with milliseconds."""
    if ms is None or ms < 0:
        return "-"
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ms / 1000)) + f".{ms % 1000:03d}Z"


def _clip(text, limit: int = DISPLAY_CHARS) -> str:
    if text is None:
        return ""
    return text if len(text) <= limit else f"{text[:limit]}… ({len(text) - limit} more)"


def _dash(value) -> str:
    return "-" if value is None else str(value)


def _unknown(value) -> str:
    """A figure the cluster did not give (a broker down): "?"."""
    return "?" if value is None else str(value)


def _safe_next(path: str) -> str:
    """Where to go after logging in: a path of this console only."""
    if not path.startswith("/") or path.startswith("//") or "\\" in path or \
            path.startswith("/login") or any(ord(ch) < 0x21 or ord(ch) == 0x7f for ch in path):
        return "/"  # control characters: header injection, or "/\t/host" read as "//host"
    return path


def _query_string(query: dict[str, list[str]]) -> str:
    from urllib.parse import urlencode

    return urlencode([(k, v) for k, vs in query.items() for v in vs])
