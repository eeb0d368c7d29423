"""Client-side steps the cluster tests share (a real EmbeddedCluster, real
confluent-kafka clients)."""
from __future__ import annotations

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

TIMEOUT_S = 60.0


def create_topic(cluster, topic: str, partitions: int = 3, rf: int = 3) -> None:
    """Creates `topic` (RF >= 2: min.insync.replicas=2) and waits until every
    partition has a leader."""
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    configs = {"min.insync.replicas": "2"} if rf >= 2 else {}
    admin.create_topics([NewTopic(topic, partitions, rf, config=configs)],
                        operation_timeout=30)[topic].result(30)
    cluster.wait_for_leaders(topic, timeout=30)


def txn_producer(cluster, txn_id: str, timeout_ms: int = 30000) -> Producer:
    """A transactional producer, initialised (its coordinator found)."""
    p = Producer({"bootstrap.servers": cluster.bootstrap_servers, "transactional.id": txn_id,
                  "transaction.timeout.ms": timeout_ms, "linger.ms": 2})
    p.init_transactions(TIMEOUT_S)
    return p
