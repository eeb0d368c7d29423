"""A streaming job run as its own process by test_spark_kill.py (which kills
it with SIGKILL and restarts it).

Three queries read the same input topic from one SparkSession, each with its
own checkpoint under WORK:
- ``idem``: foreachBatch into files keyed by batch id (idempotent sink);
- ``alo``: the headrace sink, deliveryGuarantee=at-least-once, topic OUT-alo;
- ``amo``: the headrace sink, deliveryGuarantee=at-most-once, topic OUT-amo.

``run`` keeps going (processing-time trigger) until killed; ``finish`` runs
with Trigger.AvailableNow and exits 0 once every query is done.

Usage: python spark_stream_job.py run|finish BOOTSTRAP INPUT_TOPIC OUT_PREFIX WORK MAX_PER_TRIGGER
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from spark_session import spark_session, write_json_atomically  # noqa: E402


def _file_sink(out: Path):
    out.mkdir(parents=True, exist_ok=True)

    def sink(df, batch_id):
        write_json_atomically(out / f"{batch_id}.json", [r.value.decode() for r in df.collect()])
    return sink


def _started(writer, timeout: float = 60.0):
    """Starts a query and waits until its sources are initialised. Staggering
    the starts keeps Spark from spawning every query's Python planner
    processes at once: on a loaded 2-core machine a burst of them can miss
    Spark's fixed 10 s connect-back timeout for a new Python worker."""
    query = writer.start()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and query.isActive \
            and query.status["message"].startswith("Initializing"):
        time.sleep(0.1)
    return query


def main(mode: str, bootstrap: str, topic: str, out_prefix: str, work: str, limit: str) -> int:
    spark = spark_session()
    work_dir = Path(work)
    trigger = {"availableNow": True} if mode == "finish" else {"processingTime": "500 milliseconds"}

    def source():
        return (spark.readStream.format("headrace").option("kafka.bootstrap.servers", bootstrap)
                .option("subscribe", topic).option("startingOffsets", "earliest")
                .option("maxOffsetsPerTrigger", limit).load())

    queries = [_started(source().writeStream.foreachBatch(_file_sink(work_dir / "idem"))
                        .option("checkpointLocation", str(work_dir / "ck-idem"))
                        .trigger(**trigger).queryName("idem"))]
    for name, guarantee in (("alo", "at-least-once"), ("amo", "at-most-once")):
        queries.append(_started(source().select("key", "value").writeStream.format("headrace")
                                .option("kafka.bootstrap.servers", bootstrap)
                                .option("topic", f"{out_prefix}-{name}")
                                .option("deliveryGuarantee", guarantee)
                                .option("checkpointLocation", str(work_dir / f"ck-{name}"))
                                .trigger(**trigger).queryName(name)))
    print("job: queries started", flush=True)
    if mode != "finish":
        spark.streams.awaitAnyTermination()
        return 1   # a run-mode query ended by itself: that is a failure
    failed = 0
    for q in queries:
        try:
            q.awaitTermination()
        except Exception as e:   # StreamingQueryException
            print(f"job: query {q.name} failed: {e}", file=sys.stderr, flush=True)
            failed += 1
    print(f"job: finished, {failed} failed", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:7]))
