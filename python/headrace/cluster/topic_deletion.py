"""Topic deletion, the controller's part (docs/cluster.md): a topic named
under /admin/delete_topics has its znodes deleted, children first, in
transactions fenced by the controller's epoch (headrace.cluster.fence).
"""
from __future__ import annotations

import logging

from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError, NotEmptyError

from headrace.cluster import zk_layout as L
from headrace.cluster.fence import MAX_CAS_RETRIES, Fence

log = logging.getLogger("headrace.cluster.controller")  # the controller's own log

DELETE_BATCH = 1000  # znodes deleted per transaction (well under 1 MB)


def delete_topic(zk: KazooClient, fence: Fence, topic: str, controller_id: int) -> None:
    """Deletes the topic's znodes, children first, in fenced transactions
    of at most DELETE_BATCH operations (a ZooKeeper request is limited
    to 1 MB); the topic znode, its config and the admin znode go last,
    together, so an interrupted deletion is finished by a later pass."""
    for _ in range(MAX_CAS_RETRIES):
        paths: list[str] = []
        _collect(zk, L.topic_path(topic), paths)
        last = [p for p in paths if p == L.topic_path(topic)]
        below = [p for p in paths if p != L.topic_path(topic)]
        if zk.exists(L.topic_config_path(topic)) is not None:
            last.append(L.topic_config_path(topic))
        last.append(L.delete_topic_path(topic))
        batches = [below[i:i + DELETE_BATCH] for i in range(0, len(below), DELETE_BATCH)]
        try:
            for batch in batches + [last]:
                fence.commit(lambda tx, batch=batch: [tx.delete(p) for p in batch])
            log.info("controller %d: deleted topic %s", controller_id, topic,
                     extra={"fields": {"event": "topic_deleted", "topic": topic,
                                       "controller": controller_id}})
            return
        except (NoNodeError, NotEmptyError):
            continue  # changed while we listed it; list again


def _collect(zk: KazooClient, path: str, out: list[str]) -> None:
    """``path`` and its descendants, children before parents."""
    try:
        children = zk.get_children(path)
    except NoNodeError:
        return
    for c in children:
        _collect(zk, f"{path}/{c}", out)
    out.append(path)
