"""The controller's writes, fenced by its epoch (docs/cluster.md).

Every state write of a controller is a ZooKeeper transaction that starts with
``check('/controller_epoch', version)``, the version its own increment of the
epoch produced at election (headrace.cluster.controller). Once another
controller has incremented the epoch, every write of the old one fails with
:class:`ControllerFenced` and it steps down.
"""
from __future__ import annotations

from kazoo.client import KazooClient
from kazoo.exceptions import RolledBackError

from headrace.cluster import zk_layout as L

# How many times a controller write that lost a compare-and-set race (a
# znode version changed under it) is re-read and redone before the work is
# left to the next reconcile pass.
MAX_CAS_RETRIES = 10


class ControllerFenced(Exception):
    """A write carried a controller epoch that is no longer current."""


class Fence:
    """Runs a controller's writes as transactions guarded by
    ``check('/controller_epoch', version)``."""

    def __init__(self, zk: KazooClient, epoch: int, epoch_version: int):
        self.zk = zk
        self.epoch = epoch
        self.epoch_version = epoch_version

    def commit_async(self, build):
        """Sends the transaction ``build(tx)`` fills, guarded by the epoch
        check; returns kazoo's async result (pass its value to ``check``)."""
        tx = self.zk.transaction()
        tx.check(L.CONTROLLER_EPOCH, self.epoch_version)
        build(tx)
        return tx.commit_async()

    def check(self, results: list) -> list:
        """The operations' results; raises ControllerFenced when the epoch
        check failed, else the first operation's error (BadVersionError,
        NoNodeError, ...)."""
        if isinstance(results[0], Exception) and not isinstance(results[0], RolledBackError):
            raise ControllerFenced(
                f"controller epoch {self.epoch} (znode version {self.epoch_version}) "
                f"is stale: {type(results[0]).__name__}")
        for r in results[1:]:
            if isinstance(r, Exception) and not isinstance(r, RolledBackError):
                raise r
        return results[1:]

    def commit(self, build) -> list:
        """``build(tx)`` adds the operations; see ``check``."""
        return self.check(self.commit_async(build).get())

    def set_partition_state(self, topic: str, partition: int, state: L.PartitionState,
                            version: int) -> None:
        path = L.partition_state_path(topic, partition)
        self.commit(lambda tx: tx.set_data(path, state.encode(), version=version))
