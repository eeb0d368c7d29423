"""A Confluent-compatible Schema Registry built into the broker
(docs/schema-registry.md).

- records.py      the ``_schemas`` topic's records (Confluent's layout)
- view.py         the state those records make, applied in log order
- store.py        the reader thread, the writer's producer, catching up
- schema_types.py Avro / JSON Schema / Protobuf parsing and compatibility
- json_compat.py  Confluent's JSON Schema compatibility rules
- proto_compat.py Confluent's Protobuf compatibility rules (descriptors)
- decode.py       framed records as JSON (consume --decode, the console)
- service.py      the registry's operations (reads; writes on the writer)
- forward.py      who the writer is and forwarding writes to it
- api.py          the REST API on the broker's HTTP listener

:func:`add_registry_routes` mounts it on a headrace.http_server.HttpServer.
"""
from __future__ import annotations

from typing import Callable, Mapping

from headrace.registry.api import RegistryApi

__all__ = ["RegistryApi", "add_registry_routes"]


def add_registry_routes(server, broker, auth, zk: Callable[[], object],
                        values: Mapping[str, str]) -> RegistryApi:
    """Serves the registry of ``broker`` (a headrace._core.Broker) on
    ``server``, with the console's ``auth`` (headrace.console.auth);
    ``zk()``: the cluster member's ZooKeeper client once joined (None on a
    single node); ``values``: the broker's settings. Its clients connect to
    the broker's first PLAINTEXT listener, else its SASL listener with the
    broker's own credentials, else an SSL listener with the broker's own
    certificate (ConsoleAuth.service_login); without any the API answers
    503 saying so."""
    from headrace.console.auth import local_bootstrap
    from headrace.registry import forward as F
    from headrace.registry.service import Registry
    from headrace.registry.store import Store

    # The registry's own clients (Store): ConsoleAuth.service_login.
    unavailable = ""
    login = auth.service_login() if auth is not None else None
    if auth is not None and login is None:
        unavailable = ("the schema registry's own Kafka clients need a PLAINTEXT listener on "
                       "this broker, the broker's own username and password in its SASL "
                       "listener's sasl.jaas.config, or an SSL listener with a key store "
                       "(docs/schema-registry.md)")

    def bootstrap() -> str:
        if unavailable:
            return ""
        if login is not None:
            return auth.address_of(login[0])
        return local_bootstrap(broker.listen_address)

    def my_url() -> str:
        host, _, port = server.address.rpartition(":")
        if host in ("0.0.0.0", "[::]", ""):
            host = broker.advertised_address.rpartition(":")[0]
        scheme = "https" if server.ssl_context is not None else "http"
        return f"{scheme}://{host}:{port}"

    def registered_brokers() -> int:
        client = zk()
        if client is None:
            return 0
        from headrace.cluster.zk_layout import BROKER_IDS

        try:
            return len(client.get_children(BROKER_IDS))
        except Exception:  # noqa: BLE001 - no session: the metadata's count
            return 0

    store = Store(bootstrap, login[1] if login else None,  # started by the first request
                  registered_brokers=registered_brokers)
    book = F.UrlBook(zk, broker.node_id, my_url).start()
    context = F.client_context(values) if server.ssl_context is not None else None
    from headrace.registry.permissions import Permissions

    api = RegistryApi(Registry(store), broker.node_id, auth, book, context, unavailable,
                      Permissions(getattr(broker, "authorize", None)))
    api.register(server)

    def close() -> None:
        book.close()
        store.close()

    server.on_stop(close)
    return api
