"""Issue 33, item 1: SIGTERM ends a cluster broker within 5 s whatever
ZooKeeper does, and nothing acknowledged is lost.

A real 3-broker EmbeddedCluster and its real ZooKeeper. ZooKeeper is either
paused (SIGSTOP: connections stay open, nothing answers, kazoo's requests
wait) or killed (SIGKILL: connections refused); then the controller, or a
broker that is not the controller, gets SIGTERM. It must exit (code 0)
within 5 s; ZooKeeper is then healed (SIGCONT, or started again on its data
directory), the broker restarted, and every record an idempotent acks=all
producer had acknowledged, before, during and after, is read back.
"""
from __future__ import annotations

import os
import signal
import threading
import time

import pytest

ck = pytest.importorskip("confluent_kafka")

from cluster_clients import create_topic  # noqa: E402
from headrace import EmbeddedCluster  # noqa: E402

SHUTDOWN_LIMIT_S = 5.0
SETTINGS = {"zookeeper.session.timeout.ms": 6000, "default.replication.factor": 3,
            "replica.lag.time.max.ms": 3000}
TOPIC = "sd"
PARTITIONS = 3


class Writer:
    """An idempotent acks=all producer writing unique values round robin over
    the partitions until stopped; ``acked`` holds (partition, value) of every
    acknowledged record."""

    def __init__(self, bootstrap: str):
        self.producer = ck.Producer({"bootstrap.servers": bootstrap, "acks": "all",
                                     "enable.idempotence": True, "linger.ms": 5,
                                     "message.timeout.ms": 60000})
        self.acked: set[tuple[int, bytes]] = set()
        self.failed = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _on_delivery(self, err, msg):
        if err is None:
            self.acked.add((msg.partition(), msg.value()))
        else:
            self.failed += 1

    def _run(self):
        seq = 0
        while not self._stop.is_set():
            try:
                self.producer.produce(TOPIC, f"v{seq}".encode(), partition=seq % PARTITIONS,
                                      on_delivery=self._on_delivery)
                seq += 1
            except BufferError:
                pass
            self.producer.poll(0.01)

    def start(self):
        self._thread.start()
        return self

    def stop(self):
        self._stop.set()
        self._thread.join(10)
        left = self.producer.flush(90)
        assert left == 0, f"{left} records neither acknowledged nor failed"


def _read_all(bootstrap: str) -> set[tuple[int, bytes]]:
    """Every record of every partition, from offset 0 to the high watermark."""
    from confluent_kafka import TopicPartition

    c = ck.Consumer({"bootstrap.servers": bootstrap, "group.id": f"check-{time.time()}",
                     "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    try:
        ends = {p: c.get_watermark_offsets(TopicPartition(TOPIC, p), timeout=30)[1]
                for p in range(PARTITIONS)}
        c.assign([TopicPartition(TOPIC, p, 0) for p in range(PARTITIONS)])
        got: set[tuple[int, bytes]] = set()
        pos = {p: 0 for p in range(PARTITIONS)}
        deadline = time.monotonic() + 60
        while any(pos[p] < ends[p] for p in pos) and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is None or m.error():
                continue
            got.add((m.partition(), m.value()))
            pos[m.partition()] = m.offset() + 1
        assert all(pos[p] >= ends[p] for p in pos), (pos, ends)
        return got
    finally:
        c.close()


def _wait_full_isr(cluster, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        states = cluster.partition_states(TOPIC)
        if states and all(s is not None and len(s.isr) == 3 for s in states.values()):
            return
        time.sleep(0.2)
    raise AssertionError(f"ISR not full again: {cluster.partition_states(TOPIC)}")


@pytest.mark.timeout(300)
@pytest.mark.parametrize("zk_fault", ["paused", "killed"])
@pytest.mark.parametrize("target", ["controller", "follower"])
def test_sigterm_ends_a_broker_within_5s_whatever_zookeeper_does(tmp_path, zk_fault, target):
    with EmbeddedCluster(brokers=3, settings=SETTINGS, data_dir=tmp_path / "c") as cluster:
        create_topic(cluster, TOPIC, partitions=PARTITIONS)
        _wait_full_isr(cluster)
        controller = cluster.controller_id()
        victim = controller if target == "controller" else \
            next(i for i in cluster.node_ids if i != controller)
        writer = Writer(cluster.bootstrap_servers).start()
        time.sleep(1.5)
        zk = cluster.zookeeper
        if zk_fault == "paused":
            os.kill(zk.proc.pid, signal.SIGSTOP)
        else:
            zk.kill()
        try:
            time.sleep(0.5)
            node = cluster.node(victim)
            began = time.monotonic()
            node.signal(signal.SIGTERM)
            code = node.wait(30)
            took = time.monotonic() - began
            log = node.log_tail(15)
            print(f"SIGTERM to broker {victim} ({target}), ZooKeeper {zk_fault}: "
                  f"exit {code} after {took:.2f} s")
            assert code == 0, f"exit code {code} after {took:.1f} s:\n{log}"
            assert took <= SHUTDOWN_LIMIT_S, f"took {took:.1f} s:\n{log}"
        finally:
            if zk_fault == "paused":
                os.kill(zk.proc.pid, signal.SIGCONT)
            else:
                zk.start()
        cluster.start_node(victim)  # restarts cleanly (its old session may need to expire)
        cluster.wait_for_leaders(TOPIC, timeout=60)
        _wait_full_isr(cluster)
        time.sleep(1.0)
        writer.stop()
        assert writer.acked, "nothing was acknowledged"
        stored = _read_all(cluster.bootstrap_servers)
        lost = writer.acked - stored
        print(f"acknowledged {len(writer.acked)}, failed {writer.failed}, lost {len(lost)}")
        assert not lost, f"{len(lost)} acknowledged records lost, e.g. {sorted(lost)[:5]}"


@pytest.mark.timeout(120)
def test_sigterm_while_joining_a_paused_zookeeper(tmp_path, zookeeper):
    """SIGTERM while the broker joins a ZooKeeper that accepts connections
    and answers nothing (SIGSTOPped): exit 0 within 5 s, not after
    zookeeper.connection.timeout.ms (18 s by default)."""
    from broker_process import BrokerProcess

    os.kill(zookeeper.proc.pid, signal.SIGSTOP)
    try:
        b = BrokerProcess(tmp_path / "d", "--zookeeper", zookeeper.connect_string,
                          "--node-id", "7").start()
        time.sleep(1.0)
        began = time.monotonic()
        b.stop(timeout=30)
        took = time.monotonic() - began
        print(f"SIGTERM while joining a paused ZooKeeper: exit 0 after {took:.2f} s")
        assert took <= SHUTDOWN_LIMIT_S, b.stderr
    finally:
        os.kill(zookeeper.proc.pid, signal.SIGCONT)


@pytest.mark.timeout(60)
def test_every_zookeeper_wait_is_bounded(zookeeper):
    """headrace.cluster.zk_client: with ZooKeeper paused, a call ends at the
    request timeout, at the handler's deadline, or at once on cancel."""
    import threading as th

    from kazoo.exceptions import ConnectionLoss

    from headrace.cluster.zk_client import ZooKeeperWaitTimeout, bounded_client, stop_client

    cancel = th.Event()
    zk = bounded_client(zookeeper.connect_string, 2.0, cancel)
    zk.start(10)
    try:
        assert zk.exists("/") is not None
        os.kill(zookeeper.proc.pid, signal.SIGSTOP)
        try:
            for setup, limit in ((lambda: None, 2.6),  # the request timeout
                                 (lambda: None, 2.6),  # queued while reconnecting
                                 (lambda: setattr(zk.handler, "deadline",
                                                  time.monotonic() + 0.3), 0.8),
                                 (cancel.set, 0.4)):
                setup()
                began = time.monotonic()
                # kazoo's own ConnectionLoss when it notices first (a ping
                # unanswered); then requests wait in its queue: our bound.
                with pytest.raises((ZooKeeperWaitTimeout, ConnectionLoss)):
                    zk.get("/")
                assert time.monotonic() - began < limit
            began = time.monotonic()
            stop_client(zk, 0.5)
            assert time.monotonic() - began < 1.0
        finally:
            os.kill(zookeeper.proc.pid, signal.SIGCONT)
    finally:
        stop_client(zk, 5)
