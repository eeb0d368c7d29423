"""Which broker setting names headrace knows: the C++ core's (it lists them
with their defaults and docs) and the few only the Python control plane of a
cluster reads (CONTROL_PLANE_SETTINGS). Used by headrace.settings (gathering
and validating) and headrace.server_properties (telling a misspelt key from a
Kafka key headrace does not implement).
"""
from __future__ import annotations

# Settings read by the Python control plane of a cluster (headrace.cluster;
# docs/configuration.md): name -> (default, doc). The C++ core knows some of
# them too; the others it would reject as unknown, see
# headrace.settings.settings_for_core.
CONTROL_PLANE_SETTINGS = {
    "zookeeper.connect": ("", "HOST:PORT[,HOST:PORT...][/CHROOT] of ZooKeeper; empty: a "
                              "single node."),
    "zookeeper.session.timeout.ms": ("18000", "ZooKeeper session timeout."),
    "zookeeper.connection.timeout.ms": ("", "How long to wait for ZooKeeper at start "
                                            "(empty: the session timeout)."),
    "broker.rack": ("", "This broker's rack, for rack-aware replica placement."),
    "unclean.leader.election.enable": ("false", "Elect a replica outside the ISR when no "
                                                "ISR member is alive."),
    "auto.leader.rebalance.enable": ("true", "Move leadership back to preferred replicas."),
    "leader.imbalance.check.interval.seconds": ("300", "How often preferred leaders are "
                                                       "checked."),
    "leader.imbalance.per.broker.percentage": ("10", "Share of a broker's preferred "
                                                     "partitions led elsewhere that triggers "
                                                     "a rebalance."),
    "headrace.log.format": ("text", "Log line format of the broker process (C++ core and "
                                    "Python): text or json; --log-format and "
                                    "HEADRACE_LOG_FORMAT set it too."),
    "offsets.topic.replication.factor": ("3", "Replicas of __consumer_offsets in a cluster "
                                              "(fewer if fewer brokers are live)."),
}


def core_known_settings() -> set[str]:
    from headrace._core import describe_settings

    return {row[0] for row in describe_settings({})}


def known_setting_names() -> set[str]:
    """Every name headrace takes as a setting: the core's and the control plane's."""
    return core_known_settings() | set(CONTROL_PLANE_SETTINGS)
