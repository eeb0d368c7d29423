"""Who writes, and how a write reaches it.

The writer is the broker leading ``_schemas`` partition 0 (the cluster's
metadata says which). A write that reaches another broker is forwarded to
the writer's HTTP listener, as Confluent's registry forwards to its leader;
the answer goes back unchanged. Each broker of a cluster publishes the URL
of its HTTP listener in ZooKeeper at ``/headrace/schema_registry/urls/<id>``
(persistent; rewritten at every start) so the others can find it.

While the writer's broker is down and the controller has not yet moved the
leadership (the ZooKeeper session timeout), forwarding retries until
FORWARD_TIMEOUT_S and then answers 50003; a request that was already
forwarded is never forwarded again (no loops).
"""
from __future__ import annotations

import logging
import ssl
import threading
import time
import urllib.error
import urllib.request
from typing import Callable

from headrace.cluster.zk_layout import REGISTRY_URLS as URLS_PATH
from headrace.http_server import Request, Response
from headrace.registry import errors as E

log = logging.getLogger("headrace.registry")

FORWARDED_HEADER = "X-Headrace-Forwarded-By"
# The principal of a certificate login a broker forwards a write for: the
# writer takes it from a broker whose own certificate it trusts and whose
# principal may ClusterAction (api.RegistryApi._authenticate).
PRINCIPAL_HEADER = "X-Headrace-Forwarded-Principal"
FORWARD_TIMEOUT_S = 30.0
PASSED_HEADERS = ("Content-Type", "Accept", "Authorization")


class UrlBook:
    """The HTTP URLs of the cluster's brokers in ZooKeeper. ``zk()``: the
    member's kazoo client once joined (None before, and on a single node)."""

    def __init__(self, zk: Callable[[], object], node_id: int, my_url: Callable[[], str]):
        self._zk, self._node_id, self._my_url = zk, node_id, my_url
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> "UrlBook":
        self._thread = threading.Thread(target=self._publish_loop, name="hr-registry-url",
                                        daemon=True)
        self._thread.start()
        return self

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def _publish_loop(self) -> None:
        """Publishes this broker's URL once it has a ZooKeeper session."""
        while not self._stop.wait(0.5):
            zk, url = self._zk(), self._my_url()
            if zk is None or not url or not getattr(zk, "connected", False):
                continue
            path = f"{URLS_PATH}/{self._node_id}"
            try:
                zk.ensure_path(URLS_PATH)
                if zk.exists(path):
                    zk.set(path, url.encode())
                else:
                    zk.create(path, url.encode())
                log.info("schema registry: published %s at %s", url, path)
                return
            except Exception as e:  # noqa: BLE001 - ZooKeeper away: try again
                log.debug("schema registry: cannot publish the URL yet: %s", e)

    def url_of(self, node_id: int) -> str | None:
        zk = self._zk()
        if zk is None:
            return None
        try:
            data, _ = zk.get(f"{URLS_PATH}/{node_id}")
        except Exception:  # noqa: BLE001 - no node or no session: unknown
            return None
        return data.decode() if data else None


def forward(url: str, req: Request, node_id: int, context: ssl.SSLContext | None,
            timeout: float, principal: str | None = None) -> Response:
    """``req`` sent to ``url`` (the writer's listener), for ``principal``
    when it is a certificate login's; its answer, whatever the status.
    OSError (URLError) when the writer cannot be reached."""
    target = url.rstrip("/") + req.path
    if req.query:
        from urllib.parse import urlencode
        target += "?" + urlencode(req.query, doseq=True)
    headers = {h: req.headers.get(h) for h in PASSED_HEADERS if req.headers.get(h)}
    headers[FORWARDED_HEADER] = str(node_id)
    if principal:
        headers[PRINCIPAL_HEADER] = principal
    r = urllib.request.Request(target, data=req.body if req.method in ("POST", "PUT") else None,
                               method=req.method, headers=headers)
    try:
        with urllib.request.urlopen(r, timeout=timeout, context=context) as resp:
            return Response(resp.status, resp.read(),
                            resp.headers.get("Content-Type") or "application/json")
    except urllib.error.HTTPError as e:  # an answer: pass it on
        return Response(e.code, e.read(), e.headers.get("Content-Type") or "application/json")


def _not_writer(answer: Response) -> bool:
    """Whether ``answer`` says the broker asked is not the writer (50003):
    the leadership moved meanwhile, so ask again."""
    import json

    if answer.status != 500:
        return False
    try:
        return json.loads(answer.body).get("error_code") == E.FORWARDING_ERROR
    except (ValueError, AttributeError):
        return False


def client_context(values) -> ssl.SSLContext:
    """Trust for forwarding over HTTPS: the broker's PEM trust store when it
    has one, else the system's CAs, and the broker's PEM key store as its
    client certificate. Host names are not checked (brokers reach each
    other by the addresses they advertise), certificates are."""
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    # The broker's own certificate: a writer whose console logs in by
    # certificate authenticates the forwarding broker with it.
    from headrace.console.auth import load_own_certificate
    load_own_certificate(ctx, values, "schema registry forwarding")
    location = values.get("ssl.truststore.location", "")
    inline = values.get("ssl.truststore.certificates", "")
    if location and values.get("ssl.truststore.type", "PEM").upper() == "PEM":
        ctx.load_verify_locations(cafile=location)
    elif inline:
        ctx.load_verify_locations(cadata=inline)
    return ctx


def on_writer(req: Request, local: Callable[[], Response], *, node_id: int, store, book,
              context, deadline_s: float = FORWARD_TIMEOUT_S,
              principal: str | None = None) -> Response:
    """``local()`` when this broker is the writer, else ``req`` forwarded to
    the writer (creating ``_schemas`` first if it does not exist), for
    ``principal`` (a certificate login's, see forward)."""
    forwarded = req.headers.get(FORWARDED_HEADER) if req.headers is not None else None
    deadline = time.monotonic() + deadline_s
    reason = ""
    while True:
        leader = store.leader()
        if leader is None and not forwarded:
            store.ensure_topic()
            leader = store.leader()
        if leader == node_id:
            return local()
        if forwarded:
            raise E.RegistryError(500, E.FORWARDING_ERROR,
                                  f"broker {node_id} is not the registry's writer (broker "
                                  f"{leader} leads _schemas); forwarded by {forwarded}")
        url = book.url_of(leader) if leader is not None else None
        if leader is None:
            reason = "no broker leads _schemas partition 0 (no writer)"
        elif url is None:
            reason = f"the writer (leader of _schemas, broker {leader}) has no known URL"
        else:
            try:
                answer = forward(url, req, node_id, context,
                                 max(1.0, deadline - time.monotonic()), principal)
            except OSError as e:
                reason = f"cannot reach the writer, broker {leader} at {url}: {e}"
            else:
                if not _not_writer(answer):
                    return answer
                reason = f"broker {leader} is no longer the writer"
        if time.monotonic() >= deadline:
            raise E.RegistryError(500, E.FORWARDING_ERROR, reason)
        time.sleep(0.5)
