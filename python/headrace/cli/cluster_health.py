"""What `headrace cluster info` says about the parts that are down.

Metadata alone does not tell a dead broker from a live one for up to
``zookeeper.session.timeout.ms``: its registration, and so the brokers' view,
outlives it until ZooKeeper expires its session. So every broker named (by
Metadata / DescribeCluster, by its ZooKeeper registration, or only as a
replica) is asked for ApiVersions, all at once, within ``PROBE_TIMEOUT_S``;
ZooKeeper is asked ``ruok``. ``annotate`` then marks, in the `cluster info`
document: each broker's status, the brokers down (registered or not), the
offline partitions (no leader, or a leader that does not answer) and the
under-replicated ones (an ISR smaller than the replicas, or a replica on a
broker that is down), each named.
"""
from __future__ import annotations

import threading
from typing import Iterable, Mapping

PROBE_TIMEOUT_S = 1.5  # each broker's ApiVersions, in parallel
ZK_PROBE_TIMEOUT_S = 1.0  # ZooKeeper's ruok
LISTED = 20  # offline / under-replicated partitions named in the table


def probe_brokers(addresses: Mapping[int, tuple[str, int]], settings: Mapping[str, str],
                  timeout: float = PROBE_TIMEOUT_S) -> dict[int, str | None]:
    """{broker id: None if it answered ApiVersions within ``timeout``, else
    why not}, asked in parallel over a connection secured as ``settings``
    (the CLI's client settings) say."""
    from headrace.admin_wire import Connection
    from headrace.wire_codec import WireError

    out: dict[int, str | None] = {b: f"no answer within {timeout:g} s" for b in addresses}
    lock = threading.Lock()

    def ask(broker: int, host: str, port: int) -> None:
        try:
            conn = Connection(host, port, timeout, settings)
            try:
                conn.call(18, 0, b"", flexible=False)  # ApiVersions v0
            finally:
                conn.close()
            why = None
        except WireError as e:
            why = str(e).replace(f"broker {host}:{port}", "").strip(" :") or "unreachable"
        except OSError as e:
            why = e.strerror or str(e) or type(e).__name__
        with lock:
            out[broker] = why

    threads = [threading.Thread(target=ask, args=(b, h, p), daemon=True)
               for b, (h, p) in addresses.items()]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout + 0.5)
    with lock:
        return dict(out)


def zookeeper_status(connect: str, timeout: float = ZK_PROBE_TIMEOUT_S) -> str | None:
    """None when a server of ``connect`` answers ``ruok`` with ``imok``
    within ``timeout``; else why not."""
    from headrace.cluster.zookeeper_server import four_letter_word

    hosts = connect.split("/", 1)[0]
    tried = []
    for item in hosts.split(","):
        host, _, port = item.strip().rpartition(":")
        if not port.isdigit():
            continue
        if four_letter_word(host.strip("[]") or "127.0.0.1", int(port), "ruok",
                            timeout) == "imok":
            return None
        tried.append(item.strip())
    return f"no answer to ruok within {timeout:g} s from {', '.join(tried) or connect}"


def annotate(doc: dict, partitions: Iterable[tuple[str, int, int, list[int], list[int]]],
             down: Mapping[int, str | None]) -> dict:
    """Adds to a `cluster info` document: ``brokers[i].status`` ("up" /
    "down") and ``.error``; ``down_brokers`` [{"id", "error"}] (a broker
    only named as a replica is "not registered"); ``offline`` and
    ``under_replicated`` (the partitions, named) with their counts
    ``offline_partitions`` / ``under_replicated_partitions``.
    ``partitions``: (topic, partition, leader, replicas, isr)."""
    registered = {b["id"] for b in doc["brokers"]}
    for b in doc["brokers"]:
        why = down.get(b["id"])
        b["status"] = "down" if why else "up"
        if why:
            b["error"] = why
    dead = {b: why for b, why in down.items() if why}
    offline, under = [], []
    total = 0
    for topic, p, leader, replicas, isr in partitions:
        total += 1
        for r in replicas:
            if r not in registered and r not in dead:
                dead[r] = "not registered"
        if leader == -1 or leader in dead or leader not in registered:
            why = "no leader" if leader == -1 else \
                f"leader {leader} {'down' if leader in dead else 'not registered'}"
            offline.append({"topic": topic, "partition": p, "leader": leader,
                            "replicas": list(replicas), "isr": list(isr), "reason": why})
            continue
        lost = [r for r in replicas if r in dead]
        if len(isr) < len(replicas) or lost:
            under.append({"topic": topic, "partition": p, "leader": leader,
                          "replicas": list(replicas), "isr": list(isr),
                          "offline_replicas": lost})
    doc["partitions"] = total
    doc["down_brokers"] = [{"id": b, "error": why} for b, why in sorted(dead.items())]
    doc["offline"] = offline
    doc["offline_partitions"] = len(offline)
    doc["under_replicated"] = under
    doc["under_replicated_partitions"] = len(under)
    return doc


def health_lines(doc: dict) -> list[str]:
    """The table's lines about what is down (none when all is well)."""
    lines = []
    zk = doc.get("zookeeper") or {}
    if zk.get("status") == "down":
        lines.append(f"ZOOKEEPER DOWN  {zk.get('connect')}: {zk.get('error')}")
    for b in doc.get("down_brokers", []):
        lines.append(f"BROKER {b['id']} DOWN  {b['error']}")
    for p in doc.get("offline", [])[:LISTED]:
        lines.append(f"  offline          {p['topic']}-{p['partition']}: {p['reason']} "
                     f"(replicas {p['replicas']}, isr {p['isr']})")
    for p in doc.get("under_replicated", [])[:LISTED]:
        extra = f", offline replicas {p['offline_replicas']}" if p["offline_replicas"] else ""
        lines.append(f"  under-replicated {p['topic']}-{p['partition']}: leader {p['leader']}, "
                     f"replicas {p['replicas']}, isr {p['isr']}{extra}")
    more = max(0, len(doc.get("offline", [])) - LISTED) + \
        max(0, len(doc.get("under_replicated", [])) - LISTED)
    if more:
        lines.append(f"  ... and {more} more (--format json lists them all)")
    return lines
