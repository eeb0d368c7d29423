"""Reading the cluster for a principal the console cannot connect as: a
browser that logged in with a client certificate (docs/console.md "Mutual
TLS").

The console does not hold that user's private key, so it cannot open a
Kafka connection as the user. It reads with its own service connection (the
broker's key store, on the listener that checks client certificates) and
asks the broker's own authorizer (``headrace._core.Broker.authorize``, the
check every Kafka request of that principal would meet) before it shows
anything: every answer below is what the broker would have answered the
user, with Kafka's rules —

- Metadata lists the topics the principal may DESCRIBE (READ, WRITE,
  DELETE and ALTER imply it, as the authorizer decides);
- ListGroups and DescribeGroups: the groups it may DESCRIBE; OffsetFetch
  leaves out the topics it may not DESCRIBE;
- DescribeConfigs: DESCRIBE_CONFIGS on the topic (or the cluster, for a
  broker); DescribeLogDirs: DESCRIBE on the cluster;
- Fetch (the message browser): READ on the topic.

A resource the principal may not DESCRIBE is answered as unknown, so its
name never reaches the page.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Callable, Iterable, Mapping

from headrace.admin import AdminError
from headrace.console.data import ConsoleAdmin

CLUSTER_NAME = "kafka-cluster"
NOT_AUTHORIZED = "not authorized (CLUSTER_AUTHORIZATION_FAILED)"


@dataclass(frozen=True)
class Acting:
    """A principal ("User:CN=...") connecting from ``host`` (the browser's
    IP address) and the broker's authorizer (``Broker.authorize``)."""

    principal: str
    host: str
    authorize: Callable[[str, str, str, str, str], bool]

    def allows(self, operation: str, resource_type: str, name: str) -> bool:
        return bool(self.authorize(self.principal, self.host, operation, resource_type, name))

    def may_describe_topic(self, topic: str) -> bool:
        return self.allows("Describe", "Topic", topic)

    def admin(self, brokers: str, **kwargs) -> "ActingAdmin":
        """The Admin a ClusterView reads with for this principal (made here:
        headrace.console.data does not import this module)."""
        return ActingAdmin(brokers, self, **kwargs)


class ActingAdmin(ConsoleAdmin):
    """A ConsoleAdmin whose answers are cut to what ``acting`` may see."""

    def __init__(self, brokers: str, acting: Acting, **kwargs):
        super().__init__(brokers, **kwargs)
        self.acting = acting

    # -- topics ----------------------------------------------------------------
    def metadata(self, topic: str | None = None):
        md = copy.copy(super().metadata(topic))
        md.topics = {name: tm for name, tm in md.topics.items()
                     if self.acting.may_describe_topic(name)}
        return md

    def offsets_by_leader(self, leaders: Mapping[tuple[str, int], int], spec: str,
                          deadline: float):
        return super().offsets_by_leader(
            {k: v for k, v in leaders.items() if self.acting.may_describe_topic(k[0])},
            spec, deadline)

    def configs_from(self, brokers, resource_type: int, name: str, deadline=None, keys=None):
        from headrace.admin_wire import RESOURCE_TOPIC

        if resource_type == RESOURCE_TOPIC:
            allowed = self.acting.allows("DescribeConfigs", "Topic", name)
            code = "TOPIC_AUTHORIZATION_FAILED"
        else:
            allowed = self.acting.allows("DescribeConfigs", "Cluster", CLUSTER_NAME)
            code = "CLUSTER_AUTHORIZATION_FAILED"
        if not allowed:
            raise AdminError(f"cannot describe configs: not authorized ({code})")
        return super().configs_from(brokers, resource_type, name, deadline, keys)

    def log_dirs_at(self, brokers: Iterable[tuple[int, str, int]], deadline: float):
        brokers = list(brokers)
        if not self.acting.allows("Describe", "Cluster", CLUSTER_NAME):
            return [], {node: NOT_AUTHORIZED for node, _, _ in brokers}
        return super().log_dirs_at(brokers, deadline)

    def sizes_by_broker(self, brokers, topic: str, partitions: list[int], deadline: float):
        brokers = list(brokers)
        if not self.acting.allows("Describe", "Cluster", CLUSTER_NAME):
            return {}, {node: NOT_AUTHORIZED for node, _, _ in brokers}
        return super().sizes_by_broker(brokers, topic, partitions, deadline)

    # -- groups ----------------------------------------------------------------
    def may_describe_group(self, group: str) -> bool:
        return self.acting.allows("Describe", "Group", group)

    def groups(self):
        return [g for g in super().groups() if self.may_describe_group(g.group_id)]

    def groups_from(self, brokers, deadline: float):
        listed, errors = super().groups_from(brokers, deadline)
        return [(g, state) for g, state in listed if self.may_describe_group(g)], errors

    def describe_group(self, group: str):
        if not self.may_describe_group(group):  # ClusterView.group answers 404 first
            raise AdminError(f"unknown group {group!r}")
        return super().describe_group(group)

    def committed(self, group: str) -> dict[tuple[str, int], int]:
        if not self.may_describe_group(group):
            return {}
        return {k: v for k, v in super().committed(group).items()
                if self.acting.may_describe_topic(k[0])}
