"""What ``ClusterMember`` writes to ZooKeeper for its broker's data plane,
every ``ISR_POLL_S``: the ISR changes its local leaders propose
(``isr_changes()``, written to the partition state znodes with versioned
updates) and the replicas it has offline (``offline_replicas()``, the
ephemeral /admin/offline_replicas/<id>). ``IsrReports`` is mixed into
``ClusterMember``; it uses the member's ``zk``, ``broker``, ``broker_id``,
``_stop``, ``_pending_isr``, ``_can_report_offline``, ``_offline_written``
and ``_delete_own``.
"""
from __future__ import annotations

import json
import logging
from typing import Any, Mapping

from kazoo.exceptions import (BadVersionError, ConnectionLoss, KazooException, NoNodeError,
                              OperationTimeoutError, SessionExpiredError)
from kazoo.handlers.threading import KazooTimeoutError

from headrace.cluster import zk_layout as L
from headrace.cluster.leadership import stamp

log = logging.getLogger("headrace.cluster.member")

ISR_POLL_S = 0.1
# ZooKeeper unreachable for now: the work is kept and retried.
ZK_DOWN = (ConnectionLoss, SessionExpiredError, OperationTimeoutError, KazooTimeoutError)


class IsrReports:
    """The ``isr`` thread's loop and the writes it makes."""

    def _isr_loop(self) -> None:
        while not self._stop.wait(ISR_POLL_S):
            self._report_offline_replicas()
            try:
                for change in json.loads(self.broker.isr_changes() or "[]"):
                    self._pending_isr[(change["topic"], int(change["partition"]))] = change
            except Exception:  # noqa: BLE001
                log.exception("broker %d: isr_changes() failed", self.broker_id)
            for key, change in list(self._pending_isr.items()):
                try:
                    self.write_isr_change(change)
                    self._pending_isr.pop(key, None)
                except ZK_DOWN:
                    break  # kept; retried at the next tick
                except Exception:  # noqa: BLE001
                    log.exception("broker %d: cannot write ISR change %s", self.broker_id,
                                  change)
                    self._pending_isr.pop(key, None)

    def _report_offline_replicas(self) -> None:
        """Writes the replicas the data plane has offline (a failed log
        directory) to the ephemeral /admin/offline_replicas/<id> when they
        change; the controller moves their leadership (docs/cluster.md)."""
        if not self._can_report_offline:
            return
        try:
            offline = sorted((str(r["topic"]), int(r["partition"]))
                             for r in json.loads(self.broker.offline_replicas() or "[]"))
        except Exception:  # noqa: BLE001
            log.exception("broker %d: offline_replicas() failed", self.broker_id)
            return
        if offline == self._offline_written:
            return
        path = L.offline_replicas_path(self.broker_id)
        data = L.encode_offline_replicas(self.broker_id, offline)
        try:
            if not offline:
                self._delete_own([path])
            else:
                try:
                    self.zk.set(path, data)
                except NoNodeError:
                    self.zk.create(path, data, ephemeral=True)
        except ZK_DOWN:
            return  # retried at the next tick
        except KazooException:
            log.exception("broker %d: cannot write %s", self.broker_id, path)
            return
        if offline:
            log.warning("broker %d: %d replica(s) offline (log directory failed), reported to "
                        "the controller: %s", self.broker_id, len(offline),
                        ", ".join(f"{t}-{p}" for t, p in offline[:10]))
        self._offline_written = offline

    def _offline_of(self, broker_id: int) -> list[tuple[str, int]]:
        """The replicas ``broker_id`` reported offline (/admin/offline_replicas)."""
        try:
            data, _ = self.zk.get(L.offline_replicas_path(broker_id))
        except NoNodeError:
            return []
        try:
            return L.decode_offline_replicas(broker_id, data)
        except L.LayoutError as e:
            log.warning("broker %d: %s", self.broker_id, e)
            return []

    def _broker_epochs(self, brokers: list[int]) -> dict[int, int]:
        """{broker: its registration's epoch (czxid)} of those registered."""
        stats = {b: self.zk.exists_async(L.broker_path(b)) for b in brokers}
        return {b: st.czxid for b, a in stats.items() if (st := a.get()) is not None}

    def write_isr_change(self, change: Mapping[str, Any]) -> bool:
        """Writes a local leader's ISR proposal to the partition state znode
        (versioned; leader, leader epoch and controller epoch kept). Skipped
        when the znode's leader epoch is not the change's (leadership moved
        on) or this broker is no longer its leader. Brokers it would add that
        are shutting down, unregistered, or have this replica offline are left
        out. True when written."""
        topic, p = change["topic"], int(change["partition"])
        isr = [int(b) for b in change["isr"]]
        path = L.partition_state_path(topic, p)
        for _ in range(10):
            try:
                data, stat = self.zk.get(path)
            except NoNodeError:
                return False
            st = L.PartitionState.decode(data, path)
            if st.leader_epoch != int(change["leader_epoch"]) or st.leader != self.broker_id:
                log.info("broker %d: %s-%d: ISR change %s dropped: state has leader %d epoch "
                         "%d, the change was made at epoch %s", self.broker_id, topic, p, isr,
                         st.leader, st.leader_epoch, change["leader_epoch"])
                return False
            # KIP-841: a broker in controlled shutdown or not registered
            # (its session ended) does not join an ISR, whatever its leader
            # saw of its fetches; nor one whose replica of this partition is
            # on a failed log directory (it reported it offline). KIP-903: nor
            # one whose fetches the leader saw were made under another broker
            # epoch than its registration's (an older incarnation's).
            epochs = self._broker_epochs(isr)
            fetched = {int(b): int(e) for b, e in (change.get("broker_epochs") or {}).items()}
            isr = [b for b in isr
                   if b in st.isr or (b in epochs and fetched.get(b, epochs[b]) == epochs[b]
                                      and self.zk.exists(L.controlled_shutdown_path(b)) is None
                                      and (topic, p) not in self._offline_of(b))]
            if st.isr == isr:
                return False
            new = stamp(L.PartitionState(st.leader, st.leader_epoch, isr, st.controller_epoch),
                        st, epochs)
            try:
                self.zk.set(path, new.encode(), version=stat.version)
                log.info("broker %d: %s-%d: ISR %s -> %s", self.broker_id, topic, p, st.isr,
                         isr)
                return True
            except BadVersionError:
                continue  # someone wrote meanwhile: re-read and decide again
            except NoNodeError:
                return False
        return False
