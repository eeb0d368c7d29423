"""Where the web console's tables come from: the broker's own Kafka port.

Every figure is asked of the cluster the way any client asks it, through one
cached :class:`headrace.admin.Admin` (confluent-kafka's AdminClient):
Metadata, DescribeCluster, ListOffsets, DescribeConfigs, DescribeLogDirs,
ListGroups, DescribeGroups and OffsetFetch. So the console on any broker
shows the whole cluster, and nothing here touches the broker's data path
beyond answering those requests. The documents are the ones the command line
prints with ``--format json`` (headrace.cli.cluster.cluster_info,
headrace.cli.topic.describe_topic, headrace.cli.group.describe_group), plus
a few totals for the list pages.
"""
from __future__ import annotations

import threading
from typing import Callable

from headrace.errors import HeadraceError

ADMIN_TIMEOUT_S = 5.0   # a page waits at most about this long per request
GROUPS_DESCRIBED = 100  # the group list describes (members, lag) at most this many


class NotFound(HeadraceError):
    """No such topic, partition or group (HTTP 404)."""


class BadRequest(HeadraceError):
    """A malformed parameter (HTTP 400)."""


class ClusterView:
    """Cluster-wide documents for the console's pages. Thread-safe: pages
    are served on several threads and share one AdminClient (librdkafka's
    handles are thread-safe).

    ``bootstrap()`` returns the broker's own Kafka address, ``""`` while it
    is not listening yet (HeadraceError, shown as 503)."""

    def __init__(self, bootstrap: Callable[[], str], timeout: float = ADMIN_TIMEOUT_S):
        self._bootstrap = bootstrap
        self._timeout = timeout
        self._admin = None
        self._lock = threading.Lock()  # guards _admin's creation only

    def admin(self):
        """The cached Admin, created on first use."""
        with self._lock:
            if self._admin is None:
                from headrace.admin import Admin

                address = self._bootstrap()
                if not address:
                    raise HeadraceError("the broker is not listening yet")
                self._admin = Admin(address, timeout=self._timeout)
            return self._admin

    # -- overview --------------------------------------------------------------
    def cluster(self) -> dict:
        """`cluster info` (cluster id, controller, brokers, partition counts),
        each broker completed with the partitions it leads and hosts and its
        log directories (path, volume size and free bytes, bytes of logs)."""
        from headrace.admin import AdminError
        from headrace.cli.cluster import cluster_info

        admin = self.admin()
        doc = cluster_info(admin)
        md = admin.metadata()
        leads: dict[int, int] = {}
        hosts: dict[int, int] = {}
        for t in md.topics.values():
            for p in t.partitions.values():
                leads[p.leader] = leads.get(p.leader, 0) + 1
                for r in p.replicas:
                    hosts[r] = hosts.get(r, 0) + 1
        try:
            dirs = admin.log_dirs()
        except AdminError as e:  # sizes are shown as unknown, the rest stands
            dirs, doc["log_dirs_error"] = [], str(e)
        for b in doc["brokers"]:
            b["leader_partitions"] = leads.get(b["id"], 0)
            b["replica_partitions"] = hosts.get(b["id"], 0)
            b["log_dirs"] = [{"path": d.path, "total_bytes": d.total_bytes,
                              "usable_bytes": d.usable_bytes, "log_bytes": sum(d.sizes.values()),
                              "error": d.error}
                             for d in dirs if d.broker == b["id"]]
        return doc

    # -- topics ----------------------------------------------------------------
    def topics(self) -> dict:
        """Every topic: partitions, replication factor, under-replicated and
        offline partitions, records (end - start offsets) and leader bytes."""
        from confluent_kafka import TopicPartition

        from headrace.admin import AdminError

        admin = self.admin()
        md = admin.metadata()
        tps = [TopicPartition(t, p) for t in sorted(md.topics) for p in md.topics[t].partitions]
        starts = admin.list_offsets(tps, "earliest")
        ends = admin.list_offsets(tps, "latest")
        leader = {(t, p): pm.leader for t, tm in md.topics.items()
                  for p, pm in tm.partitions.items()}
        sizes: dict[str, int] | None = {}
        try:
            for d in admin.log_dirs():
                for (t, p), size in d.sizes.items():
                    if leader.get((t, p)) == d.broker and not d.error:
                        sizes[t] = sizes.get(t, 0) + size
        except AdminError:
            sizes = None
        out = []
        for name in sorted(md.topics):
            parts = md.topics[name].partitions.values()
            out.append({
                "name": name, "partitions": len(parts),
                "replication_factor": max((len(p.replicas) for p in parts), default=0),
                "under_replicated": sum(1 for p in parts
                                        if p.leader != -1 and len(p.isrs) < len(p.replicas)),
                "offline": sum(1 for p in parts if p.leader == -1),
                "records": sum(ends[(name, p.id)] - starts[(name, p.id)] for p in parts),
                "size_bytes": None if sizes is None else sizes.get(name, 0)})
        return {"topics": out}

    def topic(self, name: str) -> dict:
        """`topic describe NAME` (partitions, leaders, replicas, ISR, offsets,
        sizes, configs); NotFound for an unknown topic."""
        from headrace.cli.topic import describe_topic

        admin = self.admin()
        self.require_topic(admin, name)
        return describe_topic(admin, name)

    def require_topic(self, admin, name: str):
        """The TopicMetadata of `name`; NotFound when it does not exist."""
        tm = admin.metadata().topics.get(name)
        if tm is None or not tm.partitions:
            raise NotFound(f"no topic {name!r}")
        return tm

    # -- groups ----------------------------------------------------------------
    def groups(self) -> dict:
        """Every group with its state; the first GROUPS_DESCRIBED also with
        their member count and total lag."""
        from headrace.cli.common import CliError
        from headrace.cli.group import describe_group

        admin = self.admin()
        out = []
        for i, g in enumerate(admin.groups()):
            row = {"group_id": g.group_id, "state": getattr(g.state, "name", str(g.state)),
                   "members": None, "lag": None}
            if i < GROUPS_DESCRIBED:
                try:
                    doc = describe_group(admin, g.group_id)
                except CliError:  # gone since the listing
                    continue
                row["state"] = doc["state"]
                row["members"] = len(doc["members"])
                lags = [o["lag"] for o in doc["offsets"] if o["lag"] is not None]
                row["lag"] = sum(lags) if lags else None
            out.append(row)
        return {"groups": out, "described": min(len(out), GROUPS_DESCRIBED)}

    def group(self, group_id: str) -> dict:
        """`group describe GROUP` (members, assignments, committed offsets,
        lag per partition); NotFound for an unknown group."""
        from headrace.cli.common import CliError
        from headrace.cli.group import describe_group

        try:
            return describe_group(self.admin(), group_id)
        except CliError as e:
            raise NotFound(str(e)) from None

    def close(self) -> None:
        with self._lock:
            self._admin = None
