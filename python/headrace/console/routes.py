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
"""
from __future__ import annotations

import json
import time
from datetime import datetime, timezone
from http import HTTPStatus
from pathlib import Path
from typing import Callable
from urllib.parse import quote, unquote

from headrace.console.browser import DEFAULT_RECORDS, MAX_RECORDS, MessageBrowser
from headrace.console.data import BadRequest, ClusterView, NotFound
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


def local_bootstrap(listen_address: str) -> str:
    """The broker's own Kafka address to connect to: its first listener,
    with a wildcard host replaced by loopback; "" before it listens
    (port 0 not yet bound)."""
    host, _, port = listen_address.rpartition(":")
    if not port or port == "0":
        return ""
    if host in ("", "0.0.0.0"):
        host = "127.0.0.1"
    elif host in ("::", "[::]"):
        host = "[::1]"
    return f"{host}:{port}"


class Console:
    """The console of one broker process: its pages, their data sources and
    the chart history. ``node_id`` marks this broker in the broker table."""

    def __init__(self, bootstrap: Callable[[], str], metrics_text: Callable[[], str],
                 node_id: int):
        from jinja2 import Environment, FileSystemLoader, StrictUndefined

        from headrace.cli.topic import format_bytes

        self.node_id = node_id
        self.view = ClusterView(bootstrap)
        self.browser = MessageBrowser(self.view, bootstrap)
        self.history = MetricsHistory(metrics_text)
        self.env = Environment(loader=FileSystemLoader(HERE / "templates"), autoescape=True,
                               undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True)
        self.env.filters.update(
            bytes=lambda n: "?" if n is None else format_bytes(n),
            utc=_utc, q=lambda s: quote(str(s), safe=""), clip=_clip, dash=_dash)
        self._static = {p.relative_to(HERE / "static").as_posix(): p
                        for p in (HERE / "static").rglob("*") if p.is_file()}

    def register(self, server: HttpServer) -> None:
        for path, handler in (("/", self.overview_page), ("/topics", self.topics_page),
                              ("/groups", self.groups_page), ("/api/cluster", self.cluster_api),
                              ("/api/topics", self.topics_api), ("/api/groups", self.groups_api),
                              ("/api/metrics", self.metrics_api)):
            server.add_route(path, handler)
        for path, handler in (("/topics/", self.topic_page), ("/groups/", self.group_page),
                              ("/api/topics/", self.topic_api), ("/api/groups/", self.group_api),
                              ("/static/", self.static)):
            server.add_route(path, handler, prefix=True)

    def close(self) -> None:
        """Closes the cached Consumer and drops the Admin. REQUIRES: no
        request is being served (the listener has stopped)."""
        self.browser.close()
        self.view.close()

    # -- pages -----------------------------------------------------------------
    def overview_page(self, req: Request) -> Response:
        # The charts need only this broker's metrics: the page is shown
        # (with the error) when the cluster does not answer.
        try:
            cluster, error = self.view.cluster(), None
        except HeadraceError as e:
            cluster, error = None, str(e)
        return self._page("overview.html", cluster=cluster, error=error)

    def topics_page(self, req: Request) -> Response:
        return self._guard(lambda: self._page("topics.html", **self.view.topics()))

    def topic_page(self, req: Request) -> Response:
        def render():
            name, partition = _topic_path(req.path, "/topics/")
            if partition is None:
                return self._page("topic.html", topic=self.view.topic(name))
            form = _browse_form(req)
            page = self.browser.page(name, partition, form["from"], form["count"],
                                     form["encoding"])
            return self._page("messages.html", page=page, form=form, max_records=MAX_RECORDS)
        return self._guard(render)

    def groups_page(self, req: Request) -> Response:
        return self._guard(lambda: self._page("groups.html", **self.view.groups()))

    def group_page(self, req: Request) -> Response:
        return self._guard(lambda: self._page(
            "group.html", group=self.view.group(_one_segment(req.path, "/groups/"))))

    # -- JSON ------------------------------------------------------------------
    def cluster_api(self, req: Request) -> Response:
        return self._guard(lambda: _json(self.view.cluster()), as_json=True)

    def topics_api(self, req: Request) -> Response:
        return self._guard(lambda: _json(self.view.topics()), as_json=True)

    def topic_api(self, req: Request) -> Response:
        def answer():
            name, partition = _topic_path(req.path, "/api/topics/")
            if partition is None:
                return _json(self.view.topic(name))
            form = _browse_form(req)
            return _json(self.browser.page(name, partition, form["from"], form["count"],
                                           form["encoding"]))
        return self._guard(answer, as_json=True)

    def groups_api(self, req: Request) -> Response:
        return self._guard(lambda: _json(self.view.groups()), as_json=True)

    def group_api(self, req: Request) -> Response:
        return self._guard(lambda: _json(self.view.group(_one_segment(req.path, "/api/groups/"))),
                           as_json=True)

    def metrics_api(self, req: Request) -> Response:
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
        html = self.env.get_template(template).render(node_id=self.node_id, **context)
        return Response(http_status, html, HTML, dict(SECURITY_HEADERS))

    def _guard(self, render: Callable[[], Response], as_json: bool = False) -> Response:
        """render(), with NotFound/BadRequest/HeadraceError as 404/400/503."""
        try:
            return render()
        except NotFound as e:
            status, message = HTTPStatus.NOT_FOUND, str(e)
        except BadRequest as e:
            status, message = HTTPStatus.BAD_REQUEST, str(e)
        except HeadraceError as e:
            status, message = HTTPStatus.SERVICE_UNAVAILABLE, str(e)
        if as_json:
            return _json({"error": message}, status)
        return self._page("error.html", http_status=status, status=int(status), message=message)


def add_console_routes(server: HttpServer, broker) -> Console:
    """Adds the console of `broker` (a headrace._core.Broker) to `server`."""
    console = Console(lambda: local_bootstrap(broker.listen_address), broker.metrics_text,
                      broker.node_id)
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
