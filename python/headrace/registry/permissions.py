"""Who may do what in the schema registry (docs/schema-registry.md
"Permissions"): the broker's own ACL authorizer decides
(``headrace._core.Broker.authorize``, the check every Kafka request meets),
for the principal the request authenticated as, with the mapping of
Confluent's Topic ACL authorizer: a subject named ``<topic>-key`` or
``<topic>-value`` (TopicNameStrategy) is read with READ on the topic and
changed with WRITE on it; what concerns no one subject (the global config
and mode, subjects of another naming) needs DESCRIBE (read) or ALTER
(change) on the cluster, which super users have. Without an authorizer
(``authorizer.class.name`` unset) everything is allowed.

A refusal answers 403 with Confluent's error code 40301.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from headrace.registry import errors as E

READ, WRITE = "read", "write"
ANONYMOUS = "User:ANONYMOUS"
CLUSTER = "kafka-cluster"
_TOPIC_OPS = {READ: "Read", WRITE: "Write"}
_CLUSTER_OPS = {READ: "Describe", WRITE: "Alter"}


def subject_topic(subject: str) -> str | None:
    """The topic of a TopicNameStrategy subject, else None."""
    for suffix in ("-key", "-value"):
        if subject.endswith(suffix) and len(subject) > len(suffix):
            return subject[: -len(suffix)]
    return None


@dataclass(frozen=True)
class Caller:
    """Who sent a request: the principal it authenticated as (a SASL user
    "User:name", a client certificate's principal, or User:ANONYMOUS) and
    its IP address (the ACLs' host)."""

    principal: str = ANONYMOUS
    host: str = ""


class Permissions:
    """``authorize``: Broker.authorize(principal, host, operation,
    resource type, name) -> bool; None allows everything."""

    def __init__(self, authorize: Callable[[str, str, str, str, str], bool] | None):
        self._authorize = authorize

    def may(self, caller: Caller, access: str, subject: str | None = None) -> bool:
        if self._authorize is None:
            return True
        topic = subject_topic(subject) if subject is not None else None
        if topic is not None:
            return self._authorize(caller.principal, caller.host, _TOPIC_OPS[access], "Topic",
                                   topic)
        return self._authorize(caller.principal, caller.host, _CLUSTER_OPS[access], "Cluster",
                               CLUSTER)

    def may_forward(self, caller: Caller) -> bool:
        """Whether ``caller`` (a broker forwarding a write for another
        principal) may: ClusterAction on the cluster, as Kafka requires of
        a broker sending an Envelope (KIP-590); brokers' principals are
        super users or granted it."""
        if self._authorize is None:
            return True
        return self._authorize(caller.principal, caller.host, "ClusterAction", "Cluster",
                               CLUSTER)

    def require(self, caller: Caller, access: str, subject: str | None = None) -> None:
        """RegistryError 403/40301 unless ``caller`` may."""
        if not self.may(caller, access, subject):
            what = f"subject '{subject}'" if subject is not None else "the registry's global " \
                                                                      "config and mode"
            raise E.RegistryError(403, E.FORBIDDEN,
                                  f"User {caller.principal} may not {access} {what}")
