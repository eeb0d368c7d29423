"""Kafka's `kafka-topics.sh` and `kafka-acls.sh`, the options librdkafka's
test suite passes them (it finds the scripts through KAFKA_PATH), carried
out with headrace's own CLI against the cluster. Anything else is refused
with exit status 2, so a test that needs more fails loudly.

    kafka_tools.py topics --bootstrap-server B (--create|--delete|--alter) --topic T
                          [--partitions N] [--replication-factor R] [--config K=V ...]
    kafka_tools.py acls --bootstrap-server B --add
                        (--allow-principal P|--deny-principal P) [--operation OP]
                        [--allow-host H|--deny-host H] --topic T
"""
from __future__ import annotations

import argparse
import subprocess
import sys


def _headrace(*args: str) -> int:
    return subprocess.run([sys.executable, "-m", "headrace.cli", *args]).returncode


def topics(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="kafka-topics.sh")
    ap.add_argument("--bootstrap-server", required=True)
    action = ap.add_mutually_exclusive_group(required=True)
    for a in ("--create", "--delete", "--alter"):
        action.add_argument(a, action="store_true")
    ap.add_argument("--topic", required=True)
    ap.add_argument("--partitions", type=int)
    ap.add_argument("--replication-factor", type=int)
    ap.add_argument("--config", action="append", default=[])
    a = ap.parse_args(argv)
    brokers = ["--brokers", a.bootstrap_server]
    if a.create:
        cmd = ["topic", "create", a.topic, "--partitions", str(a.partitions or 1)]
        if a.replication_factor:
            cmd += ["--replication-factor", str(a.replication_factor)]
        for c in a.config:
            cmd += ["--config", c]
        return _headrace(*cmd, *brokers)
    if a.delete:
        return _headrace("topic", "delete", a.topic, *brokers)
    if a.partitions is None or a.config:
        ap.error("--alter: only --partitions is supported here")
    return _headrace("topic", "add-partitions", a.topic, "--total", str(a.partitions), *brokers)


def acls(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="kafka-acls.sh")
    ap.add_argument("--bootstrap-server", required=True)
    ap.add_argument("--add", action="store_true", required=True)
    ap.add_argument("--allow-principal", action="append", default=[])
    ap.add_argument("--deny-principal", action="append", default=[])
    ap.add_argument("--operation", action="append", default=[])
    ap.add_argument("--allow-host", action="append", default=[])
    ap.add_argument("--deny-host", action="append", default=[])
    ap.add_argument("--topic", action="append", required=True)
    a = ap.parse_args(argv)
    if bool(a.allow_principal) == bool(a.deny_principal):
        ap.error("give either --allow-principal or --deny-principal")
    cmd = ["acl", "create"]
    for t in a.topic:
        cmd += ["--topic", t]
    for p in a.allow_principal:
        cmd += ["--allow-principal", p]
    for p in a.deny_principal:
        cmd += ["--deny-principal", p]
    for op in a.operation:
        cmd += ["--operation", op]
    for h in a.allow_host + a.deny_host:
        cmd += ["--host", h]
    return _headrace(*cmd, "--brokers", a.bootstrap_server)


if __name__ == "__main__":
    tool = {"topics": topics, "acls": acls}[sys.argv[1]]
    sys.exit(tool(sys.argv[2:]))
