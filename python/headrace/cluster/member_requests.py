"""The admin requests a broker's data plane hands up to its control plane
(``next_control_request``: CreateTopics, DeleteTopics, CreatePartitions,
ElectLeaders, partition reassignments, broker / topic configs, SCRAM users,
ACLs, client quotas), each answered from ZooKeeper. ``ControlRequests`` is
mixed into ``ClusterMember``, whose request thread calls
``handle_request``; it uses the member's ``zk``, ``broker_id``, ``defaults``,
``state`` / ``_state_cond`` (the state last pushed down) and ``_stop``.
"""
from __future__ import annotations

import logging
import time
from typing import Any, Mapping

from kazoo.exceptions import NoNodeError

from headrace.cluster import acl_store, reassignment, scram_users, topic_admin
from headrace.cluster import zk_layout as L

log = logging.getLogger("headrace.cluster.member")

CREATE_WAIT_MARGIN_S = 0.1  # CreateTopics answers this much before the data plane gives up
ACL_APPLY_WAIT_S = 5.0  # CreateAcls / DeleteAcls wait at most this for this broker's own apply
UNKNOWN_SERVER_ERROR = -1


class ControlRequests:
    """The handlers of the data plane's control requests (see the module
    docstring for what they use of the member)."""

    def handle_request(self, kind: str, payload: Mapping[str, Any]) -> dict:
        if kind == "create_topics":
            result = topic_admin.create_topics(self.zk, payload, self.defaults)
            self._await_created_topics(payload, result)
            return result
        if kind == "delete_topics":
            return topic_admin.delete_topics(self.zk, payload)
        if kind == "create_partitions":
            return topic_admin.create_partitions(self.zk, payload)
        if kind == "elect_leaders":
            return self.elect_leaders(payload)
        if kind == "alter_reassignments":
            return reassignment.alter_request(self.zk, payload, self._stop)
        if kind == "list_reassignments":
            return reassignment.list_ongoing(self.zk, payload)
        if kind == "alter_broker_configs":
            return self.alter_broker_configs(payload)
        if kind == "alter_group_configs":
            return self.alter_group_configs(payload)
        if kind == "alter_topic_configs":
            return topic_admin.alter_topic_configs(self.zk, payload)
        if kind == "alter_user_scram_credentials":
            return scram_users.alter(self.zk, payload)
        if kind == "create_acls":
            result = acl_store.create_acls(self.zk, payload)
            self._await_own_acls(payload, result, present=True)
            return result
        if kind == "delete_acls":
            result = acl_store.delete_acls(self.zk, payload)
            self._await_own_acls(payload, result, present=False)
            return result
        if kind == "alter_client_quotas":
            return self.alter_client_quotas(payload)
        return all_failed(payload, UNKNOWN_SERVER_ERROR, f"unknown control request {kind!r}")

    # -- dynamic broker configs ---------------------------------------------------------------
    def alter_broker_configs(self, payload: Mapping[str, Any]) -> dict:
        """Replaces /config/brokers/<entity> ("<default>" or a broker id) with
        payload["configs"] (validated by the data plane) and announces the
        change under /config/changes as Kafka's ZK mode does. Every broker's
        state loop watches its two entities and applies them."""
        entity = str(payload.get("entity", ""))
        if entity != L.BROKER_DEFAULT_ENTITY and not entity.isdigit():
            return {"error_code": topic_admin.INVALID_REQUEST,
                    "error_message": f"bad broker config entity {entity!r}"}
        configs = {str(k): str(v) for k, v in (payload.get("configs") or {}).items()}
        topic_admin.replace_config(self.zk, L.broker_config_path(entity),
                                   L.encode_broker_config(configs), f"brokers/{entity}")
        return {"error_code": 0, "error_message": None}

    # -- group configs -----------------------------------------------------------------------
    def alter_group_configs(self, payload: Mapping[str, Any]) -> dict:
        """Replaces /config/groups/<group> with payload["configs"] (validated
        by the data plane; empty removes the znode) and announces the change
        under /config/changes. Every broker's state loop watches
        /config/groups and hands all groups' configs down."""
        group = str(payload.get("group", ""))
        if not group or "/" in group or group in (".", ".."):
            return {"error_code": topic_admin.INVALID_REQUEST,
                    "error_message": f"bad group config entity {group!r}"}
        configs = {str(k): str(v) for k, v in (payload.get("configs") or {}).items()}
        path = L.group_config_path(group)
        if configs:
            topic_admin.replace_config(self.zk, path, L.encode_group_config(configs),
                                       f"groups/{group}")
        else:
            try:
                self.zk.delete(path)
            except NoNodeError:
                pass
        return {"error_code": 0, "error_message": None}

    # -- client quotas -----------------------------------------------------------------------
    def alter_client_quotas(self, payload: Mapping[str, Any]) -> dict:
        """Sets the quota keys of /config/<path> (users/..., clients/...) to
        payload["configs"] (validated by the data plane; keys left out are
        removed), keeping the znode's other keys (SCRAM credentials), and
        announces the change under /config/changes as Kafka's ZK mode does."""
        path = str(payload.get("path", ""))
        if not path.startswith(("users/", "clients/")) or ".." in path.split("/"):
            return {"error_code": topic_admin.INVALID_REQUEST,
                    "error_message": f"bad client quota entity {path!r}"}
        quotas = {str(k): str(v) for k, v in (payload.get("configs") or {}).items()}
        topic_admin.update_entity_config(
            self.zk, path,
            lambda config: {k: v for k, v in config.items() if k not in L.QUOTA_KEYS} | quotas)
        return {"error_code": 0, "error_message": None}

    # -- ElectLeaders ------------------------------------------------------------------------
    def elect_leaders(self, payload: Mapping[str, Any]) -> dict:
        """Hands an ElectLeaders request to the controller (a sequential
        ephemeral /admin/elect_leaders znode) and waits for its results:
        {"partitions": [{"topic", "partition", "error_code", "error_message"}]}.
        Not answered within timeout_ms: REQUEST_TIMED_OUT for every partition."""
        parts = payload.get("partitions")
        req = L.ElectLeaders(int(payload.get("election_type", L.PREFERRED_ELECTION)),
                             None if parts is None else
                             [(str(x["topic"]), int(x["partition"])) for x in parts])
        path = self.zk.create(f"{L.ADMIN_ELECT_LEADERS}/request-", req.encode(),
                              ephemeral=True, sequence=True)
        deadline = time.monotonic() + max(1, int(payload.get("timeout_ms") or 30000)) / 1000
        try:
            while time.monotonic() < deadline and not self._stop.is_set():
                answer = L.ElectLeaders.decode(self.zk.get(path)[0], path)
                if answer.done:
                    return {"partitions": [{"topic": t, "partition": p, "error_code": c,
                                            "error_message": m}
                                           for t, p, c, m in answer.results]}
                time.sleep(0.05)
        finally:
            try:
                self.zk.delete(path)
            except NoNodeError:
                pass
        return {"partitions": [{"topic": t, "partition": p,
                                "error_code": topic_admin.REQUEST_TIMED_OUT,
                                "error_message": "the controller did not answer in time"}
                               for t, p in (req.partitions or [])]}

    def _await_created_topics(self, payload: Mapping[str, Any], result: dict) -> None:
        """As Kafka's CreateTopics: the answer waits until this broker's own
        view (what its Metadata answers) lists each created topic with a
        leader for every partition, so the client's next Metadata here finds
        it. Bounded by the request's ``timeout_ms`` (less a margin, the data
        plane gives up at it); ``timeout_ms`` <= 0 or validate_only: no wait.
        A topic still incomplete then is answered REQUEST_TIMED_OUT (it is
        created; its leaders are not known here yet), as Kafka does."""
        timeout_ms = int(payload.get("timeout_ms") or 0)
        dry = {t.get("name") for t in payload.get("topics", []) if t.get("validate_only")}
        waiting = {r["name"] for r in result.get("topics", [])
                   if r.get("error_code") == 0 and r["name"] not in dry}
        if timeout_ms <= 0 or not waiting:
            return

        def incomplete() -> set[str]:
            ready = {t["name"] for t in (self.state or {}).get("topics", [])
                     if t["partitions"] and all(p["leader"] >= 0 for p in t["partitions"])}
            return waiting - ready

        with self._state_cond:
            self._state_cond.wait_for(lambda: not incomplete() or self._stop.is_set(),
                                      max(0.0, timeout_ms / 1000 - CREATE_WAIT_MARGIN_S))
            late = incomplete()
        for r in result["topics"]:
            if r["name"] in late:
                r.update(error_code=topic_admin.REQUEST_TIMED_OUT,
                         error_message=f"Topic '{r['name']}' was created; its leaders are not "
                                       f"known to broker {self.broker_id} yet.")

    def _await_own_acls(self, payload: Mapping[str, Any], result: dict, present: bool) -> None:
        """As Kafka's ZooKeeper-mode authorizer, which updates the answering
        broker's ACL cache before it answers: CreateAcls / DeleteAcls wait
        (at most ACL_APPLY_WAIT_S) until this broker's applied state has
        (present) or lacks every binding written, so the client's next
        DescribeAcls or DeleteAcls here sees its change (DeleteAcls matches
        on the answering broker's ACLs). Other brokers apply it on their own
        watch, as Kafka's do on the change notification."""
        if result.get("error_code") != 0:
            return
        wanted = acl_store.canonical(payload.get("acls") or [])

        def applied() -> bool:
            have = acl_store.canonical((self.state or {}).get("acls") or [])
            return (wanted <= have) if present else not (wanted & have)

        with self._state_cond:
            if not self._state_cond.wait_for(lambda: applied() or self._stop.is_set(),
                                             ACL_APPLY_WAIT_S) or not applied():
                log.warning("broker %d: ACL change not applied here within %.0f s",
                            self.broker_id, ACL_APPLY_WAIT_S)


def all_failed(payload: Mapping[str, Any], code: int, message: str) -> dict:
    topics = []
    for t in payload.get("topics", []) or []:
        name = t.get("name") if isinstance(t, dict) else t
        topics.append({"name": name, "error_code": code, "error_message": message})
    # error_code/error_message: the answer of requests without topics
    # (alter_broker_configs).
    return {"topics": topics, "error_code": code, "error_message": message}
