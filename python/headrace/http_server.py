"""The broker's HTTP listener (``headrace.http.listen``, ``--http``): a small
route table on the standard library's ``ThreadingHTTPServer``.

It runs in the ``headrace broker`` process beside the C++ core: each request
is served on its own Python thread, and the metrics page is rendered by the
core with the GIL released (``Broker.metrics_text``), so the data path never
waits for Python or for a scrape. docs/metrics.md lists the endpoints;
docs/architecture.md says why the listener lives here.

More pages (a web console at ``/``) are added with :meth:`HttpServer.add_route`.
Requests it cannot serve get 400 (malformed), 404 (unknown path) or 405
(method not allowed, with ``Allow``); a handler that raises answers 500 and
the server keeps serving.
"""
from __future__ import annotations

import socket
import sys
import threading
from dataclasses import dataclass, field
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Callable, Iterable
from urllib.parse import parse_qs, urlsplit

from headrace.errors import HeadraceError

PROMETHEUS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
TEXT_CONTENT_TYPE = "text/plain; charset=utf-8"


@dataclass
class Request:
    """What a route handler sees of one request."""

    method: str
    path: str                      # without the query string
    query: dict[str, list[str]]
    headers: object                # http.client.HTTPMessage
    body: bytes = b""
    client: str = ""               # the peer's IP address
    # DER of the client certificate the TLS handshake verified (HTTPS with a
    # trust store for clients: headrace.console.auth), else None.
    peer_certificate: bytes | None = None


@dataclass
class Response:
    status: int
    body: bytes | str = b""
    content_type: str = TEXT_CONTENT_TYPE
    headers: dict[str, str] = field(default_factory=dict)


Handler = Callable[[Request], Response]


@dataclass
class _Route:
    handler: Handler
    methods: frozenset[str]
    prefix: bool


class HttpServer:
    """A route table served by a ThreadingHTTPServer on its own thread."""

    MAX_BODY_BYTES = 1 << 20

    def __init__(self, address: str, ssl_context=None):
        """``ssl_context``: an ssl.SSLContext (server side) to serve HTTPS
        with; each connection's handshake runs on its own request thread,
        under the handler's timeout."""
        self._address = address
        self.ssl_context = ssl_context
        self._routes: dict[str, _Route] = {}
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._on_stop: list[Callable[[], None]] = []

    def add_route(self, path: str, handler: Handler, methods: Iterable[str] = ("GET",),
                  prefix: bool = False) -> None:
        """Serves `path` (every path under it when `prefix`) with `handler`
        for `methods`; GET implies HEAD. The longest matching route wins."""
        allowed = {m.upper() for m in methods}
        if "GET" in allowed:
            allowed.add("HEAD")
        self._routes[path] = _Route(handler, frozenset(allowed), prefix)

    def on_stop(self, fn: Callable[[], None]) -> None:
        """Calls `fn` once in stop(), after the listener has stopped serving
        (e.g. to close the clients a page used)."""
        self._on_stop.append(fn)

    def find_route(self, path: str) -> _Route | None:
        route = self._routes.get(path)
        if route is not None:
            return route
        best = None
        for p, r in self._routes.items():
            if r.prefix and path.startswith(p) and (best is None or len(p) > len(best[0])):
                best = (p, r)
        return best[1] if best else None

    def start(self) -> "HttpServer":
        """Binds and starts serving. Raises HeadraceError with one line when
        the address is malformed or cannot be bound (e.g. in use)."""
        host, port = split_address(self._address)
        handler_class = type("BoundHandler", (_RequestHandler,), {"routes": self})
        server_class = _HttpServer6 if ":" in host else ThreadingHTTPServer
        if self.ssl_context is not None:
            server_class = type("TlsServer", (_TlsServer, server_class),
                                {"ssl_context": self.ssl_context})
        try:
            server = server_class((host, port), handler_class)
        except OSError as e:
            raise HeadraceError(f"cannot listen for HTTP on {self._address} "
                                f"(headrace.http.listen): {e.strerror or e}") from None
        server.daemon_threads = True
        self._server = server
        self._thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.2},
                                        name="hr-http", daemon=True)
        self._thread.start()
        return self

    @property
    def address(self) -> str:
        """``HOST:PORT`` as bound (the actual port when asked for port 0)."""
        if self._server is None:
            return self._address
        host, port = self._server.server_address[:2]
        return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"

    def stop(self) -> None:
        """Stops accepting and closes the socket. Idempotent."""
        server, self._server = self._server, None
        if server is not None:
            server.shutdown()
            server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None
        callbacks, self._on_stop = self._on_stop, []
        for fn in callbacks:
            fn()


class _HttpServer6(ThreadingHTTPServer):
    address_family = socket.AF_INET6


class _TlsServer:
    """Mixed in before a ThreadingHTTPServer: TLS on each accepted
    connection, handshaken on the connection's own thread (a slow or
    plaintext client never holds up accept); a failed handshake closes the
    connection."""

    ssl_context = None  # set on the subclass HttpServer.start makes

    def finish_request(self, request, client_address):
        import ssl

        request.settimeout(_RequestHandler.timeout)
        try:
            tls = self.ssl_context.wrap_socket(request, server_side=True)
        except (ssl.SSLError, OSError):
            request.close()
            return
        try:
            super().finish_request(tls, client_address)
        finally:
            try:
                tls.close()
            except OSError:
                pass


def _peer_certificate(sock) -> bytes | None:
    getpeercert = getattr(sock, "getpeercert", None)  # an ssl.SSLSocket
    try:
        return getpeercert(binary_form=True) if getpeercert is not None else None
    except ValueError:  # no handshake (cannot happen after wrap_socket)
        return None


def split_address(address: str) -> tuple[str, int]:
    """"HOST:PORT" or "[V6]:PORT" -> (host, port); HeadraceError otherwise."""
    host, sep, port = address.rpartition(":")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    if not sep or not host or not port.isdigit() or int(port) > 65535:
        raise HeadraceError(f"headrace.http.listen: must be HOST:PORT, got {address!r}")
    return host, int(port)


class _RequestHandler(BaseHTTPRequestHandler):
    """Dispatches every method through the route table (`routes`)."""

    routes: HttpServer  # set on the subclass HttpServer.start makes
    server_version = "headrace"
    protocol_version = "HTTP/1.1"
    timeout = 10  # a client that stalls mid-request loses its connection
    # TCP_NODELAY: headers and body go out as two writes; with Nagle's
    # algorithm the body waits for the client's delayed ACK (~40 ms) on
    # every keep-alive request (schema registry clients reuse connections).
    disable_nagle_algorithm = True
    # Errors the stdlib parser answers itself (400, 505, 431) as one text
    # line, always with a status line (never the bare HTTP/0.9 form).
    default_request_version = "HTTP/1.1"
    error_message_format = "%(code)d %(message)s\n"
    error_content_type = TEXT_CONTENT_TYPE

    def handle_one_request(self) -> None:
        try:
            self.raw_requestline = self.rfile.readline(65537)
            if not self.raw_requestline:
                self.close_connection = True
                return
            if len(self.raw_requestline) > 65536:
                self.requestline, self.request_version, self.command = "", "", ""
                self.send_error(HTTPStatus.BAD_REQUEST, "request line too long")
                return
            if not self.parse_request():  # answered 400 itself
                return
            self._dispatch()
            self.wfile.flush()
        except TimeoutError:
            self.close_connection = True

    def _dispatch(self) -> None:
        parts = urlsplit(self.path)
        route = self.routes.find_route(parts.path)
        if route is None:
            self._send(Response(HTTPStatus.NOT_FOUND, f"no such page: {parts.path}\n"))
            return
        if self.command not in route.methods:
            allow = ", ".join(sorted(route.methods))
            self._send(Response(HTTPStatus.METHOD_NOT_ALLOWED,
                                f"{self.command} not allowed here (allowed: {allow})\n",
                                headers={"Allow": allow}))
            return
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            length = -1
        if length < 0 or length > HttpServer.MAX_BODY_BYTES:
            self._send(Response(HTTPStatus.BAD_REQUEST, "bad Content-Length\n"))
            self.close_connection = True
            return
        body = self.rfile.read(length) if length else b""
        request = Request(self.command, parts.path, parse_qs(parts.query), self.headers, body,
                          str(self.client_address[0]) if self.client_address else "",
                          _peer_certificate(self.connection))
        try:
            response = route.handler(request)
        except Exception as e:  # noqa: BLE001 - one failed page must not stop the server
            print(f"headrace: http: {self.command} {parts.path} failed: {e!r}", file=sys.stderr,
                  flush=True)
            response = Response(HTTPStatus.INTERNAL_SERVER_ERROR, "internal error\n")
        self._send(response)

    def _send(self, response: Response) -> None:
        body = response.body.encode("utf-8") if isinstance(response.body, str) else response.body
        self.send_response(response.status)
        self.send_header("Content-Type", response.content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        for k, v in response.headers.items():
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def log_message(self, format: str, *args) -> None:  # noqa: A002 - stdlib signature
        pass  # scrapes every few seconds would flood the broker's log


def add_broker_routes(server: HttpServer, broker,
                      extra_readiness: Callable[[], str] | None = None) -> HttpServer:
    """/metrics, /healthz and /readyz of `broker` (a headrace._core.Broker).
    `extra_readiness` returns a further reason not to be ready ("" = none),
    e.g. the cluster membership."""

    def metrics(_req: Request) -> Response:
        text = broker.metrics_text()
        if not text:
            return Response(HTTPStatus.SERVICE_UNAVAILABLE,
                            "broker not serving (starting or stopping)\n")
        return Response(HTTPStatus.OK, text, PROMETHEUS_CONTENT_TYPE)

    def healthz(_req: Request) -> Response:
        return Response(HTTPStatus.OK, "ok\n")

    def readyz(_req: Request) -> Response:
        problem = broker.readiness_problem() or (extra_readiness() if extra_readiness else "")
        if problem:
            return Response(HTTPStatus.SERVICE_UNAVAILABLE, problem.splitlines()[0] + "\n")
        return Response(HTTPStatus.OK, "ready\n")

    server.add_route("/metrics", metrics)
    server.add_route("/healthz", healthz)
    server.add_route("/readyz", readyz)
    return server
