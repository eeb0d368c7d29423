"""The standard load scenarios of issue 8. Each returns plain dicts/lists of
per-repeat results; tables.py turns them into medians and ratios."""
from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from headrace.admin import Admin
from headrace.errors import HeadraceError

from suite import tools as T
from suite.broker import SuiteBroker
from suite.peer import PeerSpec, TansuProcess

# librdkafka settings for ~1 MiB batches: batch.size just under the broker's
# max.message.bytes (1048588) and a request limit that fits one such batch.
BIG_BATCH = ["--batch-size", "1040000", "--linger-ms", "50",
             "--pset", "message.max.bytes=2000000"]
# A consumer that asks for 16 batches per partition per fetch.
BIG_FETCH = ["--cset", "max.partition.fetch.bytes=16777216",
             "--cset", "fetch.max.bytes=52428800"]


@dataclass
class Settings:
    repeats: int = 3
    duration_s: float = 8.0          # produce runs
    reference_s: float = 3.0
    fetch_mb: int = 1000             # data read back by the fetch scenario
    latency_rate: int = 50000
    latency_s: float = 8.0
    scale_partitions: int = 10000
    spread_partitions: int = 1000
    metadata_repeats: int = 9
    broker_cmd: str | None = None
    broker_args: list[str] = field(default_factory=list)
    profile_dir: Path | None = None  # perf record the first repeat of the two main paths


@dataclass
class Context:
    tools: T.Tools
    settings: Settings
    data_root: Path
    log: callable = print
    # Set for the side-by-side pass (run_suite.py --compare): brokers are
    # the peer's (peer_bin), not headrace.
    peer: PeerSpec | None = None
    peer_bin: Path | None = None

    def skipped(self, name: str) -> bool:
        """Whether scenario or produce case `name` is not run on this broker."""
        return self.peer is not None and name in self.peer.skip

    def settle(self) -> None:
        """Writes back every dirty page now (sync), so that a run does not
        pay for the writeback of what earlier runs wrote: on ext4 an append
        to a page that writeback holds locked waits for it (pwrite was seen
        blocked ~100 ms in __filemap_get_folio while 1 GB was flushed)."""
        t0 = time.perf_counter()
        os.sync()
        took = time.perf_counter() - t0
        if took > 0.5:
            self.log(f"    (sync before the run took {took:.1f} s)")

    @contextlib.contextmanager
    def broker(self, name: str, *headrace_args: str):
        """A fresh broker (own data dir), stopped at the end; `headrace_args`
        are added to a headrace broker's command line (not to a peer's)."""
        self.settle()
        data = Path(tempfile.mkdtemp(prefix=f"{name}-", dir=self.data_root))
        if self.peer is not None:
            b = TansuProcess(self.peer_bin, data)
        else:
            b = SuiteBroker(data, *headrace_args, *self.settings.broker_args,
                            broker_cmd=self.settings.broker_cmd)
        b.start()
        self.log(f"  broker pid {b.pid} on {b.bootstrap} ({b.backend}), data {data}")
        try:
            yield b
        finally:
            if b.running:
                b.stop()

    def loadgen(self, b: SuiteBroker, mode: str, topic: str, *args: str) -> dict:
        r = T.loadgen(self.tools, mode, b.bootstrap, topic, b.pid, *args)
        flow = r.get("consume" if mode == "consume" else "produce", {})
        self.log(f"    {mode} {topic}: {flow.get('msgs_per_s', 0):,.0f} msgs/s "
                 f"{flow.get('mb_per_s', 0):,.1f} MB/s, broker "
                 f"{r['broker_cpu_s_per_gb']:.2f} CPU s/GB, errors {flow.get('errors')}")
        return r


@contextlib.contextmanager
def profiled(ctx: Context, b: SuiteBroker, name: str, enabled: bool):
    """perf record -g of the broker while the body runs (if enabled)."""
    if not enabled or ctx.settings.profile_dir is None:
        yield
        return
    ctx.settings.profile_dir.mkdir(parents=True, exist_ok=True)
    out = ctx.settings.profile_dir / f"{name}.perf.data"
    perf = subprocess.Popen(["perf", "record", "-e", "cpu-clock", "-F", "999", "-g",
                             "-p", str(b.pid), "-o", str(out)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(0.5)
    try:
        yield
    finally:
        perf.send_signal(signal.SIGINT)
        perf.wait(60)
        ctx.log(f"    profile written to {out}")


def reference(ctx: Context) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {"tcp": [], "sendfile": [], "tcp-file": []}
    for _ in range(ctx.settings.repeats):
        r = T.reference(ctx.tools, ctx.settings.reference_s, ctx.data_root)
        ctx.log(f"    tcp {r['tcp']:,.0f} MB/s, sendfile {r['sendfile']:,.0f} MB/s, "
                f"tcp-file {r['tcp-file']:,.0f} MB/s")
        for k in out:
            out[k].append(r[k])
    return out


def fetch_1mib(ctx: Context) -> dict:
    """Produces fetch_mb of 16 KiB records in ~1 MiB batches, then reads it
    all back `repeats` times with one consumer (page cache)."""
    s = ctx.settings
    count = s.fetch_mb * 1_000_000 // 16384
    with ctx.broker("fetch") as b:
        Admin(b.bootstrap, 60).create_topic("fetch", 1)
        produce = ctx.loadgen(b, "produce", "fetch", "--size", "16384", "--count", str(count),
                              "--acks", "1", *BIG_BATCH)
        runs, raw = [], []
        for i in range(s.repeats):
            with profiled(ctx, b, "fetch_1mib", i == 0):
                runs.append(ctx.loadgen(b, "consume", "fetch", "--partitions", "1", *BIG_FETCH))
            # The same data read by a bare Fetch reader: the broker without
            # the client library's per-fetch cost.
            raw.append(T.raw_fetch(b.bootstrap, "fetch", 16384))
            ctx.log(f"    raw_fetch fetch: {raw[-1]['mb_per_s']:,.1f} MB/s in "
                    f"{raw[-1]['fetches']} fetches")
    return {"produce": produce, "consume": runs, "raw_fetch": raw}


# (case name, topic partitions, loadgen args); run interleaved per repeat.
PRODUCE_CASES = [
    ("produce_1k_acks1", 1, ["--size", "1024", "--acks", "1"]),
    ("produce_100b_acks1", 1, ["--size", "100", "--acks", "1"]),
    ("produce_1k_acksall", 1, ["--size", "1024", "--acks", "all"]),
]


def _produce_case(ctx: Context, b: SuiteBroker, admin: Admin, topic: str, partitions: int,
                  args: list[str], profile: str | None = None) -> dict:
    admin.create_topic(topic, partitions)
    with profiled(ctx, b, profile or "", profile is not None):
        r = ctx.loadgen(b, "produce", topic, "--partitions", str(partitions),
                        "--duration", str(ctx.settings.duration_s), *args)
    admin.delete_topic(topic)  # keeps the disk footprint to one run
    return r


def produce(ctx: Context) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {name: [] for name, _, _ in PRODUCE_CASES
                                  if not ctx.skipped(name)}
    with ctx.broker("produce") as b:
        admin = Admin(b.bootstrap, 60)
        for i in range(ctx.settings.repeats):
            for name, partitions, args in PRODUCE_CASES:
                if ctx.skipped(name):
                    continue
                profile = name if i == 0 and name == "produce_100b_acks1" else None
                out[name].append(_produce_case(ctx, b, admin, f"{name}-{i}", partitions, args,
                                               profile))
    return out


def latency(ctx: Context) -> list[dict]:
    """1 KiB records at a fixed rate, producer and consumer at once."""
    s = ctx.settings
    runs = []
    with ctx.broker("latency") as b:
        admin = Admin(b.bootstrap, 60)
        for i in range(s.repeats):
            topic = f"latency-{i}"
            admin.create_topic(topic, 1)
            ctx.settle()
            runs.append(ctx.loadgen(b, "both", topic, "--size", "1024", "--acks", "1",
                                    "--linger-ms", "0", "--rate", str(s.latency_rate),
                                    "--duration", str(s.latency_s)))
            r = runs[-1]
            ctx.log(f"      produce p99 {r['produce']['latency_us']['p99']:.0f} us, "
                    f"e2e p99 {r['consume']['latency_us']['p99']:.0f} us")
            admin.delete_topic(topic)
    return runs


SCALE_TOPIC_PARTITIONS = 1000  # the scale topics are created this many partitions at a time


def _create_many(ctx: Context, admin: Admin, total: int, out: dict) -> None:
    """Creates `total` partitions as topics scale-0, scale-1, ... of at most
    SCALE_TOPIC_PARTITIONS each; stops at the first refusal (e.g. out of file
    descriptors) and records how far it got."""
    out["created"], out["create_error"] = 0, ""
    t0 = time.perf_counter()
    i = 0
    while out["created"] < total:
        n = min(SCALE_TOPIC_PARTITIONS, total - out["created"])
        try:
            admin.create_topic(f"scale-{i}", n)
        except HeadraceError as e:
            out["create_error"] = f"scale-{i} ({n} partitions): {e}"
            break
        out["created"] += n
        i += 1
    out["create_s"] = time.perf_counter() - t0
    out["topics"] = i


def _make_room(ctx: Context, admin: Admin, out: dict) -> None:
    """After a refused create, deletes the newest scale topics so the spread
    and single-partition topics fit (same files per partition)."""
    need = ctx.settings.spread_partitions + 1
    out["deleted_for_room"] = 0
    while out["create_error"] and out["topics"] > 0 and out["deleted_for_room"] < need + 1000:
        out["topics"] -= 1
        admin.delete_topic(f"scale-{out['topics']}")
        out["deleted_for_room"] += SCALE_TOPIC_PARTITIONS
    if out["deleted_for_room"]:
        time.sleep(2)  # let the deleter close the files
        ctx.log(f"    deleted {out['deleted_for_room']:,} scale partitions to make room")


def scale(ctx: Context) -> dict:
    """Many partitions on one broker: memory, files, Metadata time, and
    produce spread over many partitions vs one (paired, same broker)."""
    s = ctx.settings
    out: dict = {"partitions": s.scale_partitions, "spread_partitions": s.spread_partitions,
                 "spread": [], "single": []}
    # headrace.max.partitions (default 10,000) must leave room for the
    # spread and single-partition topics on top of the scale partitions
    # (main's suite stopped at its refusal once that limit came in).
    limit = s.scale_partitions + 2 * (s.spread_partitions + 1)  # + a deleted one's slack
    with ctx.broker("scale", "--set", f"headrace.max.partitions={limit}") as b:
        admin = Admin(b.bootstrap, 300)
        out["idle"] = {"rss_mb": b.rss_mb(), "fds": b.open_fds(), "threads": b.threads()}
        _create_many(ctx, admin, s.scale_partitions, out)
        out["after_create"] = {"rss_mb": b.rss_mb(), "fds": b.open_fds(), "threads": b.threads()}
        ctx.log(f"    created {out['created']:,} of {s.scale_partitions:,} partitions in "
                f"{out['create_s']:.1f} s: {out['after_create']} {out['create_error']}")
        out["metadata_ms"], out["metadata_bytes"] = T.metadata_all_ms(b.host, b.port,
                                                                      s.metadata_repeats)
        ctx.log(f"    metadata for all: {sorted(out['metadata_ms'])[len(out['metadata_ms']) // 2]:.1f}"
                f" ms median, {out['metadata_bytes']:,} bytes")
        _make_room(ctx, admin, out)
        args = ["--size", "1024", "--acks", "1"]
        for i in range(s.repeats):
            out["spread"].append(_produce_case(ctx, b, admin, f"spread-{i}", s.spread_partitions,
                                               args, "produce_spread" if i == 0 else None))
            out["single"].append(_produce_case(ctx, b, admin, f"single-{i}", 1, args))
        out["after_produce"] = {"rss_mb": b.rss_mb(), "fds": b.open_fds(), "threads": b.threads()}
    return out


SCENARIOS = {
    "reference": reference,
    "fetch": fetch_1mib,
    "produce": produce,
    "latency": latency,
    "scale": scale,
}
