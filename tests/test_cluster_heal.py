"""Issue 37, item 4: after a network partition between a follower and the
other brokers heals, the ISR is full again within replica.socket.timeout.ms
+ a few seconds, not after TCP's retransmission backoff (10-12 s before).

One broker per network namespace (tests/cluster_faults.py's NetnsCluster).
The follower is cut from the other brokers only (ZooKeeper and clients still
reach everyone, so its session lives and the leader can shrink the ISR),
for 14 s: the leader's answer to the fetch in flight is then retransmitted
at +12.6 s and next at +25.4 s after it was first sent, so a follower that
waits on that connection rejoins about 11 s after the heal. Needs root.
"""
from __future__ import annotations

import os
import shutil
import threading
import time

import pytest

ck = pytest.importorskip("confluent_kafka")

import cluster_faults as cf  # noqa: E402
from cluster_clients import create_topic  # noqa: E402

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("nft") is None or shutil.which("ip") is None,
    reason="needs root, iproute2 and nftables (network namespaces)")

SOCKET_TIMEOUT_MS = 1500
SETTINGS = {
    "zookeeper.session.timeout.ms": 10000,
    "replica.lag.time.max.ms": 3000,
    "replica.socket.timeout.ms": SOCKET_TIMEOUT_MS,
    "num.partitions": 1,
}
PARTITION_S = 14.0


def _cut_from_brokers(net: cf.Network, node: int) -> None:
    """Drops every packet between `node` and the other brokers (not ZooKeeper,
    not clients); undone by net.heal(node)."""
    others = ", ".join(net.addr(i) for i in net.ns_names if i != node)
    net._nft(node, f"""table inet {net.TABLE} {{
  chain hr_in {{ type filter hook input priority 0; policy accept;
    ip saddr {{ {others} }} drop
  }}
  chain hr_out {{ type filter hook output priority 0; policy accept;
    ip daddr {{ {others} }} drop
  }}
}}
""")


@pytest.mark.timeout(240)
def test_isr_refills_within_the_socket_timeout_after_a_partition_heals(tmp_path):
    with cf.NetnsCluster(brokers=3, settings=SETTINGS, data_dir=tmp_path / "cluster") as cluster:
        topic = "heal"
        create_topic(cluster, topic, partitions=1)
        assert cf.wait_full_isr(cluster, topic, 3, timeout=60) is True
        state = cluster.partition_states(topic)[0]
        follower = next(b for b in state.isr if b != state.leader)  # full ISR
        producer = ck.Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": 1,
                                "linger.ms": 0})
        stop = threading.Event()

        def write():  # the leader's end moves: a cut-off follower falls behind
            while not stop.is_set():
                producer.produce(topic, b"x", partition=0)
                producer.poll(0)
                time.sleep(0.2)

        writer = threading.Thread(target=write)
        writer.start()
        try:
            time.sleep(1.0)
            _cut_from_brokers(cluster.net, follower)
            try:
                deadline = time.monotonic() + PARTITION_S
                while follower in cluster.partition_states(topic)[0].isr:
                    assert time.monotonic() < deadline, "the cut-off follower stayed in the ISR"
                    time.sleep(0.1)
                time.sleep(max(0.0, deadline - time.monotonic()))
            finally:
                cluster.net.heal(follower)
            healed = time.monotonic()
            full = cf.wait_full_isr(cluster, topic, 3, timeout=60)
            refill = time.monotonic() - healed
        finally:
            stop.set()
            writer.join()
            producer.flush(30)
        assert full is True, full
        print(f"\nISR full {refill:.2f} s after the heal "
              f"(replica.socket.timeout.ms={SOCKET_TIMEOUT_MS})")
        assert refill < SOCKET_TIMEOUT_MS / 1000 + 3.0, f"ISR full only {refill:.1f} s after the heal"
