"""The ``headrace`` command line (the console script ``headrace``,
``python -m headrace`` and ``python -m headrace.cli``).

One module per command group, each adding its subparser
(``add_<group>_parser``) to the root parser :mod:`headrace.cli.app` builds:
broker, topic, produce, consume, group, config, txn, user, acl,
quota, log, cluster, registry, completion. The pieces they share sit beside them:
common (``--brokers``, client settings, the Admin), output (``--format``),
codec (delimiters, encodings), format (consume's output formats), offsets
(positions), probe (fail fast on an unreachable bootstrap or a failed login
or TLS handshake) and interrupt (Ctrl-C). They use the library modules of
:mod:`headrace`; nothing there imports the command line.
"""
from headrace.cli.app import build_parser, main

__all__ = ["build_parser", "main"]
