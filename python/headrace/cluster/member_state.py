"""How ``ClusterMember`` reads the cluster state (docs/cluster.md, the JSON
``apply_cluster`` takes) from ZooKeeper: through a cache of znodes. A
watch event marks its path dirty, and the next pass re-reads (and watches
again) only dirty or unknown paths, so that one ISR change costs one read,
not one per partition. After a session loss (watches gone) everything is
re-read. ``StateReader`` is mixed into ``ClusterMember``; it uses the
member's ``zk``, ``broker_id``, ``cluster_id``, ``_on_watch`` and the cache
fields ``_dirty_lock``, ``_dirty``, ``_full``, ``_cache``, ``_czxid``,
``_visited``.
"""
from __future__ import annotations

import logging

from kazoo.exceptions import NoNodeError

from headrace.cluster import acl_store, scram_users
from headrace.cluster import zk_layout as L

log = logging.getLogger("headrace.cluster.member")


class StateReader:
    """``read_state()`` and the cached reads it is made of."""

    def _take_dirty(self) -> set[str] | None:
        """The paths to re-read; None: all of them."""
        with self._dirty_lock:
            dirty, self._dirty = self._dirty, set()
            full, self._full = self._full, False
        return None if full else dirty

    def _fresh(self, path: str, dirty: set[str] | None) -> bool:
        return dirty is not None and path not in dirty and path in self._cache

    def _children(self, path: str, dirty: set[str] | None) -> list[str]:
        self._visited.add(path)
        if not self._fresh(path, dirty):
            try:
                self._cache[path] = self.zk.get_children(path, watch=self._on_watch)
            except NoNodeError:
                self.zk.exists(path, watch=self._on_watch)
                self._cache[path] = []
        return self._cache[path]

    def _data_many(self, paths: list[str], dirty: set[str] | None) -> dict[str, bytes | None]:
        """{path: data (None: no such znode)}, stale ones read in one
        pipelined batch with a data watch (an exists watch when missing)."""
        self._visited.update(paths)
        reads = {p: self.zk.get_async(p, watch=self._on_watch)
                 for p in paths if not self._fresh(p, dirty)}
        missing = []
        for p, a in reads.items():
            try:
                self._cache[p], stat = a.get()
                self._czxid[p] = stat.czxid
            except NoNodeError:
                missing.append(p)
        exists = {p: self.zk.exists_async(p, watch=self._on_watch) for p in missing}
        for p, a in exists.items():
            if a.get() is not None:
                # Created between the two calls: read it now (watch set above).
                try:
                    self._cache[p], stat = self.zk.get(p, watch=self._on_watch)
                    self._czxid[p] = stat.czxid
                    continue
                except NoNodeError:
                    pass
            self._cache[p] = None
            self._czxid.pop(p, None)
        return {p: self._cache[p] for p in paths}

    def read_state(self) -> dict:
        """The cluster state of docs/cluster.md (apply_cluster's JSON), from
        ZooKeeper through the cache, watches set on everything it uses."""
        dirty = self._take_dirty()
        if dirty is None:
            self._cache = {}
        self._visited = set()
        brokers = []
        ids = sorted((c for c in self._children(L.BROKER_IDS, dirty) if c.isdigit()), key=int)
        regs = self._data_many([L.broker_path(int(b)) for b in ids], dirty)
        for b in ids:
            data = regs[L.broker_path(int(b))]
            if data is None:
                continue
            try:
                entry = L.BrokerRegistration.decode(int(b), data).to_state()
            except L.LayoutError as e:
                log.warning("broker %d: %s", self.broker_id, e)
                continue
            # The broker epoch (KIP-380): its registration's czxid.
            entry["epoch"] = self._czxid[L.broker_path(int(b))]
            brokers.append(entry)
        epochs = {e["id"]: e["epoch"] for e in brokers}
        ctl = self._data_many([L.CONTROLLER, L.CONTROLLER_EPOCH], dirty)
        controller_id = L.decode_controller(ctl[L.CONTROLLER]) if ctl[L.CONTROLLER] else -1
        controller_epoch = L.decode_controller_epoch(ctl[L.CONTROLLER_EPOCH]) \
            if ctl[L.CONTROLLER_EPOCH] else 0
        names = sorted(self._children(L.TOPICS, dirty))
        assignments = self._data_many([L.topic_path(t) for t in names], dirty)
        configs_raw = self._data_many([L.topic_config_path(t) for t in names], dirty)
        decoded = {}
        for t in names:
            data = assignments[L.topic_path(t)]
            if data is None:
                continue  # deleted meanwhile: its watch fired, next pass
            try:
                decoded[t] = L.TopicAssignment.decode(t, data)
            except L.LayoutError as e:
                log.warning("broker %d: %s", self.broker_id, e)
        states = self._data_many([L.partition_state_path(t, p) for t, a in decoded.items()
                                  for p in a.partitions], dirty)
        topics = []
        for t, assignment in decoded.items():
            try:
                configs = L.decode_topic_config(configs_raw[L.topic_config_path(t)], t)
            except L.LayoutError as e:
                log.warning("broker %d: %s", self.broker_id, e)
                configs = {}
            partitions = []
            for p, replicas in sorted(assignment.partitions.items()):
                leader, epoch, isr = -1, -1, []
                data = states[L.partition_state_path(t, p)]
                if data is not None:  # None: not created by the controller yet
                    try:
                        st = L.PartitionState.decode(data, L.partition_state_path(t, p))
                        leader, epoch, isr = st.leader, st.leader_epoch, st.isr
                    except L.LayoutError as e:
                        log.warning("broker %d: %s", self.broker_id, e)
                    else:
                        if leader == self.broker_id and st.bounced(epochs):
                            # Made leader under an earlier epoch of this broker
                            # (it bounced since: a restart, a new session): it
                            # does not lead until the controller elects anew.
                            leader = -1
                partitions.append({"partition": p, "leader": leader, "leader_epoch": epoch,
                                   "replicas": replicas, "isr": isr})
            topics.append({"name": t, "id": assignment.topic_id, "configs": configs,
                           "partitions": partitions})
        broker_configs = self._read_broker_configs(dirty)
        scram_credentials = scram_users.read(self._children, self._data_many, dirty)
        acls = acl_store.read_all(lambda p: self._children(p, dirty),
                                  lambda ps: self._data_many(ps, dirty),
                                  lambda e: log.warning("broker %d: %s", self.broker_id, e))
        client_quotas = self._read_client_quotas(dirty)
        group_configs = self._read_group_configs(dirty)
        # Forget what this pass did not use (deleted topics, departed brokers).
        self._cache = {p: v for p, v in self._cache.items() if p in self._visited}
        self._czxid = {p: v for p, v in self._czxid.items() if p in self._visited}
        return {"cluster_id": self.cluster_id, "controller_id": controller_id,
                "broker_epoch": epochs.get(self.broker_id, -1),
                "controller_epoch": controller_epoch, "brokers": brokers, "topics": topics,
                "broker_configs": broker_configs, "scram_credentials": scram_credentials,
                "acls": acls, "client_quotas": client_quotas, "group_configs": group_configs}

    def _read_broker_configs(self, dirty: set[str] | None) -> dict:
        """Dynamic broker configs (docs/configuration.md): the cluster-wide
        default and this broker's, {"default": {...}, "broker": {...}}."""
        out = {}
        for key, entity in (("default", L.BROKER_DEFAULT_ENTITY), ("broker", str(self.broker_id))):
            path = L.broker_config_path(entity)
            try:
                out[key] = L.decode_broker_config(self._data_many([path], dirty)[path], entity)
            except L.LayoutError as e:
                log.warning("broker %d: %s", self.broker_id, e)
                out[key] = {}
        return out

    def _read_group_configs(self, dirty: set[str] | None) -> dict:
        """Group configs (docs/share-groups.md "Group configs"): {group id:
        {key: value}} of every /config/groups/<group> znode."""
        groups = self._children(L.CONFIG_GROUPS, dirty)
        data = self._data_many([L.group_config_path(g) for g in groups], dirty)
        out = {}
        for g in groups:
            try:
                config = L.decode_group_config(data[L.group_config_path(g)], g)
            except L.LayoutError as e:
                log.warning("broker %d: %s", self.broker_id, e)
                continue
            if config:
                out[g] = config
        return out

    def _read_client_quotas(self, dirty: set[str] | None) -> dict:
        """Client quotas (docs/security.md "Quotas"): {entity path: {key:
        value}} of every user / client-id znode that sets a quota key."""
        users = {u: self._children(f"{L.CONFIG_USERS}/{u}/clients", dirty)
                 for u in self._children(L.CONFIG_USERS, dirty)}
        paths = L.quota_entity_paths(users, self._children(L.CONFIG_CLIENTS, dirty))
        data = self._data_many([L.entity_config_path(p) for p in paths], dirty)
        out = {}
        for p in paths:
            try:
                config = L.decode_entity_config(data[L.entity_config_path(p)], p)
            except L.LayoutError as e:
                log.warning("broker %d: %s", self.broker_id, e)
                continue
            quotas = {k: v for k, v in config.items() if k in L.QUOTA_KEYS}
            if quotas:
                out[p] = quotas
        return out
