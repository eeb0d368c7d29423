"""``headrace produce TOPIC``: one record per input line.

The summary of what was acknowledged goes to stderr; a progress bar with a
rate is drawn on stderr only when stderr is a terminal, so piped or
redirected output never holds control characters.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from collections import Counter
from typing import BinaryIO, Iterator

from confluent_kafka import KafkaException, Producer

from headrace.admin import client_config, describe_error
from headrace.cli_common import CliError, add_client_flags, admin_for, parse_pairs

COMPRESSIONS = ("none", "gzip", "snappy", "lz4", "zstd")


def add_produce_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("produce", help="produce stdin or file lines as records",
                       description="Produce one record per line of stdin (or --file).")
    p.add_argument("topic")
    p.add_argument("--file", "-f", metavar="PATH", help="read lines from PATH instead of stdin")
    p.add_argument("--key-separator", "-K", metavar="SEP",
                   help="split each line at the first SEP into key and value")
    p.add_argument("--header", "-H", action="append", metavar="KEY=VALUE",
                   help="header added to every record (repeatable)")
    p.add_argument("--partition", "-p", type=int, metavar="N",
                   help="write to partition N (default: key hash / sticky)")
    p.add_argument("--compression", "-z", choices=COMPRESSIONS, default="none")
    p.add_argument("--acks", choices=("0", "1", "all"), default="all")
    add_client_flags(p)
    p.set_defaults(func=_produce)


def _lines(stream: BinaryIO) -> Iterator[bytes]:
    for line in stream:
        if line.endswith(b"\n"):
            line = line[:-1]
            if line.endswith(b"\r"):
                line = line[:-1]
        yield line


class _Progress:
    """A one-line progress bar on stderr, only when stderr is a terminal."""

    def __init__(self, total_bytes: int | None):
        self.enabled = sys.stderr.isatty()
        self.total = total_bytes
        self.start = time.monotonic()
        self.last = 0.0

    def update(self, records: int, done_bytes: int, force: bool = False) -> None:
        now = time.monotonic()
        if not self.enabled or (not force and now - self.last < 0.2):
            return
        self.last = now
        rate = records / max(now - self.start, 1e-6)
        if self.total:
            frac = min(done_bytes / self.total, 1.0)
            bar = "#" * int(frac * 30)
            text = f"[{bar:<30}] {frac:4.0%} {records} records {rate:,.0f}/s"
        else:
            text = f"{records} records {rate:,.0f}/s"
        sys.stderr.write("\r" + text + "\x1b[K")
        sys.stderr.flush()

    def finish(self) -> None:
        if self.enabled:
            sys.stderr.write("\r\x1b[K")
            sys.stderr.flush()


def _produce(args) -> int:
    headers = list(parse_pairs(args.header, "--header").items())
    sep = args.key_separator.encode() if args.key_separator else None
    if sep == b"":
        raise CliError("--key-separator must not be empty")
    md = admin_for(args).topic_metadata(args.topic)
    if args.partition is not None and args.partition not in md.partitions:
        raise CliError(f"topic {args.topic} has no partition {args.partition} "
                       f"(partitions 0..{len(md.partitions) - 1})")
    producer = Producer(client_config(args.brokers, **{
        "acks": args.acks, "compression.type": args.compression,
        "message.timeout.ms": int(args.timeout * 1000), "linger.ms": 5}))
    if args.file:
        try:
            stream = open(args.file, "rb")
        except OSError as e:
            raise CliError(f"cannot read {args.file}: {e.strerror}") from None
        total = os.fstat(stream.fileno()).st_size
    else:
        stream, total = sys.stdin.buffer, None
    with stream:
        acked, failed, sent = _send_all(producer, args, stream, sep, headers, total)
    return _report(args.topic, acked, failed, sent)


def _send_all(producer, args, stream, sep, headers, total):
    acked: Counter = Counter()
    failed: list[str] = []

    def on_delivery(err, msg):
        if err is not None:
            failed.append(describe_error(KafkaException(err)))
        else:
            acked[msg.partition()] += 1

    progress = _Progress(total)
    sent = done_bytes = 0
    extra = {} if args.partition is None else {"partition": args.partition}
    for line in _lines(stream):
        key, value = None, line
        if sep is not None and sep in line:
            key, value = line.split(sep, 1)
        while True:
            try:
                producer.produce(args.topic, value=value, key=key, headers=headers or None,
                                 on_delivery=on_delivery, **extra)
                break
            except BufferError:
                producer.poll(0.1)
        sent += 1
        done_bytes += len(line) + 1
        producer.poll(0)
        progress.update(sum(acked.values()), done_bytes)
    remaining = producer.flush(args.timeout)
    progress.update(sum(acked.values()), done_bytes, force=True)
    progress.finish()
    if remaining:
        failed.append(f"{remaining} records not acknowledged within {args.timeout:g}s")
    return acked, failed, sent


def _report(topic: str, acked: Counter, failed: list[str], sent: int) -> int:
    n = sum(acked.values())
    parts = ", ".join(f"{p}:{c}" for p, c in sorted(acked.items()))
    summary = f"headrace: produced {n} of {sent} records to {topic}"
    if parts:
        summary += f" (partition:records {parts})"
    if failed:
        raise CliError(f"{sent - n} of {sent} records failed ({n} acknowledged): {failed[0]}")
    print(summary, file=sys.stderr)
    return 0
