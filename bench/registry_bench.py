"""Schema registry figures (issue 35): schema lookups per second against
the broker's built-in registry, and produce throughput of small Avro
records with confluent_kafka's AvroSerializer vs the same bytes produced
without it.

    python bench/registry_bench.py [--brokers HOST:PORT --http HOST:PORT]
                                   [--lookups 5000] [--records 50000]

Without --brokers a broker is started in a temporary directory (and
stopped). Lookups: one keep-alive HTTP connection per thread, 1 and 4
threads, GET /schemas/ids/{id} (answered from the broker's view) and GET
/subjects/{s}/versions/latest (which first catches up with the end of
_schemas: one ListOffsets). Produce: one producer, linger.ms=5, acks=1,
one partition, a record of 4 fields; "with serializer" calls the
serializer for every record (the schema id is cached by the client after
the first call). The figures are wall-clock rates and CPU seconds of this
process; on a loaded machine they measure the wait for a core too. A bench,
not a test.
"""
from __future__ import annotations

import argparse
import http.client
import os
import re
import resource
import subprocess
import sys
import tempfile
import threading
import time
import uuid

SCHEMA = ('{"type":"record","name":"Trade","fields":[{"name":"id","type":"long"},'
          '{"name":"sym","type":"string"},{"name":"px","type":"double"},'
          '{"name":"qty","type":"int"}]}')


def _cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


def _start_broker(data: str) -> tuple[subprocess.Popen, str, str]:
    p = subprocess.Popen([sys.executable, "-m", "headrace.cli", "broker", "--data-dir", data,
                          "--listen", "127.0.0.1:0", "--http", "127.0.0.1:0"],
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    listen = http = None
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not (listen and http):
        line = p.stdout.readline()
        m = re.search(r"listening on (\S+) ", line)
        listen = listen or (m and m.group(1))
        m = re.search(r"http on (\S+) ", line)
        http = http or (m and m.group(1))
    if not (listen and http):
        p.kill()
        sys.exit("broker did not start")
    threading.Thread(target=lambda: [None for _ in p.stdout], daemon=True).start()
    return p, listen, http


def _lookups(address: str, path: str, n: int, threads: int) -> float:
    host, port = address.rsplit(":", 1)
    per = n // threads

    def run():
        conn = http.client.HTTPConnection(host, int(port), timeout=30)
        for _ in range(per):
            conn.request("GET", path)
            r = conn.getresponse()
            r.read()
            assert r.status == 200, r.status
        conn.close()

    ts = [threading.Thread(target=run) for _ in range(threads)]
    t0 = time.monotonic()
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return per * threads / (time.monotonic() - t0)


def _produce(brokers: str, topic: str, values, serialize) -> tuple[float, float]:
    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": brokers, "linger.ms": 5, "acks": 1})
    c0, t0 = _cpu(), time.monotonic()
    for v in values:
        while True:
            try:
                p.produce(topic, value=serialize(v), partition=0)
                break
            except BufferError:
                p.poll(0.05)
        p.poll(0)
    assert p.flush(60) == 0
    return len(values) / (time.monotonic() - t0), _cpu() - c0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--brokers")
    ap.add_argument("--http")
    ap.add_argument("--lookups", type=int, default=5000)
    ap.add_argument("--records", type=int, default=50000)
    args = ap.parse_args()
    from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
    from confluent_kafka.schema_registry.avro import AvroSerializer
    from confluent_kafka.serialization import MessageField, SerializationContext

    broker = None
    with tempfile.TemporaryDirectory() as tmp:
        brokers, http = args.brokers, args.http
        if not brokers:
            broker, brokers, http = _start_broker(os.path.join(tmp, "data"))
        try:
            client = SchemaRegistryClient({"url": f"http://{http}"})
            subject = f"bench-{uuid.uuid4().hex[:8]}-value"
            sid = client.register_schema(subject, Schema(SCHEMA, "AVRO"))
            for threads in (1, 4):
                rate = _lookups(http, f"/schemas/ids/{sid}", args.lookups, threads)
                print(f"GET /schemas/ids/{{id}}, {threads} thread(s): {rate:,.0f} lookups/s")
                rate = _lookups(http, f"/subjects/{subject}/versions/latest", args.lookups,
                                threads)
                print(f"GET /subjects/{{s}}/versions/latest, {threads} thread(s): "
                      f"{rate:,.0f} lookups/s")
            topic = subject.removesuffix("-value")
            ser = AvroSerializer(client, SCHEMA)
            ctx = SerializationContext(topic, MessageField.VALUE)
            values = [{"id": i, "sym": "ABCD", "px": 101.25 + i % 7, "qty": i % 100}
                      for i in range(args.records)]
            framed = ser(values[0], ctx)
            rate_raw, cpu_raw = _produce(brokers, topic, [framed] * args.records, lambda b: b)
            rate_ser, cpu_ser = _produce(brokers, topic, values, lambda v: ser(v, ctx))
            print(f"produce {args.records} records of {len(framed)} B, bytes as they are: "
                  f"{rate_raw:,.0f} records/s, {cpu_raw:.2f} CPU s")
            print(f"produce {args.records} records, AvroSerializer per record: "
                  f"{rate_ser:,.0f} records/s, {cpu_ser:.2f} CPU s "
                  f"(ratio {rate_ser / rate_raw:.2f})")
        finally:
            if broker is not None:
                broker.terminate()
                broker.wait(30)


if __name__ == "__main__":
    main()
