"""One small driver per real Kafka client, with the same shape, for the broker
end-to-end tests: confluent-kafka (librdkafka 2.16), kafka-python, aiokafka and
Debian's kcat (librdkafka 2.0).

Each driver offers:
- create_topic(topic, partitions) through that client's admin API (kcat has
  none: it uses confluent-kafka's AdminClient);
- produce(topic, msgs, compression) -> [(partition, offset)] from delivery
  reports (None where the client does not report them, i.e. kcat);
- read(topic, partitions, start) -> [Rec] from `start` ("earliest" or
  ("timestamp", ms)) up to the high watermark, by assign+seek;
- read_latest(topic, partitions, produce_late, expected) -> [Rec]: seek every
  partition to its end, then call produce_late() and read `expected` records.

Records are normalised to Rec so that results of different clients compare
with ==.
"""
from __future__ import annotations

import asyncio
import re
import subprocess
import time
from dataclasses import dataclass, field

CLIENT_TIMEOUT_S = 60.0


@dataclass(frozen=True)
class Out:
    """A message to produce. partition None = let the client's partitioner pick (by key)."""
    value: bytes
    key: bytes | None = None
    partition: int | None = None
    headers: tuple[tuple[str, bytes], ...] = ()
    timestamp: int | None = None  # CreateTime set by the producer; None = now


@dataclass(frozen=True)
class Rec:
    """A consumed record, normalised across clients (timestamp type kept aside)."""
    partition: int
    offset: int
    key: bytes | None
    value: bytes
    headers: tuple[tuple[str, bytes], ...]
    timestamp: int
    create_time: bool | None = field(default=None, compare=False)


def _norm_headers(headers) -> tuple[tuple[str, bytes], ...]:
    return tuple((k, bytes(v) if v is not None else None) for k, v in (headers or ()))


def _sorted(recs):
    return sorted(recs, key=lambda r: (r.partition, r.offset))


def _deadline(timeout=CLIENT_TIMEOUT_S):
    return time.monotonic() + timeout


# -- confluent-kafka -------------------------------------------------------------
class ConfluentClient:
    name = "confluent-kafka"

    def __init__(self, bootstrap: str):
        self.bootstrap = bootstrap

    def admin(self):
        from confluent_kafka.admin import AdminClient
        return AdminClient({"bootstrap.servers": self.bootstrap})

    def create_topic(self, topic: str, partitions: int, **configs):
        from confluent_kafka.admin import NewTopic
        admin = self.admin()  # must outlive the future
        fut = admin.create_topics([NewTopic(topic, partitions, 1, config=configs)],
                                  request_timeout=30)[topic]
        fut.result(CLIENT_TIMEOUT_S)

    def producer(self, compression="none", **extra):
        from confluent_kafka import Producer
        conf = {"bootstrap.servers": self.bootstrap, "compression.type": compression,
                "acks": "all", "linger.ms": 20, "message.timeout.ms": 60000}
        conf.update(extra)
        return Producer(conf)

    def produce(self, topic, msgs, compression="none"):
        p = self.producer(compression)
        reports: list = [None] * len(msgs)

        def _cb(i):
            def cb(err, m):
                reports[i] = err if err is not None else (m.partition(), m.offset())
            return cb

        for i, m in enumerate(msgs):
            kw = {"value": m.value, "key": m.key, "headers": list(m.headers),
                  "on_delivery": _cb(i)}
            if m.partition is not None:
                kw["partition"] = m.partition
            if m.timestamp is not None:
                kw["timestamp"] = m.timestamp
            p.produce(topic, **kw)
        left = p.flush(CLIENT_TIMEOUT_S)
        assert left == 0, f"{left} messages not delivered"
        bad = [r for r in reports if not isinstance(r, tuple)]
        assert not bad, f"delivery errors: {bad}"
        return reports

    def consumer(self, **extra):
        from confluent_kafka import Consumer
        conf = {"bootstrap.servers": self.bootstrap, "group.id": "e2e-assign-only",
                "enable.auto.commit": False, "enable.auto.offset.store": False,
                "fetch.wait.max.ms": 100, "session.timeout.ms": 30000}
        conf.update(extra)
        return Consumer(conf)

    @staticmethod
    def _rec(m) -> Rec:
        from confluent_kafka import TIMESTAMP_CREATE_TIME
        ts_type, ts = m.timestamp()
        return Rec(m.partition(), m.offset(), m.key(), m.value(), _norm_headers(m.headers()), ts,
                   ts_type == TIMESTAMP_CREATE_TIME)

    def _poll_until(self, c, done, deadline):
        recs = []
        while not done(recs):
            assert time.monotonic() < deadline, f"timed out with {len(recs)} records: {recs[-3:]}"
            m = c.poll(0.5)
            if m is None:
                continue
            assert m.error() is None, f"consume error: {m.error()}"
            recs.append(self._rec(m))
        return recs

    def watermarks(self, topic, partitions):
        from confluent_kafka import TopicPartition
        c = self.consumer()
        try:
            return [c.get_watermark_offsets(TopicPartition(topic, p), timeout=30)
                    for p in range(partitions)]
        finally:
            c.close()

    def read(self, topic, partitions, start="earliest"):
        from confluent_kafka import OFFSET_BEGINNING, TopicPartition
        c = self.consumer()
        try:
            ends = [c.get_watermark_offsets(TopicPartition(topic, p), timeout=30)[1]
                    for p in range(partitions)]
            if start == "earliest":
                tps = [TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)]
            else:
                _, ts = start
                tps = c.offsets_for_times([TopicPartition(topic, p, ts) for p in range(partitions)],
                                          timeout=30)
                assert all(tp.error is None for tp in tps), tps
            starts = {tp.partition: tp.offset for tp in tps}
            c.assign(tps)
            want = sum(ends[p] - (0 if start == "earliest" else
                                  (starts[p] if starts[p] >= 0 else ends[p]))
                       for p in range(partitions))
            return _sorted(self._poll_until(c, lambda r: len(r) >= want, _deadline()))
        finally:
            c.close()

    def read_latest(self, topic, partitions, produce_late, expected):
        """OFFSET_END; position() stays unset until a message is consumed, so the
        end-of-partition events (enable.partition.eof) tell when every partition
        is positioned at its end."""
        from confluent_kafka import OFFSET_END, KafkaError, TopicPartition
        c = self.consumer(**{"enable.partition.eof": True})
        try:
            ends = [c.get_watermark_offsets(TopicPartition(topic, p), timeout=30)[1]
                    for p in range(partitions)]
            c.assign([TopicPartition(topic, p, OFFSET_END) for p in range(partitions)])
            eof_at = {}
            deadline = _deadline()
            while len(eof_at) < partitions:
                assert time.monotonic() < deadline, f"end of partition reached only for {eof_at}"
                m = c.poll(0.5)
                if m is None:
                    continue
                assert m.error() is not None, f"record before late produce: {self._rec(m)}"
                assert m.error().code() == KafkaError._PARTITION_EOF, m.error()
                eof_at[m.partition()] = m.offset()
            assert [eof_at[p] for p in range(partitions)] == ends
            produce_late()
            recs = []
            deadline = _deadline()
            while len(recs) < expected:
                assert time.monotonic() < deadline, f"timed out with {len(recs)} records"
                m = c.poll(0.5)
                if m is None or (m.error() and m.error().code() == KafkaError._PARTITION_EOF):
                    continue
                assert m.error() is None, m.error()
                recs.append(self._rec(m))
            return _sorted(recs)
        finally:
            c.close()


# -- kafka-python ------------------------------------------------------------------
class KafkaPythonClient:
    """kafka-python 3.x producers are idempotent by default (InitProducerId);
    the matrix turns that off to test the plain data path, and
    test_broker_clients.py has a separate test of the default producer."""
    name = "kafka-python"

    def __init__(self, bootstrap: str, **producer_config):
        self.bootstrap = bootstrap
        self.producer_config = producer_config or {"enable_idempotence": False}

    def admin(self):
        from kafka.admin import KafkaAdminClient
        return KafkaAdminClient(bootstrap_servers=self.bootstrap, request_timeout_ms=30000)

    def create_topic(self, topic, partitions, **configs):
        a = self.admin()
        try:
            a.create_topics({topic: {"num_partitions": partitions, "replication_factor": 1,
                                     "configs": configs}})
        finally:
            a.close()

    def produce(self, topic, msgs, compression="none"):
        from kafka import KafkaProducer
        p = KafkaProducer(bootstrap_servers=self.bootstrap, acks="all", linger_ms=20,
                          compression_type=None if compression == "none" else compression,
                          request_timeout_ms=30000, **self.producer_config)
        try:
            futs = [p.send(topic, value=m.value, key=m.key, headers=list(m.headers),
                           partition=m.partition, timestamp_ms=m.timestamp) for m in msgs]
            p.flush(CLIENT_TIMEOUT_S)
            return [(md.partition, md.offset) for md in (f.get(CLIENT_TIMEOUT_S) for f in futs)]
        finally:
            p.close(timeout=30)

    def consumer(self):
        from kafka import KafkaConsumer
        return KafkaConsumer(bootstrap_servers=self.bootstrap, group_id=None,
                             enable_auto_commit=False, fetch_max_wait_ms=100,
                             request_timeout_ms=30000)

    @staticmethod
    def _rec(m) -> Rec:
        return Rec(m.partition, m.offset, m.key, m.value, _norm_headers(m.headers), m.timestamp,
                   m.timestamp_type == 0)

    def _poll_until(self, c, want, deadline):
        recs = []
        while len(recs) < want:
            assert time.monotonic() < deadline, f"timed out with {len(recs)} records"
            for batch in c.poll(timeout_ms=500).values():
                recs.extend(self._rec(m) for m in batch)
        return recs

    def read(self, topic, partitions, start="earliest"):
        from kafka import TopicPartition
        c = self.consumer()
        try:
            tps = [TopicPartition(topic, p) for p in range(partitions)]
            ends = c.end_offsets(tps)
            c.assign(tps)
            if start == "earliest":
                c.seek_to_beginning(*tps)
                starts = {tp: 0 for tp in tps}
                for tp in tps:
                    starts[tp] = c.position(tp)
            else:
                found = c.offsets_for_times({tp: start[1] for tp in tps})
                starts = {}
                for tp in tps:
                    off = found[tp].offset if found[tp] is not None else ends[tp]
                    c.seek(tp, off)
                    starts[tp] = off
            want = sum(ends[tp] - starts[tp] for tp in tps)
            return _sorted(self._poll_until(c, want, _deadline()))
        finally:
            c.close()

    def read_latest(self, topic, partitions, produce_late, expected):
        from kafka import TopicPartition
        c = self.consumer()
        try:
            tps = [TopicPartition(topic, p) for p in range(partitions)]
            ends = c.end_offsets(tps)
            c.assign(tps)
            c.seek_to_end(*tps)
            assert {tp: c.position(tp) for tp in tps} == ends
            assert not c.poll(timeout_ms=200), "records before late produce"
            produce_late()
            return _sorted(self._poll_until(c, expected, _deadline()))
        finally:
            c.close()


# -- aiokafka -----------------------------------------------------------------------
class AioKafkaClient:
    name = "aiokafka"

    def __init__(self, bootstrap: str):
        self.bootstrap = bootstrap

    def create_topic(self, topic, partitions, **configs):
        async def _run():
            from aiokafka.admin import AIOKafkaAdminClient, NewTopic
            a = AIOKafkaAdminClient(bootstrap_servers=self.bootstrap, request_timeout_ms=30000)
            await a.start()
            try:
                resp = await a.create_topics([NewTopic(topic, partitions, 1, topic_configs=configs)])
                errors = [(t[0], t[1]) for t in resp.topic_errors if t[1] != 0]
                assert not errors, f"create_topics errors {errors}"
            finally:
                await a.close()
        asyncio.run(_run())

    def produce(self, topic, msgs, compression="none"):
        async def _run():
            from aiokafka import AIOKafkaProducer
            p = AIOKafkaProducer(bootstrap_servers=self.bootstrap, acks="all", linger_ms=20,
                                 compression_type=None if compression == "none" else compression,
                                 request_timeout_ms=30000)
            await p.start()
            try:
                futs = [await p.send(topic, value=m.value, key=m.key, partition=m.partition,
                                     timestamp_ms=m.timestamp, headers=list(m.headers))
                        for m in msgs]
                mds = await asyncio.wait_for(asyncio.gather(*futs), CLIENT_TIMEOUT_S)
                return [(md.partition, md.offset) for md in mds]
            finally:
                await p.stop()
        return asyncio.run(_run())

    @staticmethod
    def _rec(m) -> Rec:
        return Rec(m.partition, m.offset, m.key, m.value, _norm_headers(m.headers), m.timestamp,
                   m.timestamp_type == 0)

    async def _consumer(self):
        from aiokafka import AIOKafkaConsumer
        c = AIOKafkaConsumer(bootstrap_servers=self.bootstrap, group_id=None,
                             enable_auto_commit=False, fetch_max_wait_ms=100,
                             request_timeout_ms=30000)
        await c.start()
        return c

    async def _poll_until(self, c, want, deadline):
        recs = []
        while len(recs) < want:
            assert time.monotonic() < deadline, f"timed out with {len(recs)} records"
            for batch in (await c.getmany(timeout_ms=500)).values():
                recs.extend(self._rec(m) for m in batch)
        return recs

    def read(self, topic, partitions, start="earliest"):
        async def _run():
            from aiokafka import TopicPartition
            c = await self._consumer()
            try:
                tps = [TopicPartition(topic, p) for p in range(partitions)]
                ends = await c.end_offsets(tps)
                c.assign(tps)
                starts = {}
                if start == "earliest":
                    await c.seek_to_beginning(*tps)
                    for tp in tps:
                        starts[tp] = await c.position(tp)
                else:
                    found = await c.offsets_for_times({tp: start[1] for tp in tps})
                    for tp in tps:
                        starts[tp] = found[tp].offset if found[tp] is not None else ends[tp]
                        c.seek(tp, starts[tp])
                want = sum(ends[tp] - starts[tp] for tp in tps)
                return _sorted(await self._poll_until(c, want, _deadline()))
            finally:
                await c.stop()
        return asyncio.run(_run())

    def read_latest(self, topic, partitions, produce_late, expected):
        async def _run():
            from aiokafka import TopicPartition
            c = await self._consumer()
            try:
                tps = [TopicPartition(topic, p) for p in range(partitions)]
                ends = await c.end_offsets(tps)
                c.assign(tps)
                await c.seek_to_end(*tps)
                assert {tp: await c.position(tp) for tp in tps} == ends
                assert not await c.getmany(timeout_ms=200), "records before late produce"
                await asyncio.get_running_loop().run_in_executor(None, produce_late)
                return _sorted(await self._poll_until(c, expected, _deadline()))
            finally:
                await c.stop()
        return asyncio.run(_run())


# -- kcat (Debian, librdkafka 2.0.2) -------------------------------------------------
KCAT_FORMAT = "%p\\t%o\\t%T\\t%K\\t%k\\t%S\\t%s\\t%h\\n"


class KcatClient:
    name = "kcat"

    def __init__(self, bootstrap: str):
        self.bootstrap = bootstrap

    def create_topic(self, topic, partitions, **configs):
        ConfluentClient(self.bootstrap).create_topic(topic, partitions, **configs)

    def _run(self, args, stdin: bytes | None = None, timeout=CLIENT_TIMEOUT_S):
        cmd = ["kcat", "-b", self.bootstrap, *args]
        r = subprocess.run(cmd, input=stdin, capture_output=True, timeout=timeout)
        assert r.returncode == 0, f"{cmd} exited {r.returncode}: {r.stderr.decode(errors='replace')}"
        return r.stdout

    def produce(self, topic, msgs, compression="none"):
        """One kcat run per run of messages sharing (partition, headers, keyed-ness):
        kcat's -H and -p apply to a whole run. Timestamps cannot be set (CreateTime = now)."""
        assert all(m.timestamp is None for m in msgs), "kcat cannot set timestamps"
        groups: list[tuple[tuple, list[Out]]] = []
        for m in msgs:
            k = (m.partition, m.headers, m.key is None)
            if groups and groups[-1][0] == k:
                groups[-1][1].append(m)
            else:
                groups.append((k, [m]))
        for (partition, headers, unkeyed), run in groups:
            args = ["-P", "-t", topic, "-X", "acks=all", "-z", compression]
            if partition is not None:
                args += ["-p", str(partition)]
            for hk, hv in headers:
                args += ["-H", f"{hk}={hv.decode()}"]
            if unkeyed:
                lines = [m.value for m in run]
            else:
                args += ["-K", "\t"]
                lines = [m.key + b"\t" + m.value for m in run]
            for line in lines:
                assert b"\n" not in line and line.count(b"\t") <= 1
            self._run(args, b"\n".join(lines) + b"\n")
        return None

    @staticmethod
    def _parse(out: bytes) -> list[Rec]:
        recs = []
        for line in out.split(b"\n"):
            if not line:
                continue
            p, o, ts, klen, key, vlen, value, hdrs = line.split(b"\t")
            assert int(vlen) == len(value)
            headers = []
            if hdrs:
                for kv in hdrs.split(b","):
                    hk, _, hv = kv.partition(b"=")
                    headers.append((hk.decode(), hv))
            recs.append(Rec(int(p), int(o), None if int(klen) < 0 else key, value,
                            tuple(headers), int(ts)))
        return recs

    def read(self, topic, partitions, start="earliest"):
        offset = "beginning" if start == "earliest" else f"s@{start[1]}"
        out = self._run(["-C", "-t", topic, "-o", offset, "-e", "-q", "-f", KCAT_FORMAT])
        return _sorted(self._parse(out))

    def read_latest(self, topic, partitions, produce_late, expected):
        """kcat -o end -c N. kcat prints nothing when its partitions are positioned,
        so its librdkafka fetch debug log is watched for a fetch at every end offset."""
        ends = [hi for _, hi in ConfluentClient(self.bootstrap).watermarks(topic, partitions)]
        cmd = ["kcat", "-b", self.bootstrap, "-C", "-t", topic, "-o", "end", "-c", str(expected),
               "-q", "-f", KCAT_FORMAT, "-d", "fetch"]
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            want = {(p, ends[p]) for p in range(partitions)}
            fetch_re = re.compile(rb"Fetch topic .*?\[(\d+)\] at offset (\d+)")
            deadline = _deadline()
            seen = set()
            for line in proc.stderr:
                for m in fetch_re.finditer(line):
                    seen.add((int(m[1]), int(m[2])))
                if want <= seen or time.monotonic() > deadline:
                    break
            assert want <= seen, f"kcat never fetched at the end offsets {want}, saw {seen}"
            produce_late()
            out, _ = proc.communicate(timeout=CLIENT_TIMEOUT_S)
            assert proc.returncode == 0, f"kcat exited {proc.returncode}"
            return _sorted(self._parse(out))
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()


CLIENTS = {c.name: c for c in (ConfluentClient, KafkaPythonClient, AioKafkaClient, KcatClient)}
CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]
CODEC_IDS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
