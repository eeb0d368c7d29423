"""The console's message browser: one page of records of one partition.

A page starts at a position written as on the command line (``earliest``,
``latest``, an offset, ``-N`` before the end, ``@EPOCH_MS``, ``@-1h``,
``@ISO-TIME``: headrace.cli.offsets) and holds at most ``count`` records
(MAX_RECORDS) and about MAX_PAGE_BYTES of keys, values and headers; reading
stops at the end of the partition or after READ_DEADLINE_S. Records are the
documents of ``headrace consume --format json`` (headrace.cli.format) with
keys, values and header values as text, hex or base64.

Registry-framed values (magic 0 + schema id, the id known to the broker's
schema registry) are shown as JSON, with the schema's subject, version and
id in the record's ``schema``, by headrace.registry.decode's Decoder (what
``headrace consume --decode`` uses), asking this broker's registry over its
HTTP listener as the page's user; only when the page shows text. Other
values are shown as they are; when the registry fails, the page's
``schema_note`` says why and its values are shown as they are.

Records are read by one cached confluent-kafka Consumer over the broker's own
Kafka port (read_committed, as a default client; no group membership, never
commits), assigned to the partition for one page and unassigned after it, so
it fetches nothing between pages. One page is read at a time (a lock).
"""
from __future__ import annotations

import json
import threading
import time
from typing import Callable

from headrace.console.data import BadRequest, ClusterView, Forbidden, NotFound

DEFAULT_RECORDS = 50
MAX_RECORDS = 500
MAX_PAGE_BYTES = 1 << 20
READ_DEADLINE_S = 3.0
CONSUMER_GROUP = "headrace-console"  # required by librdkafka; offsets are never committed


class MessageBrowser:
    def __init__(self, view: ClusterView, bootstrap: Callable[[], str],
                 settings: dict | None = None, registry: Callable[[], dict | None] = None):
        """``registry()``: the SchemaRegistryClient settings of the broker's
        own registry for this browser's user (None: values are not decoded)."""
        self._view = view
        self._bootstrap = bootstrap
        self._settings = dict(settings or {})  # a logged-in user's credentials
        self._registry = registry
        self._decoder = None
        self._consumer = None
        self._lock = threading.Lock()  # one page at a time; guards _consumer

    def page(self, topic: str, partition: int, start: str = "earliest",
             count: int = DEFAULT_RECORDS, encoding: str = "text") -> dict:
        """{"topic", "partition", "start_offset", "end_offset" (the partition's
        log start and high watermark), "from" (the offset read from),
        "note" (why `from` differs from what was asked, or None),
        "records": [consume --format json documents], "next_offset" (where the
        next page starts), "truncated" (MAX_PAGE_BYTES or READ_DEADLINE_S
        stopped the page before `count` records or the end)}."""
        from confluent_kafka import TopicPartition

        from headrace.cli.codec import ENCODINGS
        from headrace.cli.common import CliError
        from headrace.cli.offsets import (EARLIEST, FROM_END, LATEST, TIME, parse_position,
                                          resolve)
        from headrace.errors import HeadraceError

        if encoding not in ENCODINGS:
            raise BadRequest(f"encoding must be one of {', '.join(ENCODINGS)}")
        if not 1 <= count <= MAX_RECORDS:
            raise BadRequest(f"count must be 1..{MAX_RECORDS}")
        try:
            position = parse_position(start)
        except CliError as e:
            raise BadRequest(str(e)) from None
        admin = self._view.admin()
        md = admin.metadata()
        tm = self._view.require_topic(admin, topic, md)
        acting = self._view.acting
        if acting is not None and not acting.allows("Read", "Topic", topic):
            raise Forbidden(f"cannot read {topic}: not authorized (TOPIC_AUTHORIZATION_FAILED)")
        if partition not in tm.partitions:
            raise NotFound(f"topic {topic!r} has no partition {partition}")
        deadline = admin.read_deadline()  # for the probe and the offsets together
        down = self._view.partition_leader_down(admin, md, tm, partition, deadline)
        if down:  # at once, rather than after ListOffsets' whole timeout
            raise HeadraceError(f"cannot read {topic}[{partition}]: {down}")
        tp = TopicPartition(topic, partition)
        key = (topic, partition)
        # At the leader, within the read's deadline (a hung broker elsewhere
        # must not hold the page: headrace.admin.Admin.offsets_by_leader).
        leader = {key: tm.partitions[partition].leader}
        bounds = {}
        for spec in ("earliest", "latest"):
            got, errors = admin.offsets_by_leader(leader, spec, deadline)
            if key not in got:
                self._view.renew(admin)
                raise HeadraceError(f"cannot list offsets of {topic}[{partition}]: "
                                    f"{errors.get(key, 'no answer in time')}")
            bounds[spec] = got[key]
        lo, hi = bounds["earliest"], bounds["latest"]
        if position.kind == EARLIEST:
            want = lo
        elif position.kind == LATEST:
            want = hi
        elif position.kind == FROM_END:
            want = max(lo, hi - position.value)
        elif position.kind == TIME:
            want = resolve(admin, [tp], position, clamp=False)[key]
        else:
            want = position.value
        offset, note = min(max(want, lo), hi), None
        if offset != want:
            note = (f"offset {want} is outside the partition (log start {lo}, end {hi}); "
                    f"reading from {offset}")
        msgs, truncated = self._read(topic, partition, offset, hi, count)
        records, schema_note = _documents(msgs, encoding,
                                          self._decoder_of() if encoding == "text" else None)
        nxt = msgs[-1].offset() + 1 if msgs else offset
        return {"topic": topic, "partition": partition, "start_offset": lo, "end_offset": hi,
                "from": offset, "note": note, "encoding": encoding, "records": records,
                "next_offset": nxt, "truncated": truncated, "schema_note": schema_note}

    def _decoder_of(self):
        """The Decoder of this browser (made on first use; it caches schemas)."""
        if self._decoder is None and self._registry is not None:
            conf = self._registry()
            if conf is not None:
                from headrace.registry.decode import Decoder

                self._decoder = Decoder(conf)
        return self._decoder

    def _read(self, topic: str, partition: int, offset: int, end: int, count: int):
        """Up to `count` records from `offset`, within MAX_PAGE_BYTES and
        READ_DEADLINE_S: (messages, whether one of those two bounds stopped
        the read)."""
        from confluent_kafka import KafkaError, TopicPartition

        from headrace.admin import describe_error

        if offset >= end:
            return [], False
        out, size = [], 0
        deadline = time.monotonic() + READ_DEADLINE_S
        with self._lock:
            consumer = self._consumer_locked()
            consumer.assign([TopicPartition(topic, partition, offset)])
            try:
                while len(out) < count and time.monotonic() < deadline:
                    for m in consumer.consume(min(count - len(out), 500), 0.2):
                        if m.topic() != topic or m.partition() != partition:
                            continue  # left over from an earlier page
                        err = m.error()
                        if err is not None:
                            if err.code() == KafkaError._PARTITION_EOF:
                                if m.offset() >= end or out:
                                    return out, False
                                continue
                            raise BadRequest(f"cannot read {topic}[{partition}]: "
                                             f"{describe_error(err)}")
                        if m.offset() < offset or out and m.offset() <= out[-1].offset():
                            continue
                        size += _record_bytes(m)
                        if out and size > MAX_PAGE_BYTES:
                            return out, True
                        out.append(m)
                        if len(out) == count or m.offset() + 1 >= end:
                            return out, False
                return out, True  # the deadline passed
            finally:
                consumer.unassign()

    def _consumer_locked(self):
        if self._consumer is None:
            from confluent_kafka import Consumer

            from headrace.admin import client_config

            self._consumer = Consumer(client_config(
                self._bootstrap(), **self._settings, **{
                    "group.id": CONSUMER_GROUP, "enable.auto.commit": False,
                    "enable.auto.offset.store": False, "enable.partition.eof": True,
                    "fetch.wait.max.ms": 100, "fetch.max.bytes": MAX_PAGE_BYTES,
                    "max.partition.fetch.bytes": MAX_PAGE_BYTES,
                    "queued.max.messages.kbytes": MAX_PAGE_BYTES >> 10}))
        return self._consumer

    def close(self) -> None:
        self._decoder = None  # its registry clients go with it
        with self._lock:
            if self._consumer is not None:
                self._consumer.close()
                self._consumer = None


def _record_bytes(m) -> int:
    return (len(m.key() or b"") + len(m.value() or b"") +
            sum(len(k) + len(v or b"") for k, v in (m.headers() or [])))


def _documents(msgs, encoding: str, decoder=None) -> tuple[list[dict], str | None]:
    """(the `consume --format json` document of each message, why framed
    values were not decoded or None). With a ``decoder``
    (headrace.registry.decode.Decoder) framed values are shown as JSON and
    their document gets ``schema``: {"id", "type", "subject", "version"}."""
    if not msgs:
        return [], None
    from headrace.cli.format import Formatter

    decoded: dict[bytes, int] = {}  # framed value -> its schema id, once decoded
    failure: list[str] = []

    def decode(raw, topic, field="value"):
        if failure:  # the registry failed once: the rest as is, at once
            return raw
        try:
            out = decoder.decode(raw, topic, field)
        except Exception as e:  # noqa: BLE001 - a page never fails for its decoding
            failure.append(f"framed values are shown as they are: {e}")
            return raw
        if out is not raw and field == "value":
            decoded[raw] = decoder.schema_id(raw)
        return out

    text = Formatter("json", encoding=encoding,
                     decode=decode if decoder is not None else None).render(msgs)
    docs = [json.loads(line) for line in text.decode().splitlines() if line]
    for m, doc in zip(msgs, docs):
        schema_id = decoded.get(m.value()) if decoded and m.value() is not None else None
        if schema_id is not None and not failure:
            try:
                doc["schema"] = decoder.describe(schema_id, m.topic())
            except Exception as e:  # noqa: BLE001 - as above
                failure.append(f"schemas not described: {e}")
    return docs, (failure[0] if failure else None)
