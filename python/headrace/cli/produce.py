"""``headrace produce TOPIC``: one record per delimited piece of stdin (or
``--file``), or one record holding a whole file (``--value-file``).

The topic need not exist: the producer asks for it with auto-creation
allowed, and the broker decides (a broker that refuses is one error line).
Values are bytes: ``-D`` picks the record delimiter (NUL for values that may
hold newlines), ``--encoding base64|hex`` reads keys and values encoded, and
``-Z``/``--tombstone`` send null values (tombstones).

The summary of what was acknowledged goes to stderr; a progress bar with a
rate is drawn on stderr only when stderr is a terminal, so piped or
redirected output never holds control characters.

Two paths, one librdkafka (the copy confluent_kafka ships): plain values
(no key, header, encoding or null) go through headrace._core.LineProducer,
one call per chunk of records; everything else through confluent_kafka's
Producer, one call per record (HEADRACE_CLI_PRODUCER=python forces it).
"""
from __future__ import annotations

import argparse
import contextlib
import os
import sys
import time

from headrace.cli import interrupt
from headrace.cli.codec import ENCODINGS, decoder, parse_delimiter, split_records
from headrace.cli.common import (CliError, add_client_flags, check_reachable, client_settings,
                                  parse_pairs)

COMPRESSIONS = ("none", "gzip", "snappy", "lz4", "zstd")


def add_produce_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("produce", help="produce stdin or file lines as records",
                       description="Produce one record per line (or -D delimited piece) of "
                                   "stdin or --file, or one record from --value-file.")
    p.add_argument("topic")
    src = p.add_mutually_exclusive_group()
    src.add_argument("--file", "-f", metavar="PATH", help="read records from PATH, not stdin")
    src.add_argument("--value-file", metavar="PATH",
                     help="produce ONE record whose value is the whole file, byte for byte")
    p.add_argument("--delimiter", "-D", default="\\n", metavar="DELIM",
                   help="record delimiter (default \\n; escapes \\n \\t \\0 \\xHH; '' = NUL)")
    p.add_argument("--key-separator", "--key-delimiter", "-K", dest="key_separator",
                   metavar="SEP", help="split each record at the first SEP into key and value")
    p.add_argument("--key", "-k", metavar="KEY", help="the key of every record")
    p.add_argument("--null-empty", "-Z", action="store_true",
                   help="send an empty value as null (a tombstone), as kcat -Z")
    p.add_argument("--tombstone", action="store_true",
                   help="every value is null; each record's text (before -K SEP if given) "
                        "is its key")
    p.add_argument("--encoding", choices=ENCODINGS, default="text",
                   help="keys and values in the input are text (as is), base64 or hex")
    p.add_argument("--header", "-H", action="append", metavar="KEY=VALUE",
                   help="header added to every record (repeatable)")
    p.add_argument("--partition", "-p", type=int, metavar="N",
                   help="write to partition N (default: key hash / sticky)")
    p.add_argument("--compression", "-z", choices=COMPRESSIONS, default="none")
    p.add_argument("--acks", choices=("0", "1", "all"), default="all")
    add_client_flags(p)
    p.set_defaults(func=_produce)


class _Progress:
    """A one-line progress bar on stderr, only when stderr is a terminal."""

    def __init__(self, total_bytes: int | None):
        self.enabled = sys.stderr.isatty()
        self.total = total_bytes
        self.start = time.monotonic()
        self.last = 0.0

    def update(self, records: int, done_bytes: int, force: bool = False) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if not force and now - self.last < 0.2:
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


def _conf(args) -> dict:
    """The producer's librdkafka properties (both paths)."""
    from headrace.client_settings import KAFKA_PRODUCER_DEFAULTS

    conf = {**KAFKA_PRODUCER_DEFAULTS, "acks": args.acks, "compression.type": args.compression,
            "message.timeout.ms": int(args.timeout * 1000), "linger.ms": 5,
            "batch.num.messages": 100000, "batch.size": 1 << 20,
            "queue.buffering.max.messages": 1_000_000, "queue.buffering.max.kbytes": 1 << 20,
            "delivery.report.only.error": True}
    conf.update(client_settings(args))  # -X, --command-config, HEADRACE_* (headrace.cli.common)
    return conf


def _producer(args, on_delivery):
    from confluent_kafka import Producer

    from headrace.admin import client_config

    try:
        return Producer(client_config(args.brokers, on_delivery=on_delivery, **_conf(args)))
    except Exception as e:  # noqa: BLE001 - a bad -X property: one line
        raise CliError(f"producer configuration: {e}") from None


def _line_producer(args):
    """headrace._core.LineProducer on the librdkafka confluent_kafka loaded
    (so both paths run the same client library), or None where it cannot
    load (then the confluent_kafka path serves)."""
    import confluent_kafka  # noqa: F401 - maps its librdkafka into the process

    from headrace import _core
    from headrace.errors import InvalidArgumentError, UnsupportedError

    # client_config's settings that are not Python callables.
    conf = {"bootstrap.servers": args.brokers, "log.connection.close": "false",
            "enable.sparse.connections": "false"}
    for key, value in _conf(args).items():
        conf[key] = str(value).lower() if isinstance(value, bool) else str(value)
    try:
        return _core.LineProducer(conf, args.topic)
    except InvalidArgumentError as e:
        raise CliError(f"producer configuration: {e}") from None
    except UnsupportedError:
        return None


def _check_topic(args, err, partitions: list[int] | None) -> None:
    """Checks the topic's metadata, asked for with auto-creation allowed:
    the broker created it or says why not (one line). ``err``: the topic's
    KafkaError or None; ``partitions``: its partition ids (None or empty if
    the broker has not listed it yet)."""
    from confluent_kafka import KafkaError, KafkaException

    from headrace.admin import describe_error

    if err is not None and err.code() not in (KafkaError.LEADER_NOT_AVAILABLE,):
        raise CliError(f"produce to {args.topic}: the broker refused the topic: "
                       f"{describe_error(KafkaException(err))}")
    if args.partition is not None and partitions and args.partition not in partitions:
        raise CliError(f"topic {args.topic} has no partition {args.partition} "
                       f"(partitions 0..{len(partitions) - 1})")


def _describe(producer, args) -> list[int] | None:
    """The topic's partition ids through a confluent_kafka Producer (checked)."""
    from confluent_kafka import KafkaException

    from headrace.admin import describe_error

    try:
        md = producer.list_topics(args.topic, timeout=args.timeout).topics.get(args.topic)
    except KafkaException as e:
        raise CliError(f"produce to {args.topic}: {describe_error(e)}") from None
    partitions = None if md is None else sorted(md.partitions)
    _check_topic(args, None if md is None else md.error, partitions)
    return partitions


def _describe_native(lp, args) -> list[int]:
    """The topic's partition ids through a LineProducer (checked)."""
    from confluent_kafka import KafkaError, KafkaException

    from headrace.admin import describe_error

    code, text, partitions = lp.describe(args.timeout)
    err = KafkaError(code, text) if code else None
    if code < 0:  # client-side: the request itself failed (timeout, transport)
        raise CliError(f"produce to {args.topic}: {describe_error(KafkaException(err))}")
    _check_topic(args, err, partitions)
    return partitions


def _produce(args) -> int:
    headers = list(parse_pairs(args.header, "--header").items()) or None
    sep = None
    if args.key_separator is not None:
        sep = parse_delimiter(args.key_separator, "--key-separator") \
            if args.key_separator else None
        if sep is None:
            raise CliError("--key-separator must not be empty")
    delim = parse_delimiter(args.delimiter, "--delimiter")
    client_settings(args)  # a bad setting is reported before the probe
    check_reachable(args)
    lp = _line_producer(args) if _bulk_applies(args, sep, headers) else None
    if args.value_file:
        stream, total = _open(args.value_file)
        with stream:
            value = stream.read()
        stream, batches = contextlib.nullcontext(), iter([[value]])
    else:
        stream, total = _open(args.file) if args.file else (sys.stdin.buffer, None)
        batches = split_records(stream, delim, strip_cr=delim == b"\n")
    if lp is not None:
        partitions = _describe_native(lp, args)
        with stream:
            sent, remaining = _send_bulk(lp, args, batches, total)
        failed = lp.failed
        errors = [_failure_text(*f) for f in lp.failures]
    else:
        deliveries = _Deliveries()
        producer = _producer(args, deliveries.on_delivery)
        partitions = _describe(producer, args)
        with stream:
            sent, remaining = _send_all(producer, args, batches, sep, headers, total, deliveries)
        failed, errors = deliveries.failed, deliveries.errors
    if remaining:
        errors.append(f"{remaining} records not acknowledged within {args.timeout:g}s")
    return _report(args, partitions, sent, remaining, failed, errors)


def _bulk_applies(args, sep, headers) -> bool:
    """The bulk path takes plain values: no key, header, encoding or null
    value. HEADRACE_CLI_PRODUCER=python forces the per-record path."""
    return (os.environ.get("HEADRACE_CLI_PRODUCER") != "python" and not args.value_file and
            sep is None and args.key is None and headers is None and
            args.encoding == "text" and not args.tombstone and not args.null_empty)


def _open(path: str):
    try:
        stream = open(path, "rb")
    except OSError as e:
        raise CliError(f"cannot read {path}: {e.strerror}") from None
    return stream, os.fstat(stream.fileno()).st_size


def _records(batch: list[bytes], args, sep: bytes | None):
    """(key, value) of each input record, per the -K/-k/-Z/--tombstone/--encoding flags."""
    dec = decoder(args.encoding)
    fixed_key = None if args.key is None else args.key.encode()
    for rec in batch:
        key = fixed_key
        value: bytes | None = rec
        if sep is not None and sep in rec:
            key, value = rec.split(sep, 1)
        if dec is not None:
            key = None if key is None else dec(key)
            value = dec(value)
        if args.tombstone:
            if key is None:
                key = value
            value = None
        elif args.null_empty and not value:
            value = None
        yield key, value


class _Deliveries:
    """Counts what the broker acknowledged. librdkafka reports only failed
    records (delivery.report.only.error: a report per record costs more
    than producing it), so acknowledged = sent - failed - still queued."""

    def __init__(self):
        self.failed = 0
        self.errors: list[str] = []

    def on_delivery(self, err, msg) -> None:
        self.failed += 1
        if len(self.errors) < 3:
            from confluent_kafka import KafkaException

            from headrace.admin import describe_error
            self.errors.append(describe_error(KafkaException(err)))


def _send_all(producer, args, batches, sep, headers, total,
              deliveries: _Deliveries) -> tuple[int, int]:
    """Produces every record; returns how many were handed to the producer.
    REQUIRES: the producer's on_delivery is ``deliveries.on_delivery``."""
    progress = _Progress(total)
    sent = done_bytes = 0
    produce, poll, topic = producer.produce, producer.poll, args.topic
    partition = -1 if args.partition is None else args.partition
    simple = sep is None and args.key is None and args.encoding == "text" and \
        not args.tombstone and not args.null_empty
    for batch in batches:
        if simple and headers is None:  # plain values: one C call per record
            for i, value in enumerate(batch):
                try:
                    produce(topic, value, None, partition)
                except BufferError:
                    if not _retry(producer, topic, value, None, partition, None):
                        batch = batch[:i]
                        break
        else:
            for i, (key, value) in enumerate(_records(batch, args, sep)):
                try:
                    produce(topic, value, key, partition, headers=headers)
                except BufferError:
                    if not _retry(producer, topic, value, key, partition, headers):
                        batch = batch[:i]
                        break
        sent += len(batch)
        poll(0)
        if progress.enabled:
            done_bytes += sum(map(len, batch)) + len(batch)
            progress.update(sent - len(producer), done_bytes)
        if interrupt.requested():
            break
    return sent, _drain(producer.flush, lambda: deliveries.failed, progress, sent, done_bytes,
                        args)


def _send_bulk(lp, args, batches, total) -> tuple[int, int]:
    """_send_all for plain values through a LineProducer: one call per list
    of records. Returns (handed to the producer, still queued at the end)."""
    progress = _Progress(total)
    sent = done_bytes = 0
    partition = -1 if args.partition is None else args.partition
    for batch in batches:
        done = lp.produce(batch, 0, partition)
        while done < len(batch) and not interrupt.requested():
            lp.poll(0.05)  # the local queue is full: let deliveries drain it
            done = lp.produce(batch, done, partition)
        sent += done
        lp.poll(0)
        if progress.enabled:
            done_bytes += sum(map(len, batch[:done])) + done
            progress.update(sent - len(lp), done_bytes)
        if interrupt.requested():
            break
    return sent, _drain(lp.flush, lambda: lp.failed, progress, sent, done_bytes, args)


def _drain(flush, failed, progress: _Progress, sent: int, done_bytes: int, args) -> int:
    """Waits for what is still queued (0.5 s after Ctrl-C, else --timeout),
    draws the final progress; returns how many records are left."""
    remaining = flush(0.5 if interrupt.requested() else args.timeout)
    progress.update(sent - remaining - failed(), done_bytes, force=True)
    progress.finish()
    return remaining


def _failure_text(code: int, name: str, text: str) -> str:
    """One line for a LineProducer failure, worded as describe_error words
    a KafkaError."""
    from confluent_kafka import KafkaError, KafkaException

    from headrace.admin import describe_error
    return describe_error(KafkaException(KafkaError(code, text)))


def _retry(producer, topic, value, key, partition, headers) -> bool:
    """The queue is full: serve delivery reports until the record fits;
    False if Ctrl-C came first."""
    while not interrupt.requested():
        producer.poll(0.05)
        try:
            producer.produce(topic, value, key, partition, headers=headers)
            return True
        except BufferError:
            continue
    return False


def _report(args, partitions, sent: int, remaining: int, failed: int,
            errors: list[str]) -> int:
    n = sent - remaining - failed
    summary = f"headrace: produced {n} of {sent} records to {args.topic}"
    part = args.partition if args.partition is not None else \
        (partitions[0] if partitions and len(partitions) == 1 else None)
    if part is not None and n:
        summary += f" (partition:records {part}:{n})"
    if errors:
        raise CliError(f"{sent - n} of {sent} records failed ({n} acknowledged): "
                       f"{errors[0]}")
    print(summary, file=sys.stderr)
    return 0
