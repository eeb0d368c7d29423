#!/usr/bin/env python3
"""What ``valueFormat=avro`` costs the Spark source (issue 35): on the same
registry-framed Avro records, the source's executor reader alone
(headrace.spark.range_reader.read_range, no Spark) with the value left as
bytes and with it decoded into the typed struct, the decoding step alone
(avro_columns.BatchDecoder on batches read beforehand), and
``spark.read.format("headrace")`` -> an aggregate over the value, plain
against decoded; the same records framed as JSON (valueFormat=json,
decoded by pyarrow's JSON reader); and a copy through the sink
(at-least-once), bytes to bytes against Avro decoded to Avro encoded.

    bench/spark_avro_bench.py [--records 200000] [--partitions 4] [--repeats 3]
                              [--no-spark] [--master local[2]]

Starts its own broker (a temporary data directory; its built-in schema
registry) and, unless --no-spark, a SparkSession with the tests' settings.
The records are the tests' order records (a nested record, an array, a
nullable string, an enum, a timestamp-millis): about 60 bytes framed.
Prints records/s per case (median of the interleaved repeats). Never
pass/fail.
"""
from __future__ import annotations

import argparse
import datetime
import io
import json
import os
import statistics
import struct
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO / "bench"))

SCHEMA = {"type": "record", "name": "Order", "namespace": "shop", "fields": [
    {"name": "id", "type": "long"},
    {"name": "address", "type": {"type": "record", "name": "Address", "fields": [
        {"name": "city", "type": "string"}, {"name": "zip", "type": ["null", "int"]}]}},
    {"name": "tags", "type": {"type": "array", "items": "string"}},
    {"name": "note", "type": ["null", "string"], "default": None},
    {"name": "status", "type": {"type": "enum", "name": "Status",
                                "symbols": ["NEW", "PAID", "SHIPPED"]}},
    {"name": "at", "type": {"type": "long", "logicalType": "timestamp-millis"}}]}


JSON_SCHEMA = {"type": "object", "properties": {
    "id": {"type": "integer"},
    "address": {"type": "object", "properties": {"city": {"type": "string"},
                                                 "zip": {"type": ["null", "integer"]}}},
    "tags": {"type": "array", "items": {"type": "string"}},
    "note": {"type": ["null", "string"]}, "status": {"type": "string"},
    "at": {"type": "string"}}}


def _fill(bs: str, registry: str, topic: str, records: int, partitions: int,
          kind: str = "AVRO") -> None:
    """The order records, framed Avro (or JSON, the timestamp as ISO text)."""
    import fastavro
    from confluent_kafka import Producer
    from confluent_kafka.schema_registry import Schema, SchemaRegistryClient

    schema_id = SchemaRegistryClient({"url": registry}).register_schema(
        f"{topic}-value", Schema(json.dumps(SCHEMA if kind == "AVRO" else JSON_SCHEMA), kind))
    parsed = fastavro.parse_schema(SCHEMA)
    frame = b"\0" + struct.pack(">I", schema_id)
    t0 = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)
    p = Producer({"bootstrap.servers": bs, "linger.ms": 20, "batch.size": 1_000_000,
                  "acks": "all"})
    for i in range(records):
        buf = io.BytesIO()
        buf.write(frame)
        rec = {"id": i, "address": {"city": f"city{i % 1000}", "zip": None if i % 2 else i % 99999},
               "tags": [f"t{j}" for j in range(i % 3)], "note": None if i % 3 else "a note",
               "status": ("NEW", "PAID", "SHIPPED")[i % 3],
               "at": t0 + datetime.timedelta(milliseconds=i)}
        if kind == "AVRO":
            fastavro.schemaless_writer(buf, parsed, rec)
        else:
            buf.write(json.dumps({**rec, "at": rec["at"].isoformat()}).encode())
        while True:
            try:
                p.produce(topic, value=buf.getvalue(), partition=i % partitions)
                break
            except BufferError:
                p.poll(0.05)
    assert p.flush(60) == 0


def _ranges(topic: str, partitions: int, records: int):
    from headrace.spark.offsets import OffsetRange
    per = records // partitions
    return [OffsetRange(topic, p, 0, per + (1 if p < records % partitions else 0))
            for p in range(partitions)]


def _reader(options: dict, schema, ranges) -> list:
    from headrace.spark.options import parse_source_options
    from headrace.spark.range_reader import read_range
    opts = parse_source_options(options, False)
    return [b for r in ranges for b in read_range(opts, schema, r)]


def _timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--records", type=int, default=200_000)
    ap.add_argument("--partitions", type=int, default=4)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--no-spark", action="store_true")
    a = ap.parse_args()

    import pyarrow.compute as pc
    from broker_process import BrokerProcess, http_address
    from spark_session import create_topic

    from headrace.spark.avro_columns import BatchDecoder
    from headrace.spark.registry_format import parse_registry_format
    from headrace.spark.schema import source_schema, typed_source_schema

    tmp = tempfile.mkdtemp(prefix="spark-avro-bench-")
    broker = BrokerProcess(os.path.join(tmp, "broker")).start()
    try:
        bs, topic = broker.bootstrap, "avro-bench"
        host, port = http_address(broker)
        registry = f"http://{host}:{port}"
        create_topic(bs, topic, partitions=a.partitions)
        _fill(bs, registry, topic, a.records, a.partitions)
        create_topic(bs, "json-bench", partitions=a.partitions)
        _fill(bs, registry, "json-bench", a.records, a.partitions, "JSON")
        as_json = {"kafka.bootstrap.servers": bs, "subscribe": "json-bench",
                   "valueformat": "json", "schema.registry.url": registry}
        typed_json = typed_source_schema(False, parse_registry_format(as_json, sink=False),
                                         "json-bench")
        json_ranges = _ranges("json-bench", a.partitions, a.records)
        plain = {"kafka.bootstrap.servers": bs, "subscribe": topic}
        avro = {**plain, "valueformat": "avro", "schema.registry.url": registry}
        fmt = parse_registry_format(avro, sink=False)
        typed = typed_source_schema(False, fmt, topic)
        ranges = _ranges(topic, a.partitions, a.records)
        raw_batches = _reader(plain, source_schema(False), ranges)
        value = typed["value"]
        decoder = BatchDecoder(fmt, value.metadata["headrace.avroSchema"], value.dataType,
                               topic, 0)
        cases = {
            "reader alone, value as bytes": lambda: _reader(plain, source_schema(False), ranges),
            "reader alone, value decoded": lambda: _reader(avro, typed, ranges),
            "decoding alone (BatchDecoder)": lambda: [decoder.decode(b) for b in raw_batches],
            "reader alone, JSON value decoded": lambda: _reader(as_json, typed_json,
                                                                json_ranges),
        }
        if not a.no_spark:
            from pyspark.sql import functions as F
            from spark_sink_bench import _session
            spark = _session(a.master)

            def load(**extra):
                r = spark.read.format("headrace").option("kafka.bootstrap.servers", bs) \
                    .option("subscribe", topic)
                for k, v in extra.items():
                    r = r.option(k, v)
                return r.load()
            cases["Spark: sum(length(value)), bytes"] = \
                lambda: load().agg(F.sum(F.length("value"))).collect()
            cases["Spark: sum(value.id), decoded"] = lambda: load(
                valueFormat="avro", **{"schema.registry.url": registry}) \
                .agg(F.sum("value.id")).collect()
            cases["Spark: sum(value.id), JSON decoded"] = lambda: spark.read.format("headrace") \
                .option("kafka.bootstrap.servers", bs).option("subscribe", "json-bench") \
                .option("valueFormat", "json").option("schema.registry.url", registry).load() \
                .agg(F.sum("value.id")).collect()
            create_topic(bs, "avro-bench-out", partitions=a.partitions)

            def write(df, **extra):
                w = df.write.format("headrace").option("kafka.bootstrap.servers", bs) \
                    .option("topic", "avro-bench-out")
                for k, v in extra.items():
                    w = w.option(k, v)
                w.mode("append").save()
            cases["Spark: bytes read -> bytes written"] = \
                lambda: write(load().select("key", "value"))
            cases["Spark: Avro decoded -> Avro encoded, written"] = lambda: write(
                load(valueFormat="avro", **{"schema.registry.url": registry})
                .select("key", "value"), valueFormat="avro",
                **{"schema.registry.url": registry})
            for fn in list(cases.values())[4:]:
                fn()   # warm-up: JVM, Python workers
        runs: dict[str, list[float]] = {name: [] for name in cases}
        for r in range(a.repeats):
            for name, fn in cases.items():
                secs, _ = _timed(fn)
                runs[name].append(secs)
                print(f"{name}: {secs:.2f}s {a.records / secs:,.0f} records/s "
                      f"(load {os.getloadavg()[0]:.1f})", flush=True)
        avro_bytes = sum(pc.sum(pc.binary_length(b.column("value"))).as_py()
                         for b in raw_batches)
        print(f"\n{a.records} records of about {avro_bytes // a.records} bytes framed, "
              f"{a.partitions} partitions, {a.repeats} repeats, medians:")
        json_bytes = sum(pc.sum(pc.binary_length(b.column("value"))).as_py()
                         for b in _reader({"kafka.bootstrap.servers": bs,
                                           "subscribe": "json-bench"}, source_schema(False),
                                          json_ranges))
        print(f"  (JSON: about {json_bytes // a.records} bytes framed)")
        for name, secs in runs.items():
            print(f"  {name}: {a.records / statistics.median(secs):,.0f} records/s")
    finally:
        broker.kill()
    return 0


if __name__ == "__main__":
    sys.exit(main())
