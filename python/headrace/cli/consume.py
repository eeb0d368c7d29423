"""``headrace consume TOPIC...``: print records of one or more topics (names
or ``^regex``), by default each value on its own line, from a position (see
headrace.cli.offsets) or a group's committed offsets, until the end of the
log (``--exit``, the default), ``--count`` records, a ``--to`` position, or
for ever with ``--follow``.

Records are fetched in batches (``consume(N)``) and each batch is written to
stdout with one write.
"""
from __future__ import annotations

import argparse
import re
import sys
import time

from headrace.cli import interrupt
from headrace.cli.codec import ENCODINGS, parse_delimiter
from headrace.cli.common import CliError, add_client_flags, check_reachable, client_settings
from headrace.cli.offsets import EARLIEST, LATEST, SPELLINGS, parse_position, resolve
from headrace.cli.share_consume import ACKS, check_share_args, consume_shared

BATCH = 10_000


def add_consume_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("consume", help="print records of topics",
                       description="Print records of topics, values one per line by default.")
    p.add_argument("topics", nargs="*", metavar="TOPIC",
                   help="topic names; one starting with ^ is a regular expression")
    p.add_argument("--topic", "-t", dest="more_topics", action="append", default=[],
                   metavar="TOPIC", help="a topic or ^regex (repeatable, as kcat -t)")
    p.add_argument("--topic-regex", action="append", default=[], metavar="REGEX",
                   help="every topic matching REGEX (repeatable)")
    p.add_argument("--from", "-o", dest="start", default=None, metavar="POS",
                   help=f"where to start: {SPELLINGS} (default earliest); with --group only "
                        f"where the group has no committed offset for earliest/latest")
    p.add_argument("--to", dest="stop", default=None, metavar="POS",
                   help="stop each partition before this position (exclusive; same spellings)")
    p.add_argument("--count", "-c", type=int, metavar="N", help="stop after N records")
    p.add_argument("--exit", "-e", action="store_true",
                   help="stop at the end of every partition (the default without --follow)")
    p.add_argument("--follow", "-F", action="store_true",
                   help="keep waiting for new records instead of stopping at the end")
    p.add_argument("--partition", "-p", type=int, action="append", metavar="N",
                   help="only these partitions (repeatable; not with --group)")
    p.add_argument("--format", default="plain", metavar="FMT",
                   help="plain (values), json (one object per record with all metadata), or a "
                        "kcat-like string with %%t %%p %%o %%k %%s %%K %%S %%T %%h and \\n")
    p.add_argument("--encoding", choices=ENCODINGS, default="text",
                   help="show keys, values and header values as text (as is), base64 or hex")
    p.add_argument("--delimiter", "-D", default="\\n", metavar="DELIM",
                   help="what follows each value in plain format (default \\n; '' = NUL)")
    p.add_argument("--null", dest="null_text", default=None, metavar="TEXT",
                   help="print a null key or value as TEXT (plain and format strings; "
                        "default: empty)")
    p.add_argument("-Z", dest="null_text", action="store_const", const="NULL",
                   help="print null keys and values as NULL (as kcat -Z)")
    p.add_argument("--group", "-g", metavar="GROUP",
                   help="consume as a member of GROUP, starting at its committed offsets "
                        "and committing what was printed")
    p.add_argument("--decode", action="store_true",
                   help="show schema-registry-framed Avro, JSON Schema and Protobuf keys and "
                        "values as JSON (docs/schema-registry.md); others as they are")
    p.add_argument("--registry-url", metavar="URL",
                   help="the schema registry for --decode (env HEADRACE_REGISTRY_URL, default "
                        "http://127.0.0.1:9644)")
    p.add_argument("--registry-user", metavar="USER",
                   help="a SASL user for the registry (password in $HEADRACE_REGISTRY_PASSWORD)")
    p.add_argument("--registry-ca", metavar="FILE", help="CA certificate(s) for an https registry")
    p.add_argument("--share-group", metavar="GROUP",
                   help="read as a member of share group GROUP (KIP-932; starts at the end "
                        "of each partition for a new group) and acknowledge what is printed")
    p.add_argument("--ack", choices=ACKS, default="accept",
                   help="with --share-group: accept (default), release (delivered again) or "
                        "reject (never again) each record printed")
    p.add_argument("--idle", type=float, metavar="S",
                   help="with --share-group: stop once nothing arrives for S seconds "
                        "(default 5; never with --follow)")
    add_client_flags(p)
    p.set_defaults(func=_consume)


def _decoder(args):
    """decode(raw, topic, field) for --decode (headrace.registry.decode)."""
    import os

    from headrace.cli.registry import DEFAULT_URL, PASSWORD_ENV, URL_ENV
    from headrace.registry.decode import Decoder

    conf = {"url": args.registry_url or os.environ.get(URL_ENV) or DEFAULT_URL}
    if args.registry_user:
        conf["basic.auth.user.info"] = f"{args.registry_user}:{os.environ.get(PASSWORD_ENV, '')}"
    if args.registry_ca:
        conf["ssl.ca.location"] = args.registry_ca
    return Decoder(conf).decode


def _wanted(args) -> tuple[list[str], list[str]]:
    """(names, regexes) from TOPIC..., -t and --topic-regex."""
    names, regexes = [], list(args.topic_regex)
    for t in args.topics + args.more_topics:
        (regexes if t.startswith("^") else names).append(t)
    for r in regexes:
        try:
            re.compile(r)
        except re.error as e:
            raise CliError(f"bad topic regex {r!r}: {e}") from None
    if not names and not regexes:
        raise CliError("name a topic: consume TOPIC, -t TOPIC or --topic-regex REGEX")
    return sorted(set(names)), [r if r.startswith("^") else "^" + r for r in regexes]


def _consumer(args, group: str | None, start):
    from confluent_kafka import Consumer

    from headrace.admin import client_config

    conf = {"group.id": group or "headrace-cli", "enable.partition.eof": True,
            "enable.auto.commit": group is not None, "enable.auto.offset.store": False,
            "auto.offset.reset": "latest" if start.kind == LATEST else "earliest",
            "session.timeout.ms": 10000, "fetch.wait.max.ms": 100,
            # Keep fetching while records wait in the local queue (bounded by
            # queued.max.messages.kbytes, 64 MiB): librdkafka's default backs
            # off for a second once 100000 records are queued.
            "queued.min.messages": 1_000_000, "fetch.queue.backoff.ms": 0,
            "max.partition.fetch.bytes": 4 << 20}
    conf.update(client_settings(args))  # -X, --command-config, HEADRACE_* (headrace.cli.common)
    return Consumer(client_config(args.brokers, **conf))


def _consume(args) -> int:
    if args.share_group:
        names, regexes = _wanted(args)
        check_share_args(args, names, regexes)
        if args.count is not None and args.count < 0:
            raise CliError("--count must be >= 0")
        client_settings(args)  # a bad setting is reported before the probe
        check_reachable(args)
        return consume_shared(args, names, _formatter(args))
    if args.ack != "accept" or args.idle is not None:
        raise CliError("--ack and --idle need --share-group")
    start = parse_position(args.start) if args.start else parse_position("earliest")
    stop = parse_position(args.stop) if args.stop else None
    if args.count is not None and args.count < 0:
        raise CliError("--count must be >= 0")
    if args.follow and args.exit:
        raise CliError("--follow and --exit exclude each other")
    names, regexes = _wanted(args)
    if args.group and args.partition:
        raise CliError("--partition cannot be combined with --group")
    from headrace.admin import Admin

    client_settings(args)  # a bad setting is reported before the probe
    check_reachable(args)
    admin = Admin(args.brokers, timeout=args.timeout, settings=client_settings(args))
    if args.group:
        run = _Run(args, admin, stop)
        consumer = _consumer(args, args.group, start)
        _subscribe(consumer, admin, names + regexes, start, run)
    else:
        tps = _partitions(admin, names, regexes, args.partition)
        run = _Run(args, admin, stop)
        consumer = _consumer(args, None, start)
        offsets = resolve(admin, tps, start)
        for tp in tps:
            tp.offset = offsets[(tp.topic, tp.partition)]
        run.set_stops(tps)
        consumer.assign([tp for tp in tps if (tp.topic, tp.partition) not in run.done])
    try:
        run.loop(consumer)
    finally:
        consumer.close()
    return 0


def _partitions(admin, names: list[str], regexes: list[str], only: list[int] | None):
    from confluent_kafka import TopicPartition

    md = admin.metadata()
    topics = list(names)
    for n in names:
        if n not in md.topics or md.topics[n].error is not None and not md.topics[n].partitions:
            raise CliError(f"unknown topic {n!r}")
    for r in regexes:
        matched = [t for t in md.topics if re.match(r, t)]
        if not matched:
            raise CliError(f"no topic matches {r!r}")
        topics += matched
    tps = []
    for t in sorted(set(topics)):
        parts = sorted(md.topics[t].partitions)
        if only:
            missing = [p for p in only if p not in parts]
            if missing and len(topics) == 1:
                raise CliError(f"topic {t} has no partition {missing[0]}")
            parts = [p for p in parts if p in only]
        tps += [TopicPartition(t, p) for p in parts]
    if not tps:
        raise CliError(f"no partition {only} in {', '.join(sorted(set(topics)))}")
    return tps


def _subscribe(consumer, admin, patterns: list[str], start, run: "_Run") -> None:
    """Group mode: committed offsets win; an OFFSET, -N or time overrides them."""
    def on_assign(c, tps):
        if start.kind not in (EARLIEST, LATEST):
            offsets = resolve(admin, tps, start)
            for tp in tps:
                tp.offset = offsets[(tp.topic, tp.partition)]
        run.set_stops(tps)
        c.assign(tps)

    consumer.subscribe(patterns, on_assign=on_assign)


def _formatter(args):
    """render(msgs) -> bytes as --format, --encoding, --null, --delimiter and
    --decode say."""
    from headrace.cli.format import Formatter

    null = None if args.null_text is None else args.null_text.encode()
    decode = _decoder(args) if args.decode else None
    return Formatter(args.format, encoding=args.encoding, null=null or b"",
                     delimiter=parse_delimiter(args.delimiter, "--delimiter"),
                     decode=decode).render


class _Run:
    """The print loop and when it ends: --count, --to stops, end of log."""

    def __init__(self, args, admin, stop):
        self.render = _formatter(args)
        self.args, self.admin, self.stop = args, admin, stop
        self.stops: dict[tuple[str, int], int] = {}  # exclusive stop offsets
        self.done: set[tuple[str, int]] = set()       # past --to
        self.at_end: set[tuple[str, int]] = set()
        self.assign_deadline = time.monotonic() + args.timeout

    def set_stops(self, tps) -> None:
        """Resolves --to for ``tps`` (with their start offsets in tp.offset)."""
        if self.stop is None:
            return
        found = resolve(self.admin, tps, self.stop, clamp=False)
        for tp in tps:
            key = (tp.topic, tp.partition)
            self.stops[key] = found[key]
            if tp.offset >= 0 and tp.offset >= found[key]:
                self.done.add(key)

    def _finished(self, consumer) -> bool:
        assigned = {(tp.topic, tp.partition) for tp in consumer.assignment()}
        if not assigned and not self.args.follow and self.args.group and \
                time.monotonic() > self.assign_deadline:
            raise CliError(f"group {self.args.group}: no partition assigned within "
                           f"{self.args.timeout:g}s (no topic matches, or other members "
                           f"own every partition)")
        if self.stop is not None and self.done and not assigned - self.done:
            return True
        if self.args.follow:
            return False
        return bool(assigned) and assigned <= (self.at_end | self.done)

    def loop(self, consumer) -> None:
        args, out = self.args, sys.stdout.buffer
        left = args.count
        if self.stop is not None and self.stops and not set(self.stops) - self.done:
            return
        while left is None or left > 0:
            if interrupt.requested():
                break
            msgs = consumer.consume(BATCH if left is None else min(BATCH, left), 0.2)
            if not msgs:
                if self._finished(consumer):
                    break
                continue
            keep = [m for m in msgs if m.error() is None]
            ended = len(keep) != len(msgs)
            if ended:
                self._events(msgs)
            elif self.at_end:  # records after an end: that partition is not at its end
                self.at_end.difference_update({(m.topic(), m.partition()) for m in keep})
            if self.stops:
                keep = self._before_stops(consumer, keep)
            if keep:
                out.write(self.render(keep))
                if args.follow:
                    out.flush()
                if left is not None:
                    left -= len(keep)
                if args.group:
                    _store(consumer, keep)
            if (ended or self.done) and self._finished(consumer):
                break
        out.flush()

    def _events(self, msgs) -> None:
        """In order: records take their partition out of at_end, EOF events
        put it in; any other error ends the command."""
        from confluent_kafka import KafkaError

        from headrace.admin import describe_error

        for m in msgs:
            err = m.error()
            if err is None:
                if self.at_end:
                    self.at_end.discard((m.topic(), m.partition()))
                continue
            if err.code() != KafkaError._PARTITION_EOF:
                raise CliError(f"consume {m.topic() or ''}: {describe_error(err)}")
            key = (m.topic(), m.partition())
            self.at_end.add(key)
            if key in self.stops and m.offset() >= self.stops[key]:
                self.done.add(key)  # e.g. the last offsets are transaction markers

    def _before_stops(self, consumer, msgs) -> list:
        """The records below their partition's --to offset; partitions that
        reached it are paused and done."""
        from confluent_kafka import TopicPartition

        keep = []
        for m in msgs:
            key = (m.topic(), m.partition())
            limit = self.stops.get(key)
            if limit is not None and m.offset() >= limit:
                if key not in self.done:
                    self.done.add(key)
                    consumer.pause([TopicPartition(*key)])
                continue
            keep.append(m)
        return keep


def _store(consumer, msgs) -> None:
    """Stores the next offset of the last printed record of each partition."""
    from confluent_kafka import TopicPartition

    last: dict[tuple[str, int], int] = {}
    for m in msgs:
        last[(m.topic(), m.partition())] = m.offset()
    consumer.store_offsets(offsets=[TopicPartition(t, p, o + 1) for (t, p), o in last.items()])
