"""Medians, ratios and the markdown tables run_suite.py prints (and writes
into docs/performance.md between the markers)."""
from __future__ import annotations

import re
import statistics
from pathlib import Path

BEGIN = "<!-- bench-suite:begin -->"
END = "<!-- bench-suite:end -->"


def med(values) -> float:
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else float("nan")


def flow(runs: list[dict], key: str, field: str) -> float:
    """Median of runs[i][key][field] (key: 'produce' or 'consume')."""
    return med(r[key][field] for r in runs if key in r)


def lat(runs: list[dict], key: str, q: str) -> float:
    return med(r[key]["latency_us"][q] for r in runs if key in r)


def worst_lat(runs: list[dict], key: str, q: str) -> float:
    """The largest of the repeats' latency quantile `q` (outliers stay visible)."""
    values = [r[key]["latency_us"][q] for r in runs if key in r]
    return max(values) if values else float("nan")


def cpu_per_gb(runs: list[dict]) -> float:
    return med(r["broker_cpu_s_per_gb"] for r in runs if r["broker_cpu_s_per_gb"] >= 0)


def _ratio(a: float, b: float) -> float:
    return a / b if b and b == b else float("nan")


def _fmt(v: float, digits: int = 0) -> str:
    if v != v:  # nan
        return "—"
    return f"{v:,.{digits}f}"


def _verdict(value: float, target: float, higher_is_better: bool = True) -> str:
    if value != value:
        return "—"
    ok = value >= target if higher_is_better else value <= target
    return "yes" if ok else "**no**"


def target_rows(res: dict) -> list[list[str]]:
    rows = []
    ref = res.get("reference", {})
    tcp, sendfile = med(ref.get("tcp", [])), med(ref.get("sendfile", []))
    tcp_file = med(ref.get("tcp-file", []))
    if "fetch" in res:
        mbs = flow(res["fetch"]["consume"], "consume", "mb_per_s")
        r = _ratio(mbs, sendfile)
        rows.append(["Fetch, ~1 MiB batches, 1 consumer", f"{_fmt(mbs)} MB/s",
                     f"sendfile {_fmt(sendfile)} MB/s", _fmt(r, 2), "≥ 0.8", _verdict(r, 0.8)])
        raw = med(x["mb_per_s"] for x in res["fetch"].get("raw_fetch", []))
        r = _ratio(raw, sendfile)
        rows.append(["(the same data, read by bench/raw_fetch.py)", f"{_fmt(raw)} MB/s",
                     f"sendfile {_fmt(sendfile)} MB/s", _fmt(r, 2), "—", "—"])
    if "produce" in res:
        p = res["produce"]
        mbs = flow(p["produce_1k_acks1"], "produce", "mb_per_s")
        r = _ratio(mbs, tcp)
        rows.append(["Produce 1 KiB, acks=1, 1 partition", f"{_fmt(mbs)} MB/s",
                     f"loopback TCP {_fmt(tcp)} MB/s", _fmt(r, 2), "≥ 0.5", _verdict(r, 0.5)])
        r = _ratio(mbs, tcp_file)
        rows.append(["(the same, against socket → page cache)", f"{_fmt(mbs)} MB/s",
                     f"TCP into a file {_fmt(tcp_file)} MB/s", _fmt(r, 2), "—", "—"])
        mps = flow(p["produce_100b_acks1"], "produce", "msgs_per_s")
        rows.append(["Produce 100 B, acks=1, 1 partition", f"{_fmt(mps)} msgs/s", "—", "—",
                     "≥ 1,000,000 msgs/s", _verdict(mps, 1e6)])
        alls = flow(p["produce_1k_acksall"], "produce", "mb_per_s")
        r = _ratio(alls, mbs)
        rows.append(["Produce 1 KiB, acks=all (group commit) vs acks=1", f"{_fmt(alls)} MB/s",
                     f"acks=1 {_fmt(mbs)} MB/s", _fmt(r, 2), "≥ 0.5", _verdict(r, 0.5)])
    if "latency" in res:
        runs = res["latency"]
        p99, e99 = lat(runs, "produce", "p99"), lat(runs, "consume", "p99")
        rate = med(r["rate"] for r in runs)
        w99, we99 = worst_lat(runs, "produce", "p99"), worst_lat(runs, "consume", "p99")
        rows.append([f"Produce latency p99 at {_fmt(rate)} msgs/s of 1 KiB",
                     f"{_fmt(p99)} µs (worst repeat {_fmt(w99)} µs)",
                     "—", "—", "≤ 1,000 µs", _verdict(p99, 1000, False)])
        rows.append([f"End-to-end latency p99 at {_fmt(rate)} msgs/s of 1 KiB",
                     f"{_fmt(e99)} µs (worst repeat {_fmt(we99)} µs)",
                     "—", "—", "≤ 2,000 µs", _verdict(e99, 2000, False)])
    if "scale" in res:
        s = res["scale"]
        ms = med(s["metadata_ms"])
        rows.append([f"Metadata, all {s['created']:,} partitions", f"{_fmt(ms, 1)} ms", "—", "—",
                     "≤ 50 ms", _verdict(ms, 50, False)])
        spread = flow(s["spread"], "produce", "mb_per_s")
        single = flow(s["single"], "produce", "mb_per_s")
        r = _ratio(spread, single)
        rows.append([f"Produce 1 KiB over {s['spread_partitions']:,} partitions vs 1",
                     f"{_fmt(spread)} MB/s", f"1 partition {_fmt(single)} MB/s", _fmt(r, 2),
                     "≥ 0.5", _verdict(r, 0.5)])
        a = s["after_create"]
        rows.append([f"Broker with {s['created']:,} of {s['partitions']:,} partitions", f"{_fmt(a['rss_mb'])} MiB RSS, "
                     f"{a['fds']:,} fds", f"idle {_fmt(s['idle']['rss_mb'])} MiB, "
                     f"{s['idle']['fds']} fds", "—", "bounded, reported", "reported"])
    return rows


def detail_rows(res: dict) -> list[list[str]]:
    runs_by_name: list[tuple[str, str, list[dict]]] = []
    if "fetch" in res:
        runs_by_name.append(("fetch ~1 MiB batches (16 KiB records)", "consume",
                             res["fetch"]["consume"]))
        runs_by_name.append(("produce 16 KiB records, ~1 MiB batches (fetch setup, 1 run)",
                             "produce", [res["fetch"]["produce"]]))
    for name, runs in res.get("produce", {}).items():
        runs_by_name.append((name.replace("_", " "), "produce", runs))
    if "latency" in res:
        runs_by_name.append(("latency (producer + consumer)", "produce", res["latency"]))
    if "scale" in res:
        runs_by_name.append((f"produce over {res['scale']['spread_partitions']} partitions",
                             "produce", res["scale"]["spread"]))
        runs_by_name.append(("produce 1 partition (scale broker)", "produce",
                             res["scale"]["single"]))
    rows = []
    for name, key, runs in runs_by_name:
        e2e = "—"
        if any("consume" in r and r["consume"]["latency_us"]["count"] for r in runs) and \
                key == "produce":
            e2e = " / ".join(_fmt(lat(runs, "consume", q)) for q in ("p50", "p99", "p999"))
        plat = " / ".join(_fmt(lat(runs, key, q)) for q in ("p50", "p99", "p999")) \
            if key == "produce" else "—"
        client = med(r["client_cpu_s"] / r["wall_s"] for r in runs if r["wall_s"] > 0)
        wait = med(r["broker_wait_s"] / r["wall_s"] for r in runs
                   if r["wall_s"] > 0 and r.get("broker_wait_s", -1) >= 0)
        rows.append([name, str(len(runs)), _fmt(flow(runs, key, "msgs_per_s")),
                     _fmt(flow(runs, key, "mb_per_s")), plat, e2e, _fmt(cpu_per_gb(runs), 2),
                     _fmt(wait, 2), _fmt(client, 2), str(sum(r[key]["errors"] for r in runs))])
    return rows


def table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def markdown(res: dict, meta: dict) -> str:
    parts = [f"Run {meta['date']} at commit `{meta['commit']}`; {meta['cpu']}, {meta['cores']} cores, "
             f"kernel {meta['kernel']}; {meta['repeats']} repeats, medians; load average "
             f"{meta['load_before']} before, {meta['load_after']} after; mode {meta['mode']}; "
             f"suite took {meta['elapsed_s']:.0f} s. MB = 10^6 bytes of record values.", ""]
    ref = res.get("reference")
    if ref:
        parts += [table(["Reference (this machine)", "MB/s (median)", "runs"], [
            ["loopback TCP, 1 sender, 1 receiver, 1 MiB writes", _fmt(med(ref["tcp"])),
             str(len(ref["tcp"]))],
            ["sendfile from page cache to loopback, 1 MiB chunks", _fmt(med(ref["sendfile"])),
             str(len(ref["sendfile"]))],
            ["loopback TCP into a new file (receiver read()s and write()s), 1 MiB",
             _fmt(med(ref.get("tcp-file", []))), str(len(ref.get("tcp-file", [])))]]), ""]
    parts += [table(["Target", "Measured (median)", "Against", "Ratio", "Target", "Met"],
                    target_rows(res)), ""]
    parts += [table(["Scenario", "runs", "msgs/s", "MB/s", "produce p50/p99/p99.9 µs",
                     "e2e p50/p99/p99.9 µs", "broker CPU s/GB", "broker CPU wait",
                     "client CPU cores", "errors"],
                    detail_rows(res)),
              "", "*broker CPU wait*: fraction of the run the broker was runnable but had no "
              "CPU (schedstat), i.e. taken by other work on this shared machine. *client CPU "
              "cores*: the load generator's CPU seconds per second. Latencies of unthrottled "
              "runs are client queueing time."]
    if "scale" in res:
        s = res["scale"]
        failed = f" (then refused: {s['create_error']})" if s["create_error"] else ""
        if s.get("deleted_for_room"):
            failed += (f"; {s['deleted_for_room']:,} of them were deleted again to make room "
                       f"for the produce runs")
        parts += ["", f"Scale broker: created {s['created']:,} of {s['partitions']:,} partitions "
                  f"in {s['create_s']:.1f} s{failed}; idle {s['idle']}, after create {s['after_create']}, "
                  f"after the produce runs {s['after_produce']}; Metadata response "
                  f"{s['metadata_bytes']:,} bytes, times ms "
                  f"{', '.join(f'{t:.1f}' for t in s['metadata_ms'])}."]
    return "\n".join(parts) + "\n"


def write_doc(doc: Path, text: str, begin: str = BEGIN, end: str = END) -> None:
    """Replaces what lies between `begin` and `end` in `doc` (appends both
    markers first if missing)."""
    content = doc.read_text() if doc.exists() else ""
    if begin not in content or end not in content:
        content += f"\n{begin}\n{end}\n"
    pattern = re.compile(re.escape(begin) + ".*?" + re.escape(end), re.S)
    doc.write_text(pattern.sub(lambda _: f"{begin}\n{text}{end}", content, count=1))
