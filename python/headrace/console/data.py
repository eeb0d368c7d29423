"""Where the web console's tables come from: the broker's own Kafka port.

Every figure is asked of the cluster the way any client asks it, through one
cached :class:`ConsoleAdmin` (a headrace.admin.Admin: confluent-kafka's
AdminClient) per viewer — the console's own, or a logged-in user's with
that user's credentials (headrace.console.auth), so the broker's
authorizer decides what each viewer sees:
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

from headrace.admin import BROKER_ANSWER_S, Admin
from headrace.errors import HeadraceError

ADMIN_TIMEOUT_S = 5.0   # a page waits at most about this long per request
CONSOLE_READ_S = 3.5    # the per-broker steps of one page end within this
GROUPS_DESCRIBED = 100  # the group list describes (members, lag) at most this many


class NotFound(HeadraceError):
    """No such topic, partition or group (HTTP 404)."""


class BadRequest(HeadraceError):
    """A malformed parameter (HTTP 400)."""


class Forbidden(HeadraceError):
    """The viewer may see a resource but not do this with it (HTTP 403)."""


class ConsoleAdmin(Admin):
    """An Admin whose Metadata is asked of this broker itself (the console
    runs in it, so it answers), over the wire
    (headrace.admin_wire.cluster_metadata), with the same credentials:
    librdkafka sends Metadata to any broker it holds a connection to, a
    hung one included, and then waits. Falls back to librdkafka's when this
    broker does not answer within BROKER_ANSWER_S."""

    def read_deadline(self) -> float:
        """CONSOLE_READ_S from now: a page's per-broker steps end by then,
        leaving the rest of its 5 s to Metadata, rendering and a loaded
        machine."""
        import time

        return time.monotonic() + min(self.timeout, CONSOLE_READ_S)

    def metadata(self, topic: str | None = None):
        from headrace.admin_wire import Connection, cluster_metadata
        from headrace.wire_codec import WireError

        host, _, port = self.brokers.split(",")[0].rpartition(":")
        try:
            conn = Connection(host.strip("[]"), int(port), min(self.timeout, BROKER_ANSWER_S),
                              self.settings)
            try:
                return cluster_metadata(conn)
            finally:
                conn.close()
        except (WireError, OSError, ValueError):
            return super().metadata(topic)


class ClusterView:
    """Cluster-wide documents for the console's pages. Thread-safe: pages
    are served on several threads and share one AdminClient (librdkafka's
    handles are thread-safe).

    ``bootstrap()`` returns the broker's Kafka address to connect to, ``""``
    while it is not listening yet (HeadraceError, shown as 503);
    ``settings`` are the librdkafka client properties of every connection
    (a logged-in user's SASL credentials: headrace.console.auth), so the
    broker's authorizer decides what the pages show. ``acting``: a
    principal the console reads for over its own service connection
    (headrace.console.acting: a client-certificate login), each answer
    cut by the broker's authorizer to what that principal may see.

    Degraded reads (issue 33): every page first asks each broker Metadata
    lists for ApiVersions (Admin.probe_brokers, in parallel, BROKER_ANSWER_S
    each) and then asks only those that answered, all within CONSOLE_READ_S
    of the page's start (ConsoleAdmin.read_deadline), so a page answers in
    < 5 s with a broker SIGKILLed or paused, naming it.
    ``zookeeper()`` says why this broker has no ZooKeeper session ("" when
    it has one or is not in a cluster)."""

    def __init__(self, bootstrap: Callable[[], str], timeout: float = ADMIN_TIMEOUT_S,
                 settings: dict | None = None, zookeeper: Callable[[], str] | None = None,
                 acting=None):
        self._bootstrap = bootstrap
        self.acting = acting  # headrace.console.acting.Acting: answers cut for a principal
        self._timeout = timeout
        self._settings = dict(settings or {})
        self._zookeeper = zookeeper or (lambda: "")
        self._admin = None
        self._lock = threading.Lock()  # guards _admin's creation only

    def admin(self):
        """The cached Admin, created on first use."""
        with self._lock:
            if self._admin is None:
                address = self._bootstrap()
                if not address:
                    raise HeadraceError("the broker is not listening yet")
                if self.acting is not None:
                    self._admin = self.acting.admin(address, timeout=self._timeout,
                                                    settings=self._settings)
                else:
                    self._admin = ConsoleAdmin(address, timeout=self._timeout,
                                               settings=self._settings)
            return self._admin

    def health(self, admin, md, deadline: float) -> tuple[set[int], list[dict], float]:
        """(live broker ids, [{"id", "host", "port", "reason"}] of those
        down, ``deadline``): headrace.cli.topic.cluster_health. The
        deadline is taken before Metadata, so the whole read (Metadata, the
        probes, the per-broker requests) ends within CONSOLE_READ_S."""
        from headrace.cli.topic import cluster_health

        live, down = cluster_health(admin, md, deadline)
        return live, down, deadline

    # -- overview --------------------------------------------------------------
    def cluster(self) -> dict:
        """`cluster info` with its health marks (headrace.cli.cluster_health
        .annotate: each broker's status, ``down_brokers``, ``offline`` and
        ``under_replicated`` partitions, named), each broker completed with
        the partitions it leads and hosts and its log directories (path,
        volume size and free bytes, bytes of logs); ``zookeeper_error``:
        why this broker has no ZooKeeper session, or None."""
        from headrace.cli.cluster import _cluster_doc
        from headrace.cli.cluster_health import annotate

        admin = self.admin()
        deadline = admin.read_deadline()
        md = admin.metadata()
        live, down, deadline = self.health(admin, md, deadline)
        # DescribeCluster goes to any broker librdkafka knows, a dead one
        # included: asked only when all answer.
        doc, partitions = _cluster_doc(admin, md, describe=not down)
        annotate(doc, partitions, {b["id"]: b["reason"] for b in down})
        for key in ("offline", "under_replicated"):  # users' topics before internal ones
            doc[key].sort(key=lambda p: (p["topic"].startswith("__"), p["topic"], p["partition"]))
        for b in down:  # where the dead broker was, when it is still listed
            for d in doc["down_brokers"]:
                if d["id"] == b["id"] and b["host"]:
                    d["address"] = f"{b['host']}:{b['port']}"
        leads: dict[int, int] = {}
        hosts: dict[int, int] = {}
        for t in md.topics.values():
            for p in t.partitions.values():
                leads[p.leader] = leads.get(p.leader, 0) + 1
                for r in p.replicas:
                    hosts[r] = hosts.get(r, 0) + 1
        listed = sorted((b.id, b.host, b.port) for b in md.brokers.values() if b.id in live)
        dirs, errors = admin.log_dirs_at(listed, deadline)
        if errors:
            doc["log_dirs_error"] = "; ".join(f"broker {i}: {why}"
                                              for i, why in sorted(errors.items()))
        for b in doc["brokers"]:
            b["leader_partitions"] = leads.get(b["id"], 0)
            b["replica_partitions"] = hosts.get(b["id"], 0)
            b["log_dirs"] = [{"path": d.path, "total_bytes": d.total_bytes,
                              "usable_bytes": d.usable_bytes, "log_bytes": sum(d.sizes.values()),
                              "error": d.error}
                             for d in dirs if d.broker == b["id"]]
        doc["zookeeper_error"] = self._zookeeper() or None
        doc["healthy"] = not (doc["down_brokers"] or doc["offline_partitions"]
                              or doc["under_replicated_partitions"] or doc["zookeeper_error"])
        return doc

    # -- topics ----------------------------------------------------------------
    def topics(self) -> dict:
        """Every topic: partitions, replication factor, under-replicated and
        offline partitions (a leader or replica down counts), records (end -
        start offsets; None when a leader did not answer) and leader bytes
        (None when unknown); ``brokers_down`` names the brokers down."""
        admin = self.admin()
        deadline = admin.read_deadline()
        md = admin.metadata()
        live, down, deadline = self.health(admin, md, deadline)
        leader = {(t, p): pm.leader for t, tm in md.topics.items()
                  for p, pm in tm.partitions.items()}
        asked = {k: v for k, v in leader.items() if v in live}
        starts, start_errors = admin.offsets_by_leader(asked, "earliest", deadline)
        ends, end_errors = admin.offsets_by_leader(asked, "latest", deadline)
        if start_errors or end_errors:
            self.renew(admin)
        listed = sorted((b.id, b.host, b.port) for b in md.brokers.values() if b.id in live)
        dirs, dir_errors = admin.log_dirs_at(listed, deadline)
        sizes: dict[str, int] = {}
        sized: set[tuple[str, int]] = set()
        for d in dirs:
            if d.error:
                continue
            for (t, p), size in d.sizes.items():
                if leader.get((t, p)) == d.broker:
                    sizes[t] = sizes.get(t, 0) + size
                    sized.add((t, p))
        out = []
        for name in sorted(md.topics):
            parts = md.topics[name].partitions.values()
            keys = [(name, p.id) for p in parts]
            known = [k for k in keys if k in starts and k in ends]
            out.append({
                "name": name, "partitions": len(parts),
                "replication_factor": max((len(p.replicas) for p in parts), default=0),
                "under_replicated": sum(
                    1 for p in parts if p.leader in live and (
                        len(p.isrs) < len(p.replicas) or any(r not in live for r in p.replicas))),
                "offline": sum(1 for p in parts if p.leader not in live),
                "records": sum(ends[k] - starts[k] for k in known)
                if len(known) == len(keys) else None,
                "records_known": sum(ends[k] - starts[k] for k in known),
                "size_bytes": sizes.get(name, 0) if all(k in sized for k in keys) or
                (not dir_errors and all(leader[k] in live for k in keys)) else None})
        return {"topics": out, "brokers_down": down}

    def topic(self, name: str) -> dict:
        """`topic describe NAME` (partitions, leaders, replicas, ISR, offsets,
        sizes, configs; degraded: what could not be read is None, offline
        partitions and the brokers down are named); NotFound for an unknown
        topic (or one this user may not describe: the same answer)."""
        from headrace.admin import AdminError
        from headrace.cli.topic import describe_topic

        admin = self.admin()
        try:
            doc = describe_topic(admin, name)
        except AdminError as e:
            if str(e).startswith("unknown topic"):
                raise NotFound(f"no topic {name!r}") from None
            raise
        if not doc["partitions"]:
            raise NotFound(f"no topic {name!r}")
        if any(p["error"] and not p["offline"] for p in doc["partitions"]):
            self.renew(admin)
        return doc

    def require_topic(self, admin, name: str, md=None):
        """The TopicMetadata of `name` (in ``md``, else asked); NotFound when
        it does not exist."""
        tm = (md if md is not None else admin.metadata()).topics.get(name)
        if tm is None or not tm.partitions:
            raise NotFound(f"no topic {name!r}")
        return tm

    # -- groups ----------------------------------------------------------------
    def groups(self) -> dict:
        """Every group with its state; the first GROUPS_DESCRIBED also with
        their member count and total lag. With a broker down: the groups of
        the brokers that answer (ListGroups at each), not described, and
        ``brokers_down`` / ``warnings`` name what is missing."""
        import time

        from headrace.cli.common import CliError
        from headrace.cli.group import describe_group

        admin = self.admin()
        deadline = admin.read_deadline()
        md = admin.metadata()
        live, down, deadline = self.health(admin, md, deadline)
        warnings = []
        if not down:
            listed = [(g.group_id, getattr(g.state, "name", str(g.state)))
                      for g in admin.groups()]
        else:
            up = sorted((b.id, b.host, b.port) for b in md.brokers.values() if b.id in live)
            listed, errors = admin.groups_from(up, deadline)
            warnings += [f"broker {b['id']} is down ({b['reason']}): the groups it coordinates "
                         f"are not listed" for b in down]
            warnings += [f"broker {i} did not list its groups: {why}"
                         for i, why in sorted(errors.items())]
        out = []
        described = 0
        for gid, state in listed:
            row = {"group_id": gid, "state": state, "members": None, "lag": None}
            if not down and described < GROUPS_DESCRIBED and time.monotonic() < deadline:
                try:
                    doc = describe_group(admin, gid)
                except (CliError, HeadraceError):  # gone since the listing
                    continue
                described += 1
                row["state"] = doc["state"]
                row["members"] = len(doc["members"])
                lags = [o["lag"] for o in doc["offsets"] if o["lag"] is not None]
                row["lag"] = sum(lags) if lags else None
            out.append(row)
        if down:
            warnings.append("members and lag are not shown while a broker is down "
                            "(each group's page shows them where its coordinator answers)")
        return {"groups": out, "described": described, "brokers_down": down,
                "warnings": warnings}

    def share_groups(self) -> dict:
        """Every share group (ListGroups, type share, at each broker) with
        its state; the first GROUPS_DESCRIBED also with their member count
        and how many partitions they are assigned. ``warnings`` name the
        brokers that did not answer (their groups are missing)."""
        import time

        from headrace.cli.common import CliError
        from headrace.cli.share_group import describe_share_group_doc, list_share_groups_doc

        admin = self.admin()
        listed = list_share_groups_doc(admin)
        deadline = admin.read_deadline()
        out, described = [], 0
        for g in listed["groups"]:
            row = {**g, "members": None, "partitions": None}
            if described < GROUPS_DESCRIBED and time.monotonic() < deadline:
                try:
                    doc = describe_share_group_doc(admin, g["group_id"])
                except (CliError, HeadraceError):  # gone since the listing, or unreachable
                    out.append(row)
                    continue
                described += 1
                row["state"] = doc["state"]
                row["members"] = len(doc["members"])
                row["partitions"] = sum(len(ps) for m in doc["members"]
                                        for ps in m["assignment"].values())
            out.append(row)
        return {"groups": out, "described": described, "warnings": listed["warnings"]}

    def share_group(self, group_id: str) -> dict:
        """`share-group describe GROUP`: state, epochs, members with their
        subscriptions and assignments; NotFound for an unknown group."""
        from headrace.cli.common import CliError
        from headrace.cli.share_group import UnknownShareGroup, describe_share_group_doc

        if self.acting is not None and not self.acting.allows("Describe", "Group", group_id):
            raise NotFound(f"unknown share group {group_id!r}")
        admin = self.admin()
        try:
            return describe_share_group_doc(admin, group_id)
        except UnknownShareGroup as e:
            raise NotFound(str(e)) from None
        except CliError as e:
            raise HeadraceError(str(e)) from None

    def group(self, group_id: str) -> dict:
        """`group describe GROUP` (members, assignments, committed offsets,
        lag per partition); NotFound for an unknown group, HeadraceError
        (503) naming the broker when its coordinator is down."""
        from headrace.cli.common import CliError
        from headrace.cli.group import describe_group

        if self.acting is not None and not self.acting.allows("Describe", "Group", group_id):
            raise NotFound(f"unknown group {group_id!r}")
        admin = self.admin()
        try:
            doc = describe_group(admin, group_id)
            if any(o["error"] for o in doc["offsets"]):
                self.renew(admin)
            return doc
        except CliError as e:
            if str(e).startswith("unknown group"):
                raise NotFound(str(e)) from None
            raise HeadraceError(str(e)) from None

    def partition_leader_down(self, admin, md, tm, partition: int,
                              deadline: float | None = None) -> str | None:
        """Why `partition`'s leader cannot serve (no leader, or its broker
        does not answer ApiVersions), or None. ``md``: the Metadata `tm`
        came from."""
        pm = tm.partitions[partition]
        if pm.leader < 0:
            return f"partition {partition} has no leader (offline)"
        b = md.brokers.get(pm.leader)
        if b is None:
            return f"partition {partition}'s leader, broker {pm.leader}, is not registered"
        why = admin.probe_brokers([(b.id, b.host, b.port)],
                                  deadline or admin.read_deadline()).get(b.id)
        if why:
            return (f"partition {partition}'s leader, broker {b.id} ({b.host}:{b.port}), "
                    f"is down: {why}")
        return None

    def renew(self, admin) -> None:
        """Drops `admin` (if still the cached one) so that the next page
        makes a new one: librdkafka routes ListOffsets by the metadata it
        cached, which may still name a dead broker as leader for a while
        after the controller moved the partition (seen: a console's pages
        missing the new leaders' offsets after a broker was SIGKILLed, where
        a new client reads them at once)."""
        with self._lock:
            if self._admin is admin:
                self._admin = None

    def close(self) -> None:
        with self._lock:
            self._admin = None
