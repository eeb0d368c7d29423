"""The side-by-side table of run_suite.py --compare: each scenario's main
figures on headrace and on the peer broker, and their ratio headrace / peer
(written into docs/performance.md between the bench-compare markers)."""
from __future__ import annotations

from suite.peer import PeerSpec
from suite.tables import _fmt, _ratio, cpu_per_gb, flow, lat, med, table

BEGIN = "<!-- bench-compare:begin -->"
END = "<!-- bench-compare:end -->"
NAN = float("nan")


def _case(name: str, field: str):
    """Extractor of a produce case: (median figure, median broker CPU s/GB)."""
    return lambda res: (flow(res["produce"][name], "produce", field),
                        cpu_per_gb(res["produce"][name]))


def _lat(key: str, q: str):
    return lambda res: (lat(res["latency"], key, q), NAN)


def _scale_flow(which: str):
    return lambda res: (flow(res["scale"][which], "produce", "mb_per_s"),
                        cpu_per_gb(res["scale"][which]))


# (scenario, produce case or None, label, extractor(results) -> (value, CPU s/GB), higher is better)
FIGURES = [
    ("fetch", None, "Fetch ~1 MiB batches (16 KiB records), 1 consumer, MB/s",
     lambda r: (flow(r["fetch"]["consume"], "consume", "mb_per_s"),
                cpu_per_gb(r["fetch"]["consume"])), True),
    ("fetch", None, "the same data read by raw_fetch.py, MB/s",
     lambda r: (med(x["mb_per_s"] for x in r["fetch"]["raw_fetch"]), NAN), True),
    ("fetch", None, "Produce 16 KiB records in ~1 MiB batches, acks=1 (fetch setup, 1 run), MB/s",
     lambda r: (r["fetch"]["produce"]["produce"]["mb_per_s"],
                r["fetch"]["produce"]["broker_cpu_s_per_gb"]), True),
    ("produce", "produce_1k_acks1", "Produce 1 KiB, acks=1, 1 partition, MB/s",
     _case("produce_1k_acks1", "mb_per_s"), True),
    ("produce", "produce_100b_acks1", "Produce 100 B, acks=1, 1 partition, msgs/s",
     _case("produce_100b_acks1", "msgs_per_s"), True),
    ("produce", "produce_1k_acksall", "Produce 1 KiB, acks=all, 1 partition, MB/s",
     _case("produce_1k_acksall", "mb_per_s"), True),
    ("latency", None, "Produce latency p50 at {rate} msgs/s of 1 KiB, µs",
     _lat("produce", "p50"), False),
    ("latency", None, "Produce latency p99, µs", _lat("produce", "p99"), False),
    ("latency", None, "End-to-end latency p50, µs", _lat("consume", "p50"), False),
    ("latency", None, "End-to-end latency p99, µs", _lat("consume", "p99"), False),
    ("scale", None, "Create {partitions} partitions (topics of 1,000), s",
     lambda r: (r["scale"]["create_s"], NAN), False),
    ("scale", None, "Metadata for all {partitions} partitions, ms",
     lambda r: (med(r["scale"]["metadata_ms"]), NAN), False),
    ("scale", None, "Broker RSS with {partitions} partitions, MiB",
     lambda r: (r["scale"]["after_create"]["rss_mb"], NAN), False),
    ("scale", None, "Produce 1 KiB over {spread} partitions (scale broker), MB/s",
     _scale_flow("spread"), True),
    ("scale", None, "Produce 1 KiB to 1 partition (scale broker), MB/s",
     _scale_flow("single"), True),
]


def _get(extract, res: dict) -> tuple[float, float]:
    try:
        return extract(res)
    except (KeyError, IndexError, TypeError):
        return NAN, NAN


def _fmt_ratio(r: float) -> str:
    """Two decimals, or two significant digits below 0.1 (not "0.00")."""
    return f"{r:.2g}" if r == r and 0 < r < 0.1 else _fmt(r, 2)


def _digits(v: float) -> int:
    if v != v:
        return 0
    return 2 if abs(v) < 1 else 1 if abs(v) < 100 else 0


def _label_values(res: dict) -> dict[str, str]:
    """What the labels' {fields} stand for in this run."""
    scale = res.get("scale", {})
    return {"rate": _fmt(med(r["rate"] for r in res.get("latency", []))),
            "partitions": _fmt(scale.get("partitions", NAN)),
            "spread": _fmt(scale.get("spread_partitions", NAN))}


def rows(res: dict, peer_res: dict, peer: PeerSpec) -> tuple[list[list[str]], list[str]]:
    """The table's rows, and one line per figure not run on the peer (why)."""
    out, not_run = [], []
    values = _label_values(res)
    for scenario, case, label, extract, higher in FIGURES:
        if scenario not in res:
            continue
        label = label.format(**values)
        skipped = peer.skip.get(case or "") or peer.skip.get(scenario)
        h, h_cpu = _get(extract, res)
        if skipped:
            out.append([label, _fmt(h, _digits(h)), "not run (below)", "—",
                        "higher" if higher else "lower", f"{_fmt(h_cpu, 2)} / —"])
            not_run.append(f"{label}: not run on {peer.name}, {skipped}.")
            continue
        p, p_cpu = _get(extract, peer_res)
        cpu = "—" if h_cpu != h_cpu and p_cpu != p_cpu else \
            f"{_fmt(h_cpu, 2)} / {_fmt(p_cpu, 2)} ({_fmt(_ratio(h_cpu, p_cpu), 2)})"
        out.append([label, _fmt(h, _digits(h)), _fmt(p, _digits(p)), _fmt_ratio(_ratio(h, p)),
                    "higher" if higher else "lower", cpu])
    return out, not_run


def markdown(res: dict, peer_res: dict, peer: PeerSpec, meta: dict) -> str:
    scale = res.get("scale", {})
    peer_scale = peer_res.get("scale", {})
    parts = [
        f"Run {meta['date']} at commit `{meta['commit']}`; {meta['cpu']}, {meta['cores']} cores, "
        f"kernel {meta['kernel']}; {meta['repeats']} repeats, medians; load average "
        f"{meta['load_before']} before, {meta['load_after']} after; mode {meta['mode']}; "
        f"suite took {meta['elapsed_s']:.0f} s. {meta['headrace_version']} "
        f"(default settings: acks=1 answered from the page cache, acks=all after a "
        f"group-committed fsync); {peer.name}: {meta['peer_version']}, storage "
        f"{peer.storage}, so its figures are not durable ones and the comparison favours it "
        f"wherever headrace writes to disk. Both driven by the same headrace-loadgen on "
        f"librdkafka {meta['librdkafka']}, each scenario on headrace first, then on "
        f"{peer.name}, each on a fresh broker. MB = 10^6 bytes of record values.", ""]
    body, not_run = rows(res, peer_res, peer)
    parts.append(table(["Figure (median)", "headrace", peer.name, f"headrace / {peer.name}",
                        "better when", f"broker CPU s/GB: headrace / {peer.name} (ratio)"],
                       body))
    parts += ["", f"The ratio is headrace / {peer.name}: above 1 is headrace ahead where "
              f"higher is better, below 1 where lower is better. Broker CPU s/GB: the "
              f"broker's CPU seconds per GB of values moved (lower is cheaper)."]
    parts += [""] + not_run if not_run else []
    if scale:
        note = (f"Scale partitions: headrace {scale.get('created', 0):,} of "
                f"{scale.get('partitions', 0):,}")
        if scale.get("create_error"):
            note += f" (then refused: {scale['create_error']})"
        if peer_scale:
            note += f", {peer.name} {peer_scale.get('created', 0):,}"
            if peer_scale.get("create_error"):
                note += f" (then refused: {peer_scale['create_error']})"
        parts += ["", note + "."]
    return "\n".join(parts) + "\n"
