"""headrace's web console, served at ``/`` by the broker's HTTP listener
(``headrace broker --http``): brokers, topics, consumer groups, live charts
of this broker's throughput and latency, and a message browser.
docs/console.md describes the pages and where their data comes from.

:func:`add_console_routes` adds it to a :class:`headrace.http_server.HttpServer`.
"""
from headrace.console.routes import Console, add_console_routes

__all__ = ["Console", "add_console_routes"]
