"""Clickstream example: click events -> windowed page counts -> a result topic.

Runs with one command (pyspark 4.2+, pyarrow and headrace installed)::

    python integrations/spark/examples/clickstream.py

It starts an embedded headrace broker (or uses ``--bootstrap HOST:PORT``),
produces synthetic click events to ``clicks``, then runs two streaming
queries over them with Trigger.AvailableNow:

1. counts per page in 30-second event-time windows, written to the topic
   ``page-counts`` by the headrace sink (at-least-once, complete output
   mode: every micro-batch writes each window's current count as a JSON
   value keyed by page);
2. the same events into an idempotent sink: foreachBatch writes batch N to
   ``<out>/batch-N.json`` (replaced, never appended), so a micro-batch that
   Spark replays after a crash overwrites its own file - exactly-once
   output from the replayable source.

Finally it reads ``page-counts`` back with a batch query and prints the
final count of every (window, page); their total equals the events sent.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import tempfile
from pathlib import Path

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

PAGES = ["/home", "/search", "/cart", "/checkout", "/help"]
BASE_MS = 1_700_000_000_000   # event time of the first click


def produce_clicks(bootstrap: str, count: int) -> None:
    """``count`` JSON click events spread over 2 minutes of event time."""
    rnd = random.Random(7)
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all",
                         "partitioner": "murmur2_random"})  # Kafka's key placement
    for i in range(count):
        event = {"user": f"u{rnd.randrange(50)}", "page": rnd.choice(PAGES),
                 "ts": BASE_MS + i * 120_000 // count}
        producer.produce("clicks", key=event["user"].encode(), value=json.dumps(event).encode())
        producer.poll(0)
    assert producer.flush(30) == 0


def create_topics(bootstrap: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for fut in admin.create_topics([NewTopic("clicks", 2, 1), NewTopic("page-counts", 1, 1)]).values():
        fut.result(30)


def build_spark():
    from pyspark.sql import SparkSession

    import headrace.spark

    spark = (SparkSession.builder.master("local[2]").appName("headrace-clickstream")
             .config("spark.ui.showConsoleProgress", "false")
             .config("spark.sql.shuffle.partitions", "2")
             .config("spark.sql.session.timeZone", "UTC").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    headrace.spark.register(spark)   # format("headrace") from here on
    return spark


def clicks(spark, bootstrap: str):
    """The source: same options as Spark's Kafka source."""
    from pyspark.sql import functions as F

    raw = (spark.readStream.format("headrace")
           .option("kafka.bootstrap.servers", bootstrap)
           .option("subscribe", "clicks")
           .option("startingOffsets", "earliest")
           .option("maxOffsetsPerTrigger", "500")
           .load())
    parsed = F.from_json(F.col("value").cast("string"), "user string, page string, ts long")
    return (raw.select(parsed.alias("e"))
            .select("e.user", "e.page", F.timestamp_millis("e.ts").alias("ts")))


def run_page_counts(spark, bootstrap: str, checkpoint: str) -> None:
    from pyspark.sql import functions as F

    # Complete mode: each micro-batch writes the current count of every
    # (window, page); the latest record per key is the final count. (Spark
    # offers Python data source sinks append and complete, not update.)
    counts = clicks(spark, bootstrap).groupBy(F.window("ts", "30 seconds"), "page").count()
    out = counts.select(
        F.col("page").alias("key"),
        F.to_json(F.struct(F.col("window.start").cast("string").alias("window"),
                           "page", "count")).alias("value"))
    query = (out.writeStream.format("headrace").outputMode("complete")
             .option("kafka.bootstrap.servers", bootstrap)
             .option("topic", "page-counts")
             .option("deliveryGuarantee", "at-least-once")
             .option("checkpointLocation", checkpoint)
             .trigger(availableNow=True).start())
    query.awaitTermination()


def run_idempotent_copy(spark, bootstrap: str, checkpoint: str, out_dir: Path) -> None:
    def write_batch(df, batch_id: int) -> None:
        rows = [r.asDict() for r in df.selectExpr("user", "page", "cast(ts as string) ts").collect()]
        tmp = out_dir / f".batch-{batch_id}.tmp"
        tmp.write_text(json.dumps(rows))
        os.replace(tmp, out_dir / f"batch-{batch_id}.json")   # one file per batch id

    query = (clicks(spark, bootstrap).writeStream.foreachBatch(write_batch)
             .option("checkpointLocation", checkpoint).trigger(availableNow=True).start())
    query.awaitTermination()


def final_counts(spark, bootstrap: str) -> dict:
    """Latest update per (window, page) from the result topic."""
    rows = (spark.read.format("headrace").option("kafka.bootstrap.servers", bootstrap)
            .option("subscribe", "page-counts").load()
            .selectExpr("offset", "cast(value as string) v").orderBy("offset").collect())
    latest = {}
    for r in rows:
        v = json.loads(r.v)
        latest[(v["window"], v["page"])] = v["count"]
    return latest


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bootstrap", help="an existing broker (default: start an embedded one)")
    ap.add_argument("--events", type=int, default=2000)
    args = ap.parse_args()
    broker = None
    if args.bootstrap is None:
        import headrace
        broker = headrace.EmbeddedBroker().start()
    bootstrap = args.bootstrap or broker.bootstrap_servers
    work = Path(tempfile.mkdtemp(prefix="clickstream-"))
    try:
        create_topics(bootstrap)
        produce_clicks(bootstrap, args.events)
        spark = build_spark()
        run_page_counts(spark, bootstrap, str(work / "ck-counts"))
        (work / "copy").mkdir()
        run_idempotent_copy(spark, bootstrap, str(work / "ck-copy"), work / "copy")
        counts = final_counts(spark, bootstrap)
        for (window, page), n in sorted(counts.items()):
            print(f"{window}  {page:<10} {n}")
        copied = sum(len(json.loads(p.read_text())) for p in (work / "copy").glob("batch-*.json"))
        print(f"events sent {args.events}; counted {sum(counts.values())}; "
              f"copied exactly once {copied}")
        spark.stop()
    finally:
        if broker is not None:
            broker.stop()


if __name__ == "__main__":
    main()
