"""Authorisation (ACLs): every Kafka API the broker serves checks its
resources with Kafka's rules (docs/security.md).

Every client here is User:ANONYMOUS (no SASL/TLS principal yet), so the
tests grant and revoke ACLs for User:ANONYMOUS. Administration speaks from
127.0.0.2 — another client IP, which ACLs can name as their host — and the
client under test from 127.0.0.1: the bootstrap ACL file gives
User:ANONYMOUS@127.0.0.2 everything, User:ANONYMOUS@127.0.0.1 nothing.

- The matrix: for every API key ApiVersions lists, a request without the ACL
  gets the API's authorisation error and changes nothing (probed from the
  admin address), and with the ACL it passes the check. A served API without
  a row fails test_every_served_api_has_a_row.
- Metadata hides undescribable topics; deny wins; the ACL APIs' own errors;
  super.users bypass; allow.everyone.if.no.acl.found; ACLs survive a
  restart; real clients (confluent-kafka producer and group consumer, the
  CLI); a two-broker cluster where ACLs created on one broker apply on the
  other (Kafka's ZooKeeper layout); brokers listed in super.users replicate
  with the authorizer on.
"""
from __future__ import annotations

import json
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass, field
from typing import Callable

import pytest

from acl_wire import KIP848, Conn, msg
from batch_builder import encode_batch
from headrace import EmbeddedBroker, EmbeddedCluster

ANON = "User:ANONYMOUS"
ADMIN_HOST = "127.0.0.2"
TOPIC, CLUSTER, GROUP, TXN = 2, 4, 3, 5  # ResourceType
ALL, READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE = 2, 3, 4, 5, 6, 7, 8  # AclOperation
CLUSTER_ACTION, DESCRIBE_CONFIGS, ALTER_CONFIGS, IDEMPOTENT_WRITE = 9, 10, 11, 12
ALLOW, DENY = 3, 2
LITERAL, PREFIXED = 3, 4
E_TOPIC, E_GROUP, E_CLUSTER, E_TXN = 29, 30, 31, 53
AUTH_ERRORS = {E_TOPIC, E_GROUP, E_CLUSTER, E_TXN}
AUTHORIZER = "kafka.security.authorizer.AclAuthorizer"

T = "acl-t"          # a topic with records
T_DEL = "acl-del"    # deleted by the DeleteTopics row
T_GROW = "acl-grow"  # grown by the CreatePartitions row
T_NEW = "acl-new"    # created by the CreateTopics row
G = "acl-g"          # a group with a committed offset
G_DEL = "acl-dg"     # deleted by the DeleteGroups row
TX = "acl-tx"        # a transactional id with coordinator state


# -- helpers -------------------------------------------------------------------------------
def binding(rtype, name, op, principal=ANON, host="*", perm=ALLOW, pattern=LITERAL) -> dict:
    return {"resource_type": rtype, "resource_name": name, "resource_pattern_type": pattern,
            "principal": principal, "host": host, "operation": op, "permission_type": perm}


def create_acls(conn, bindings) -> list[int]:
    resp = conn.call(msg("admin", "CreateAclsRequest", 2, creations=bindings))
    return [r.error_code for r in resp.results]


def delete_acls(conn, bindings) -> list[int]:
    filters = [{"resource_type_filter": b["resource_type"], "resource_name_filter": b["resource_name"],
                "pattern_type_filter": b["resource_pattern_type"], "principal_filter": b["principal"],
                "host_filter": b["host"], "operation": b["operation"],
                "permission_type": b["permission_type"]} for b in bindings]
    resp = conn.call(msg("admin", "DeleteAclsRequest", 2, filters=filters))
    return [r.error_code for r in resp.filter_results]


def describe_acls(conn) -> tuple[int, list[tuple]]:
    resp = conn.call(msg("admin", "DescribeAclsRequest", 2, resource_type_filter=1,
                         resource_name_filter=None, pattern_type_filter=1, principal_filter=None,
                         host_filter=None, operation=1, permission_type=1))
    return resp.error_code, sorted((r.resource_type, r.resource_name, r.pattern_type, a.principal,
                                    a.host, a.operation, a.permission_type)
                                   for r in resp.resources for a in r.acls)


def bootstrap_acl_file(data_dir, bindings: list[dict]) -> None:
    """The single-node ACL file (docs/metadata-format.md), written before start."""
    (data_dir / "headrace-acls.json").write_text(json.dumps({"version": 1, "acls": bindings}))


ADMIN_ACLS = [{"resource_type": rt, "pattern_type": "LITERAL", "name": name,
               "principal": ANON, "host": ADMIN_HOST, "operation": "All", "permission": "Allow"}
              for rt, name in (("Cluster", "kafka-cluster"), ("Topic", "*"), ("Group", "*"),
                               ("TransactionalId", "*"))]


def address(broker) -> tuple[str, int]:
    host, port = broker.bootstrap_servers.rsplit(":", 1)
    return host, int(port)


def records(n: int = 1) -> bytes:
    return encode_batch([(f"k{i}".encode(), b"v") for i in range(n)])


def produce_req(topic, transactional_id=None):
    return msg("producer", "ProduceRequest", 7, transactional_id=transactional_id, acks=1,
               timeout_ms=5000, topic_data=[{"name": topic, "partition_data": [
                   {"index": 0, "records": records()}]}])


def end_offset(admin, topic) -> int:
    resp = admin.call(msg("consumer", "ListOffsetsRequest", 5, replica_id=-1, isolation_level=0,
                          topics=[{"name": topic, "partitions": [
                              {"partition_index": 0, "current_leader_epoch": -1,
                               "timestamp": -1}]}]))
    p = resp.topics[0].partitions[0]
    assert p.error_code == 0, p
    return p.offset


def topic_partitions(admin, topic) -> int | None:
    resp = admin.call(msg("metadata", "MetadataRequest", 9, topics=[{"name": topic}],
                          allow_auto_topic_creation=False,
                          include_topic_authorized_operations=False))
    t = resp.topics[0]
    return None if t.error_code == 3 else len(t.partitions)


def committed(admin, group, topic=T) -> int:
    resp = admin.call(msg("consumer", "OffsetFetchRequest", 7, group_id=group, require_stable=False,
                          topics=[{"name": topic, "partition_indexes": [0]}]))
    return resp.topics[0].partitions[0].committed_offset


def commit(conn, group, offset, topic=T):
    return conn.call(msg("consumer", "OffsetCommitRequest", 7, group_id=group,
                         generation_id_or_member_epoch=-1, member_id="", group_instance_id=None,
                         topics=[{"name": topic, "partitions": [
                             {"partition_index": 0, "committed_offset": offset,
                              "committed_leader_epoch": -1, "committed_metadata": ""}]}]))


def topic_config(admin, topic, key) -> str | None:
    resp = admin.call(msg("admin", "DescribeConfigsRequest", 4, resources=[
        {"resource_type": 2, "resource_name": topic, "configuration_keys": [key]}],
        include_synonyms=False, include_documentation=False))
    return {c.name: c.value for c in resp.results[0].configs}.get(key)


def group_config(admin, group, key) -> str | None:
    resp = admin.call(msg("admin", "DescribeConfigsRequest", 4, resources=[
        {"resource_type": 32, "resource_name": group, "configuration_keys": [key]}],
        include_synonyms=False, include_documentation=False))
    return {c.name: c.value for c in resp.results[0].configs}.get(key)


def group_names(admin) -> list[str]:
    resp = admin.call(msg("admin", "ListGroupsRequest", 4, states_filter=[]))
    return sorted(g.group_id for g in resp.groups)


def acl_set(admin):
    return describe_acls(admin)[1]


def create_topic(admin, name, partitions=1):
    resp = admin.call(msg("admin", "CreateTopicsRequest", 5, topics=[
        {"name": name, "num_partitions": partitions, "replication_factor": 1, "assignments": [],
         "configs": []}], timeout_ms=10000, validate_only=False))
    assert resp.topics[0].error_code in (0, 36), resp


# -- the matrix ----------------------------------------------------------------------------
@dataclass
class Row:
    """One API: its request, the ACLs that let it through, the error a
    client without them gets, where that error is, and (optionally) a probe
    from the admin address that must not change when refused."""
    key: int
    name: str
    request: Callable[[], object]
    grants: list[tuple]
    denied: int
    errors: Callable[[object], list[int]]
    probe: Callable[[Conn], object] | None = None
    # For APIs that refuse by leaving things out (ListGroups, ...): the
    # response -> whether the resource was shown.
    shown: Callable[[object], bool] | None = None
    # The error every resource gets once allowed (the request's own
    # outcome: e.g. JoinGroup's MEMBER_ID_REQUIRED for a first join).
    allowed: int = 0
    # Allowed, the probe must change (the request did its work).
    changes: bool = False


def _parts(topics, attr="partitions"):
    return [p.error_code for t in topics for p in getattr(t, attr)]


def _rows(data_dir: str) -> list[Row]:
    one_topic = [{"name": T, "partitions": [0]}]
    return [
        Row(0, "Produce", lambda: produce_req(T), [(TOPIC, T, WRITE)], E_TOPIC,
            lambda r: _parts(r.responses, "partition_responses"),
            probe=lambda a: end_offset(a, T),
            changes=True),
        Row(0, "Produce transactional", lambda: produce_req(T, TX),
            [(TXN, TX, WRITE), (TOPIC, T, WRITE)], E_TXN,
            lambda r: _parts(r.responses, "partition_responses"),
            probe=lambda a: end_offset(a, T),
            changes=True),
        Row(1, "Fetch", lambda: msg("consumer", "FetchRequest", 11, replica_id=-1, max_wait_ms=0,
                                    min_bytes=0, max_bytes=1 << 20, isolation_level=0,
                                    session_id=0, session_epoch=-1, topics=[
                                        {"topic": T, "partitions": [
                                            {"partition": 0, "current_leader_epoch": -1,
                                             "fetch_offset": 0, "log_start_offset": -1,
                                             "partition_max_bytes": 1 << 20}]}],
                                    forgotten_topics_data=[], rack_id=""),
            [(TOPIC, T, READ)], E_TOPIC, lambda r: _parts(r.responses)),
        Row(1, "Fetch as a follower", lambda: msg(
            "consumer", "FetchRequest", 11, replica_id=7, max_wait_ms=0, min_bytes=0,
            max_bytes=1 << 20, isolation_level=0, session_id=0, session_epoch=-1, topics=[
                {"topic": T, "partitions": [{"partition": 0, "current_leader_epoch": -1,
                                             "fetch_offset": 0, "log_start_offset": -1,
                                             "partition_max_bytes": 1 << 20}]}],
            forgotten_topics_data=[], rack_id=""),
            [(CLUSTER, "kafka-cluster", CLUSTER_ACTION)], E_TOPIC, lambda r: _parts(r.responses)),
        Row(2, "ListOffsets", lambda: msg("consumer", "ListOffsetsRequest", 5, replica_id=-1,
                                          isolation_level=0, topics=[{"name": T, "partitions": [
                                              {"partition_index": 0, "current_leader_epoch": -1,
                                               "timestamp": -1}]}]),
            [(TOPIC, T, DESCRIBE)], E_TOPIC, lambda r: _parts(r.topics)),
        Row(3, "Metadata", lambda: msg("metadata", "MetadataRequest", 9, topics=[{"name": T}],
                                       allow_auto_topic_creation=False,
                                       include_topic_authorized_operations=False),
            [(TOPIC, T, DESCRIBE)], E_TOPIC, lambda r: [t.error_code for t in r.topics]),
        Row(3, "Metadata auto-create", lambda: msg(
            "metadata", "MetadataRequest", 9, topics=[{"name": "acl-auto"}],
            allow_auto_topic_creation=True, include_topic_authorized_operations=False),
            [(TOPIC, "acl-auto", DESCRIBE), (TOPIC, "acl-auto", CREATE)], E_TOPIC,
            lambda r: [t.error_code for t in r.topics],
            probe=lambda a: topic_partitions(a, "acl-auto"),
            allowed=5,
            changes=True),
        Row(8, "OffsetCommit", lambda: commit_req(G, 5), [(GROUP, G, READ), (TOPIC, T, READ)],
            E_GROUP, lambda r: _parts(r.topics), probe=lambda a: committed(a, G),
            changes=True),
        Row(9, "OffsetFetch", lambda: msg("consumer", "OffsetFetchRequest", 7, group_id=G,
                                          require_stable=False,
                                          topics=[{"name": T, "partition_indexes": [0]}]),
            [(GROUP, G, DESCRIBE), (TOPIC, T, DESCRIBE)], E_GROUP, lambda r: [r.error_code]),
        Row(10, "FindCoordinator group", lambda: msg("metadata", "FindCoordinatorRequest", 3,
                                                     key=G, key_type=0),
            [(GROUP, G, DESCRIBE)], E_GROUP, lambda r: [r.error_code]),
        Row(10, "FindCoordinator transaction", lambda: msg(
            "metadata", "FindCoordinatorRequest", 3, key=TX, key_type=1),
            [(TXN, TX, DESCRIBE)], E_TXN, lambda r: [r.error_code]),
        Row(11, "JoinGroup", lambda: msg("consumer", "JoinGroupRequest", 5, group_id="acl-jg",
                                         session_timeout_ms=10000, rebalance_timeout_ms=10000,
                                         member_id="", group_instance_id=None,
                                         protocol_type="consumer",
                                         protocols=[{"name": "range", "metadata": b""}]),
            [(GROUP, "acl-jg", READ)], E_GROUP, lambda r: [r.error_code],
            probe=lambda a: group_names(a),
            allowed=79),
        Row(12, "Heartbeat", lambda: msg("consumer", "HeartbeatRequest", 3, group_id=G,
                                         generation_id=1, member_id="m", group_instance_id=None),
            [(GROUP, G, READ)], E_GROUP, lambda r: [r.error_code],
            allowed=25),
        Row(13, "LeaveGroup", lambda: msg("consumer", "LeaveGroupRequest", 3, group_id=G,
                                          members=[{"member_id": "m",
                                                    "group_instance_id": None}]),
            [(GROUP, G, READ)], E_GROUP, lambda r: [r.error_code]),
        Row(14, "SyncGroup", lambda: msg("consumer", "SyncGroupRequest", 3, group_id=G,
                                         generation_id=1, member_id="m", group_instance_id=None,
                                         assignments=[]),
            [(GROUP, G, READ)], E_GROUP, lambda r: [r.error_code],
            allowed=25),
        Row(15, "DescribeGroups", lambda: msg("admin", "DescribeGroupsRequest", 4, groups=[G],
                                              include_authorized_operations=False),
            [(GROUP, G, DESCRIBE)], E_GROUP, lambda r: [g.error_code for g in r.groups]),
        Row(16, "ListGroups", lambda: msg("admin", "ListGroupsRequest", 4, states_filter=[]),
            [(GROUP, G, DESCRIBE)], 0, lambda r: [r.error_code],
            shown=lambda r: G in [g.group_id for g in r.groups]),
        Row(19, "CreateTopics", lambda: msg("admin", "CreateTopicsRequest", 5, topics=[
            {"name": T_NEW, "num_partitions": 1, "replication_factor": 1, "assignments": [],
             "configs": []}], timeout_ms=10000, validate_only=False),
            [(TOPIC, T_NEW, CREATE)], E_TOPIC, lambda r: [t.error_code for t in r.topics],
            probe=lambda a: topic_partitions(a, T_NEW),
            changes=True),
        Row(20, "DeleteTopics", lambda: msg("admin", "DeleteTopicsRequest", 4,
                                            topic_names=[T_DEL], timeout_ms=10000),
            [(TOPIC, T_DEL, DELETE)], E_TOPIC, lambda r: [t.error_code for t in r.responses],
            probe=lambda a: topic_partitions(a, T_DEL),
            changes=True),
        Row(21, "DeleteRecords", lambda: msg("admin", "DeleteRecordsRequest", 1, topics=[
            {"name": T, "partitions": [{"partition_index": 0, "offset": 1}]}], timeout_ms=5000),
            [(TOPIC, T, DELETE)], E_TOPIC, lambda r: _parts(r.topics),
            probe=lambda a: log_start(a, T),
            changes=True),
        Row(22, "InitProducerId transactional", lambda: msg(
            "producer", "InitProducerIdRequest", 4, transactional_id=TX,
            transaction_timeout_ms=60000, producer_id=-1, producer_epoch=-1),
            [(TXN, TX, WRITE)], E_TXN, lambda r: [r.error_code]),
        Row(22, "InitProducerId idempotent", lambda: msg(
            "producer", "InitProducerIdRequest", 4, transactional_id=None,
            transaction_timeout_ms=60000, producer_id=-1, producer_epoch=-1),
            [(CLUSTER, "kafka-cluster", IDEMPOTENT_WRITE)], E_CLUSTER, lambda r: [r.error_code]),
        Row(23, "OffsetForLeaderEpoch", lambda: msg(
            "consumer", "OffsetForLeaderEpochRequest", 3, replica_id=-1, topics=[
                {"topic": T, "partitions": [{"partition": 0, "current_leader_epoch": -1,
                                             "leader_epoch": 0}]}]),
            [(TOPIC, T, DESCRIBE)], E_TOPIC, lambda r: _parts(r.topics)),
        Row(24, "AddPartitionsToTxn", lambda: msg(
            "producer", "AddPartitionsToTxnRequest", 3, v3_and_below_transactional_id=TX,
            v3_and_below_producer_id=1, v3_and_below_producer_epoch=0,
            v3_and_below_topics=[{"name": T, "partitions": [0]}]),
            [(TXN, TX, WRITE), (TOPIC, T, WRITE)], E_TXN,
            lambda r: [p.partition_error_code for t in r.results_by_topic_v3_and_below
                       for p in t.results_by_partition],
            allowed=49),
        Row(25, "AddOffsetsToTxn", lambda: msg("producer", "AddOffsetsToTxnRequest", 3,
                                               transactional_id=TX, producer_id=1,
                                               producer_epoch=0, group_id=G),
            [(TXN, TX, WRITE), (GROUP, G, READ)], E_TXN, lambda r: [r.error_code],
            allowed=49),
        Row(26, "EndTxn", lambda: msg("producer", "EndTxnRequest", 3, transactional_id=TX,
                                      producer_id=1, producer_epoch=0, committed=False),
            [(TXN, TX, WRITE)], E_TXN, lambda r: [r.error_code],
            allowed=49),
        Row(27, "WriteTxnMarkers", lambda: msg(
            "producer", "WriteTxnMarkersRequest", 1, markers=[
                {"producer_id": 424242, "producer_epoch": 0, "transaction_result": False,
                 "topics": [{"name": "acl-markers", "partition_indexes": [0]}],
                 "coordinator_epoch": 0}]),
            [(CLUSTER, "kafka-cluster", CLUSTER_ACTION)], E_CLUSTER,
            lambda r: [p.error_code for m in r.markers for t in m.topics for p in t.partitions],
            probe=lambda a: end_offset(a, "acl-markers"),
            changes=True),
        Row(28, "TxnOffsetCommit", lambda: msg(
            "producer", "TxnOffsetCommitRequest", 3, transactional_id=TX, group_id=G,
            producer_id=1, producer_epoch=0, generation_id=-1, member_id="",
            group_instance_id=None, topics=[{"name": T, "partitions": [
                {"partition_index": 0, "committed_offset": 1, "committed_leader_epoch": -1,
                 "committed_metadata": ""}]}]),
            [(TXN, TX, WRITE), (GROUP, G, READ), (TOPIC, T, READ)], E_TXN,
            lambda r: _parts(r.topics)),
        Row(29, "DescribeAcls", lambda: msg(
            "admin", "DescribeAclsRequest", 2, resource_type_filter=1, resource_name_filter=None,
            pattern_type_filter=1, principal_filter=None, host_filter=None, operation=1,
            permission_type=1),
            [(CLUSTER, "kafka-cluster", DESCRIBE)], E_CLUSTER, lambda r: [r.error_code]),
        Row(30, "CreateAcls", lambda: msg("admin", "CreateAclsRequest", 2, creations=[
            binding(TOPIC, "acl-probe", READ)]),
            [(CLUSTER, "kafka-cluster", ALTER)], E_CLUSTER,
            lambda r: [x.error_code for x in r.results], probe=acl_set,
            changes=True),
        Row(31, "DeleteAcls", lambda: msg("admin", "DeleteAclsRequest", 2, filters=[
            {"resource_type_filter": 2, "resource_name_filter": "acl-doomed",
             "pattern_type_filter": 3, "principal_filter": None, "host_filter": None,
             "operation": 1, "permission_type": 1}]),
            [(CLUSTER, "kafka-cluster", ALTER)], E_CLUSTER,
            lambda r: [x.error_code for x in r.filter_results], probe=acl_set,
            changes=True),
        Row(32, "DescribeConfigs topic", lambda: msg(
            "admin", "DescribeConfigsRequest", 4, resources=[
                {"resource_type": 2, "resource_name": T, "configuration_keys": None}],
            include_synonyms=False, include_documentation=False),
            [(TOPIC, T, DESCRIBE_CONFIGS)], E_TOPIC, lambda r: [x.error_code for x in r.results]),
        Row(32, "DescribeConfigs broker", lambda: msg(
            "admin", "DescribeConfigsRequest", 4, resources=[
                {"resource_type": 4, "resource_name": "0", "configuration_keys": None}],
            include_synonyms=False, include_documentation=False),
            [(CLUSTER, "kafka-cluster", DESCRIBE_CONFIGS)], E_CLUSTER,
            lambda r: [x.error_code for x in r.results]),
        Row(32, "DescribeConfigs group", lambda: msg(
            "admin", "DescribeConfigsRequest", 4, resources=[
                {"resource_type": 32, "resource_name": G, "configuration_keys": None}],
            include_synonyms=False, include_documentation=False),
            [(GROUP, G, DESCRIBE_CONFIGS)], E_GROUP, lambda r: [x.error_code for x in r.results]),
        Row(33, "AlterConfigs", lambda: msg("admin", "AlterConfigsRequest", 1, resources=[
            {"resource_type": 2, "resource_name": T,
             "configs": [{"name": "retention.ms", "value": "123456"}]}], validate_only=False),
            [(TOPIC, T, ALTER_CONFIGS)], E_TOPIC, lambda r: [x.error_code for x in r.responses],
            probe=lambda a: topic_config(a, T, "retention.ms"),
            changes=True),
        Row(34, "AlterReplicaLogDirs", lambda: msg(
            "admin", "AlterReplicaLogDirsRequest", 1, dirs=[
                {"path": data_dir, "topics": [{"name": T, "partitions": [0]}]}]),
            [(CLUSTER, "kafka-cluster", ALTER)], E_CLUSTER, lambda r: _parts(r.results)),
        Row(35, "DescribeLogDirs", lambda: msg("admin", "DescribeLogDirsRequest", 4,
                                               topics=None),
            [(CLUSTER, "kafka-cluster", DESCRIBE)], E_CLUSTER, lambda r: [r.error_code]),
        Row(37, "CreatePartitions", lambda: msg(
            "admin", "CreatePartitionsRequest", 3, topics=[
                {"name": T_GROW, "count": 2, "assignments": None}],
            timeout_ms=10000, validate_only=False),
            [(TOPIC, T_GROW, ALTER)], E_TOPIC, lambda r: [x.error_code for x in r.results],
            probe=lambda a: topic_partitions(a, T_GROW),
            changes=True),
        Row(42, "DeleteGroups", lambda: msg("admin", "DeleteGroupsRequest", 2,
                                            groups_names=[G_DEL]),
            [(GROUP, G_DEL, DELETE)], E_GROUP, lambda r: [x.error_code for x in r.results],
            probe=lambda a: committed(a, G_DEL),
            changes=True),
        Row(43, "ElectLeaders", lambda: msg("admin", "ElectLeadersRequest", 2, election_type=0,
                                            topic_partitions=[{"topic": T, "partitions": [0]}],
                                            timeout_ms=5000),
            [(CLUSTER, "kafka-cluster", ALTER)], E_CLUSTER, lambda r: [r.error_code]),
        Row(44, "IncrementalAlterConfigs", lambda: msg(
            "admin", "IncrementalAlterConfigsRequest", 1, resources=[
                {"resource_type": 2, "resource_name": T, "configs": [
                    {"name": "retention.ms", "config_operation": 0, "value": "654321"}]}],
            validate_only=False),
            [(TOPIC, T, ALTER_CONFIGS)], E_TOPIC, lambda r: [x.error_code for x in r.responses],
            probe=lambda a: topic_config(a, T, "retention.ms"),
            changes=True),
        Row(44, "IncrementalAlterConfigs group", lambda: msg(
            "admin", "IncrementalAlterConfigsRequest", 1, resources=[
                {"resource_type": 32, "resource_name": G, "configs": [
                    {"name": "share.auto.offset.reset", "config_operation": 0,
                     "value": "earliest"}]}],
            validate_only=False),
            [(GROUP, G, ALTER_CONFIGS)], E_GROUP, lambda r: [x.error_code for x in r.responses],
            probe=lambda a: group_config(a, G, "share.auto.offset.reset"),
            changes=True),
        Row(48, "DescribeClientQuotas", lambda: msg(
            "admin", "DescribeClientQuotasRequest", 0, components=[], strict=False),
            [(CLUSTER, "kafka-cluster", DESCRIBE_CONFIGS)], E_CLUSTER, lambda r: [r.error_code]),
        Row(49, "AlterClientQuotas", lambda: msg(
            "admin", "AlterClientQuotasRequest", 0, validate_only=False, entries=[
                {"entity": [{"entity_type": "client-id", "entity_name": "acl-quota"}],
                 "ops": [{"key": "producer_byte_rate", "value": 1048576.0, "remove": False}]}]),
            [(CLUSTER, "kafka-cluster", ALTER_CONFIGS)], E_CLUSTER,
            lambda r: [x.error_code for x in r.entries],
            probe=lambda a: len(a.call(msg("admin", "DescribeClientQuotasRequest", 0,
                                           components=[], strict=False)).entries),
            changes=True),
        Row(50, "DescribeUserScramCredentials", lambda: msg(
            "admin", "DescribeUserScramCredentialsRequest", 0, users=None),
            [(CLUSTER, "kafka-cluster", DESCRIBE)], E_CLUSTER, lambda r: [r.error_code]),
        Row(51, "AlterUserScramCredentials", lambda: msg(
            "admin", "AlterUserScramCredentialsRequest", 0, deletions=[], upsertions=[
                {"name": "acl-user", "mechanism": 1, "iterations": 4096, "salt": b"acl-salt",
                 "salted_password": b"p" * 32}]),
            [(CLUSTER, "kafka-cluster", ALTER)], E_CLUSTER,
            lambda r: [x.error_code for x in r.results],
            probe=lambda a: sorted(u.user for u in a.call(msg(
                "admin", "DescribeUserScramCredentialsRequest", 0, users=None)).results),
            changes=True),
        Row(45, "AlterPartitionReassignments", lambda: msg(
            "admin", "AlterPartitionReassignmentsRequest", 0, timeout_ms=5000,
            topics=[{"name": T, "partitions": [{"partition_index": 0, "replicas": None}]}]),
            [(CLUSTER, "kafka-cluster", ALTER)], E_CLUSTER, lambda r: [r.error_code]),
        Row(46, "ListPartitionReassignments", lambda: msg(
            "admin", "ListPartitionReassignmentsRequest", 0, timeout_ms=5000, topics=None),
            [(CLUSTER, "kafka-cluster", DESCRIBE)], E_CLUSTER, lambda r: [r.error_code]),
        Row(47, "OffsetDelete", lambda: msg("consumer", "OffsetDeleteRequest", 0, group_id=G,
                                            topics=[{"name": T, "partitions": [
                                                {"partition_index": 0}]}]),
            [(GROUP, G, DELETE), (TOPIC, T, READ)], E_GROUP, lambda r: [r.error_code],
            probe=lambda a: committed(a, G),
            changes=True),
        Row(60, "DescribeCluster", lambda: msg("admin", "DescribeClusterRequest", 0,
                                               include_cluster_authorized_operations=True),
            [(CLUSTER, "kafka-cluster", DESCRIBE)], 0, lambda r: [r.error_code],
            shown=lambda r: DESCRIBE in {int(op) for op in r.authorized_operations}),
        Row(61, "DescribeProducers", lambda: msg("admin", "DescribeProducersRequest", 0,
                                                 topics=[{"name": T,
                                                          "partition_indexes": [0]}]),
            [(TOPIC, T, READ)], E_TOPIC, lambda r: _parts(r.topics)),
        Row(65, "DescribeTransactions", lambda: msg("admin", "DescribeTransactionsRequest", 0,
                                                    transactional_ids=[TX]),
            [(TXN, TX, DESCRIBE)], E_TXN,
            lambda r: [x.error_code for x in r.transaction_states]),
        Row(66, "ListTransactions", lambda: msg("admin", "ListTransactionsRequest", 0,
                                                state_filters=[], producer_id_filters=[]),
            [(TXN, TX, DESCRIBE)], 0, lambda r: [r.error_code],
            shown=lambda r: TX in [x.transactional_id for x in r.transaction_states]),
        Row(68, "ConsumerGroupHeartbeat", lambda: msg(
            "", "ConsumerGroupHeartbeatRequest", 0, group_id="acl-cg", member_id="",
            member_epoch=0, instance_id=None, rack_id=None, rebalance_timeout_ms=10000,
            subscribed_topic_names=[T], server_assignor=None, topic_partitions=[]),
            [(GROUP, "acl-cg", READ), (TOPIC, T, DESCRIBE)], E_GROUP, lambda r: [r.error_code],
            probe=lambda a: group_names(a),
            changes=True),
        Row(69, "ConsumerGroupDescribe", lambda: msg(
            "", "ConsumerGroupDescribeRequest", 0, group_ids=[G],
            include_authorized_operations=False),
            [(GROUP, G, DESCRIBE)], E_GROUP, lambda r: [g.error_code for g in r.groups],
            allowed=69),
        Row(76, "ShareGroupHeartbeat", lambda: msg(
            "", "ShareGroupHeartbeatRequest", 1, group_id="acl-sg",
            member_id="acl-share-member", member_epoch=0, rack_id=None,
            subscribed_topic_names=[T]),
            [(GROUP, "acl-sg", READ), (TOPIC, T, DESCRIBE)], E_GROUP, lambda r: [r.error_code],
            probe=lambda a: group_names(a),
            changes=True),
        Row(77, "ShareGroupDescribe", lambda: msg(
            "", "ShareGroupDescribeRequest", 1, group_ids=[G],
            include_authorized_operations=False),
            [(GROUP, G, DESCRIBE)], E_GROUP, lambda r: [g.error_code for g in r.groups],
            allowed=69),
        # ShareFetch/ShareAcknowledge: READ on the group (top level); READ on
        # each topic is per partition (test_share_consume.py consumes).
        Row(78, "ShareFetch", lambda: msg(
            "", "ShareFetchRequest", 1, group_id="acl-sg", member_id="acl-share-fetcher",
            share_session_epoch=0, max_wait_ms=0, min_bytes=0, max_bytes=1 << 20,
            max_records=10, batch_size=10, topics=[], forgotten_topics_data=[]),
            [(GROUP, "acl-sg", READ)], E_GROUP, lambda r: [r.error_code]),
        Row(79, "ShareAcknowledge", lambda: msg(
            "", "ShareAcknowledgeRequest", 1, group_id="acl-sg", member_id="acl-share-acker",
            share_session_epoch=1, topics=[]),
            [(GROUP, "acl-sg", READ)], E_GROUP, lambda r: [r.error_code],
            allowed=122),  # SHARE_SESSION_NOT_FOUND: it never opened a session
        # The share-state RPCs between brokers (KIP-932): CLUSTER_ACTION, as
        # WriteTxnMarkers; allowed, the zero topic id is UNKNOWN_TOPIC_OR_PARTITION.
        Row(83, "InitializeShareGroupState", lambda: msg(
            "", "InitializeShareGroupStateRequest", 0, group_id="acl-ss", topics=[
                {"topic_id": ZERO_UUID,
                 "partitions": [{"partition": 0, "state_epoch": 0, "start_offset": 0}]}]),
            [(CLUSTER, "kafka-cluster", CLUSTER_ACTION)], E_CLUSTER, _share_state_errors,
            allowed=3),
        Row(84, "ReadShareGroupState", lambda: msg(
            "", "ReadShareGroupStateRequest", 0, group_id="acl-ss", topics=[
                {"topic_id": ZERO_UUID, "partitions": [{"partition": 0, "leader_epoch": 0}]}]),
            [(CLUSTER, "kafka-cluster", CLUSTER_ACTION)], E_CLUSTER, _share_state_errors,
            allowed=3),
        Row(85, "WriteShareGroupState", lambda: msg(
            "", "WriteShareGroupStateRequest", 0, group_id="acl-ss", topics=[
                {"topic_id": ZERO_UUID, "partitions": [
                    {"partition": 0, "state_epoch": 0, "leader_epoch": 0, "start_offset": 0,
                     "state_batches": []}]}]),
            [(CLUSTER, "kafka-cluster", CLUSTER_ACTION)], E_CLUSTER, _share_state_errors,
            allowed=3),
        Row(86, "DeleteShareGroupState", lambda: msg(
            "", "DeleteShareGroupStateRequest", 0, group_id="acl-ss", topics=[
                {"topic_id": ZERO_UUID, "partitions": [{"partition": 0}]}]),
            [(CLUSTER, "kafka-cluster", CLUSTER_ACTION)], E_CLUSTER, _share_state_errors,
            allowed=3),
        Row(87, "ReadShareGroupStateSummary", lambda: msg(
            "", "ReadShareGroupStateSummaryRequest", 0, group_id="acl-ss", topics=[
                {"topic_id": ZERO_UUID, "partitions": [{"partition": 0, "leader_epoch": 0}]}]),
            [(CLUSTER, "kafka-cluster", CLUSTER_ACTION)], E_CLUSTER, _share_state_errors,
            allowed=3),
        Row(90, "DescribeShareGroupOffsets", lambda: msg(
            "", "DescribeShareGroupOffsetsRequest", 0,
            groups=[{"group_id": G, "topics": None}]),
            [(GROUP, G, DESCRIBE)], E_GROUP, lambda r: [g.error_code for g in r.groups],
            allowed=69),  # GROUP_ID_NOT_FOUND: not a share group
        # READ on the group and on each topic (per partition); allowed, the
        # unknown partition 99 is UNKNOWN_TOPIC_OR_PARTITION.
        Row(91, "AlterShareGroupOffsets", lambda: msg(
            "", "AlterShareGroupOffsetsRequest", 0, group_id="acl-sg-alter", topics=[
                {"topic_name": T, "partitions": [{"partition_index": 99, "start_offset": 0}]}]),
            [(GROUP, "acl-sg-alter", READ), (TOPIC, T, READ)], E_GROUP,
            lambda r: [p.error_code for t in r.responses for p in t.partitions],
            allowed=3),
        # DELETE on the group (top level), READ on each topic (per topic).
        Row(92, "DeleteShareGroupOffsets", lambda: msg(
            "", "DeleteShareGroupOffsetsRequest", 0, group_id="acl-sg-deloffsets",
            topics=[{"topic_name": T}]),
            [(GROUP, "acl-sg-deloffsets", DELETE), (TOPIC, T, READ)], E_GROUP,
            lambda r: [r.error_code] + [p.error_code for t in r.responses for p in t.partitions]),
    ]


ZERO_UUID = uuid.UUID(int=0)


def _share_state_errors(r):
    return [p.error_code for t in r.results for p in t.partitions]


def commit_req(group, offset):
    return msg("consumer", "OffsetCommitRequest", 7, group_id=group,
               generation_id_or_member_epoch=-1, member_id="", group_instance_id=None,
               topics=[{"name": T, "partitions": [
                   {"partition_index": 0, "committed_offset": offset,
                    "committed_leader_epoch": -1, "committed_metadata": ""}]}])


def log_start(admin, topic) -> int:
    resp = admin.call(msg("consumer", "ListOffsetsRequest", 5, replica_id=-1, isolation_level=0,
                          topics=[{"name": topic, "partitions": [
                              {"partition_index": 0, "current_leader_epoch": -1,
                               "timestamp": -2}]}]))
    return resp.topics[0].partitions[0].offset


# ApiVersions answers everyone (as Kafka); SASL handshakes come before any principal.
EXEMPT = {18, 17, 36}

ROWS = _rows("{data_dir}")


@pytest.fixture(scope="module")
def secured(tmp_path_factory):
    """A broker with the authorizer on, User:ANONYMOUS@127.0.0.2 allowed
    everything (the bootstrap ACL file), and the matrix's resources."""
    data_dir = tmp_path_factory.mktemp("acl")
    bootstrap_acl_file(data_dir, ADMIN_ACLS)
    broker = EmbeddedBroker(data_dir=str(data_dir), settings={
        "authorizer.class.name": AUTHORIZER, "auto.create.topics.enable": "true"}).start()
    addr = address(broker)
    admin = Conn(addr, source=ADMIN_HOST)
    for name in (T, T_DEL, T_GROW, "acl-markers"):
        create_topic(admin, name)
    for _ in range(3):
        r = admin.call(produce_req(T))
        assert r.responses[0].partition_responses[0].error_code == 0
    for group in (G, G_DEL):
        assert _parts(admin.call(commit_req(group, 1)).topics) == [0]
    doomed = binding(TOPIC, "acl-doomed", READ, principal="User:nobody")
    assert create_acls(admin, [doomed]) == [0]  # the DeleteAcls row removes it
    init = admin.call(msg("producer", "InitProducerIdRequest", 4, transactional_id=TX,
                          transaction_timeout_ms=60000, producer_id=-1, producer_epoch=-1))
    assert init.error_code == 0
    try:
        yield broker, addr, admin, data_dir
    finally:
        admin.close()
        broker.stop()


def _grants(row: Row) -> list[dict]:
    return [binding(rt, name, op) for rt, name, op in row.grants]


def _with_data_dir(row: Row, data_dir) -> Row:
    if row.key != 34:
        return row
    return next(r for r in _rows(str(data_dir)) if r.key == 34)


@pytest.mark.parametrize("row", ROWS, ids=[f"{r.key}-{r.name}" for r in ROWS])
def test_api_refuses_without_acl_and_passes_with_it(secured, row):
    broker, addr, admin, data_dir = secured
    row = _with_data_dir(row, data_dir)
    with Conn(addr) as client:
        before = row.probe(admin) if row.probe else None
        resp = client.call(row.request())
        errors = row.errors(resp)
        if row.shown is None:
            assert errors and all(e == row.denied for e in errors), (row.name, errors, resp)
        else:
            assert errors == [0] * len(errors) and not row.shown(resp), (row.name, resp)
        if row.probe:
            assert row.probe(admin) == before, f"{row.name}: a refused request changed state"
        grants = _grants(row)
        assert create_acls(admin, grants) == [0] * len(grants)
        try:
            resp = client.call(row.request())
            errors = row.errors(resp)
            assert errors and all(e == row.allowed for e in errors), (row.name, errors, resp)
            if row.shown is not None:
                assert row.shown(resp), (row.name, resp)
            if row.changes:  # visible once committed (acks=1: after the flush) / created
                deadline = time.monotonic() + 10
                while row.probe(admin) == before and time.monotonic() < deadline:
                    time.sleep(0.02)
                assert row.probe(admin) != before, f"{row.name}: allowed, but nothing changed"
        finally:
            assert delete_acls(admin, grants) == [0] * len(grants)


def test_every_served_api_has_a_row(secured):
    _, addr, _, _ = secured
    with Conn(addr) as c:
        resp = c.call(msg("metadata", "ApiVersionsRequest", 2))
    served = {k.api_key for k in resp.api_keys}
    assert {29, 30, 31} <= served
    missing = served - EXEMPT - {r.key for r in ROWS}
    assert not missing, f"APIs without an authorisation row: {sorted(missing)}"


def test_metadata_lists_only_describable_topics(secured):
    _, addr, admin, _ = secured
    with Conn(addr) as client:
        def listed():
            r = client.call(msg("metadata", "MetadataRequest", 9, topics=None,
                                allow_auto_topic_creation=False,
                                include_topic_authorized_operations=True))
            return {t.name: {int(op) for op in t.authorized_operations} for t in r.topics}
        assert listed() == {}
        grant = [binding(TOPIC, "acl-", READ, pattern=PREFIXED)]
        assert create_acls(admin, grant) == [0]
        try:
            seen = listed()
            assert T in seen and T_GROW in seen
            # READ implies DESCRIBE; nothing else is granted.
            assert seen[T] == {READ, DESCRIBE}
        finally:
            delete_acls(admin, grant)
        assert listed() == {}


def test_deny_wins_over_allow(secured):
    _, addr, admin, _ = secured
    acls = [binding(TOPIC, "*", ALL), binding(TOPIC, T, WRITE, perm=DENY)]
    assert create_acls(admin, acls) == [0, 0]
    try:
        with Conn(addr) as client:
            r = client.call(produce_req(T))
            assert _parts(r.responses, "partition_responses") == [E_TOPIC]
            r = client.call(msg("consumer", "ListOffsetsRequest", 5, replica_id=-1,
                                isolation_level=0, topics=[{"name": T, "partitions": [
                                    {"partition_index": 0, "current_leader_epoch": -1,
                                     "timestamp": -1}]}]))
            assert _parts(r.topics) == [0]
    finally:
        delete_acls(admin, acls)


def test_acl_api_errors_are_kafkas(secured):
    _, addr, admin, _ = secured
    bad = [binding(TOPIC, "x", READ, principal="nocolon"),
           binding(CLUSTER, "not-kafka-cluster", ALTER),
           binding(TOPIC, "x", 1),  # ANY is a filter value, not an operation
           binding(TOPIC, "x", READ)]
    assert create_acls(admin, bad) == [42, 42, 42, 0]
    resp = admin.call(msg("admin", "DescribeAclsRequest", 2, resource_type_filter=0,
                          resource_name_filter=None, pattern_type_filter=1,
                          principal_filter=None, host_filter=None, operation=1,
                          permission_type=1))
    assert resp.error_code == 42
    resp = admin.call(msg("admin", "DeleteAclsRequest", 2, filters=[
        {"resource_type_filter": 2, "resource_name_filter": "x", "pattern_type_filter": 3,
         "principal_filter": None, "host_filter": None, "operation": 1, "permission_type": 1}]))
    assert [(m.resource_name, m.operation) for m in resp.filter_results[0].matching_acls] == \
        [("x", READ)]


def test_acls_survive_a_restart(tmp_path):
    bootstrap_acl_file(tmp_path, ADMIN_ACLS)
    settings = {"authorizer.class.name": AUTHORIZER}
    grant = binding(TOPIC, "kept", WRITE, host="10.1.2.3")
    with EmbeddedBroker(data_dir=str(tmp_path), settings=settings) as b:
        with Conn(address(b), source=ADMIN_HOST) as admin:
            assert create_acls(admin, [grant]) == [0]
            before = acl_set(admin)
    doc = json.loads((tmp_path / "headrace-acls.json").read_text())
    assert {"resource_type": "Topic", "pattern_type": "LITERAL", "name": "kept",
            "principal": ANON, "host": "10.1.2.3", "operation": "Write",
            "permission": "Allow"} in doc["acls"]
    with EmbeddedBroker(data_dir=str(tmp_path), settings=settings) as b:
        with Conn(address(b), source=ADMIN_HOST) as admin:
            assert acl_set(admin) == before
            assert (TOPIC, "kept", LITERAL, ANON, "10.1.2.3", WRITE, ALLOW) in before


def test_without_authorizer_acl_apis_answer_security_disabled():
    with EmbeddedBroker() as b, Conn(address(b)) as c:
        assert create_acls(c, [binding(TOPIC, "t", READ)]) == [54]
        assert describe_acls(c)[0] == 54
        assert delete_acls(c, [binding(TOPIC, "t", READ)]) == [54]
        # Auto-created on first use: LEADER_NOT_AVAILABLE (5) until it exists.
        deadline = time.monotonic() + 10
        while (code := _parts(c.call(produce_req("open-topic")).responses,
                               "partition_responses")) == [5] and time.monotonic() < deadline:
            time.sleep(0.05)
        assert code == [0]


def test_super_users_and_allow_everyone_with_real_clients(tmp_path):
    """super.users bypasses every ACL; allow.everyone.if.no.acl.found opens
    only resources no ACL applies to. confluent-kafka and the CLI."""
    from confluent_kafka import KafkaException, Producer

    settings = {"authorizer.class.name": AUTHORIZER, "super.users": ANON}
    with EmbeddedBroker(data_dir=str(tmp_path / "su"), settings=settings) as b:
        p = Producer({"bootstrap.servers": b.bootstrap_servers, "log_level": 0})
        p.produce("su-topic", b"v")
        assert p.flush(15) == 0
        cli = [sys.executable, "-m", "headrace.cli", "acl"]
        brokers = ["--brokers", b.bootstrap_servers]
        out = subprocess.run(cli + ["create", "--allow-principal", "User:bob", "--operation",
                                    "Read", "--operation", "Describe", "--topic", "orders",
                                    "--group", "billing"] + brokers,
                             capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, out.stderr
        assert out.stdout.count("created:") == 4
        out = subprocess.run(cli + ["list", "--format", "json"] + brokers,
                             capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, out.stderr
        rows = json.loads(out.stdout)["acls"]
        assert {(r["resource_type"], r["name"], r["operation"]) for r in rows} == {
            ("Topic", "orders", "READ"), ("Topic", "orders", "DESCRIBE"),
            ("Group", "billing", "READ"), ("Group", "billing", "DESCRIBE")}
        out = subprocess.run(cli + ["delete", "--allow-principal", "User:bob", "--topic",
                                    "orders"] + brokers,
                             capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, out.stderr
        assert "deleted 2 ACL(s)" in out.stdout

    settings = {"authorizer.class.name": AUTHORIZER, "allow.everyone.if.no.acl.found": "true"}
    with EmbeddedBroker(data_dir=str(tmp_path / "open"), settings=settings) as b:
        p = Producer({"bootstrap.servers": b.bootstrap_servers, "log_level": 0})
        p.produce("open-topic", b"v")
        assert p.flush(15) == 0
        with Conn(address(b)) as c:
            # An ACL for someone else closes the topic to User:ANONYMOUS.
            assert create_acls(c, [binding(TOPIC, "open-topic", WRITE,
                                           principal="User:bob")]) == [0]
        errors = []
        p = Producer({"bootstrap.servers": b.bootstrap_servers, "log_level": 0,
                      "message.send.max.retries": 0})
        # librdkafka answers from whichever comes first: the refused produce
        # (delivery report) or its metadata refresh, which already names the
        # topic unauthorized (produce() then raises at once). Both are the
        # broker's TOPIC_AUTHORIZATION_FAILED; nothing may be delivered.
        try:
            p.produce("open-topic", b"v", on_delivery=lambda err, m: errors.append(err))
        except KafkaException as e:
            errors.append(e.args[0])
        p.flush(15)
        assert [e.code() for e in errors] == [E_TOPIC]


def test_cluster_acls_created_on_one_broker_apply_on_the_other(tmp_path):
    """Two brokers: the bootstrap ACL is written to ZooKeeper in Kafka's
    layout; an ACL created through broker 1 reaches broker 2's authorizer
    (DescribeAcls there lists it, Metadata there enforces it)."""
    from zookeeper_fixture import wait_for

    settings = {"authorizer.class.name": AUTHORIZER, "zookeeper.session.timeout.ms": 3000}
    with EmbeddedCluster(2, data_dir=tmp_path, settings=settings) as cluster:
        zk = cluster.zk
        zk.create("/kafka-acl/Cluster/kafka-cluster", json.dumps({"version": 1, "acls": [
            {"principal": ANON, "permissionType": "Allow", "operation": "All",
             "host": ADMIN_HOST}]}).encode(), makepath=True)
        zk.create("/kafka-acl/Topic/*", json.dumps({"version": 1, "acls": [
            {"principal": ANON, "permissionType": "Allow", "operation": "All",
             "host": ADMIN_HOST}]}).encode(), makepath=True)
        b1, b2 = (tuple((cluster.node(n).address.rsplit(":", 1)[0],
                         int(cluster.node(n).address.rsplit(":", 1)[1])))
                  for n in (1, 2))
        with Conn(b1, source=ADMIN_HOST) as a1, Conn(b2, source=ADMIN_HOST) as a2, \
                Conn(b2) as client2:
            wait_for(lambda: describe_acls(a1)[0] == 0 and len(describe_acls(a1)[1]) == 2, 30,
                     what="the bootstrap ACLs reach broker 1")
            resp = a1.call(msg("admin", "CreateTopicsRequest", 5, topics=[
                {"name": "c-t", "num_partitions": 1, "replication_factor": 1,
                 "assignments": [], "configs": []}], timeout_ms=20000, validate_only=False))
            assert resp.topics[0].error_code == 0, resp

            def meta():
                r = client2.call(msg("metadata", "MetadataRequest", 9, topics=[{"name": "c-t"}],
                                     allow_auto_topic_creation=False,
                                     include_topic_authorized_operations=False))
                return r.topics[0].error_code
            wait_for(lambda: meta() in (E_TOPIC,), 30, what="c-t exists and is refused on broker 2")
            assert create_acls(a1, [binding(TOPIC, "c-t", DESCRIBE)]) == [0]
            wait_for(lambda: meta() == 0, 30, what="the ACL made on broker 1 applies on broker 2")
            assert (TOPIC, "c-t", LITERAL, ANON, "*", DESCRIBE, ALLOW) in describe_acls(a2)[1]
            data, _ = zk.get("/kafka-acl/Topic/c-t")
            assert json.loads(data)["acls"] == [{"principal": ANON, "permissionType": "Allow",
                                                  "operation": "Describe", "host": "*"}]
            assert zk.get_children("/kafka-acl-changes")
            assert delete_acls(a1, [binding(TOPIC, "c-t", DESCRIBE)]) == [0]
            wait_for(lambda: meta() == E_TOPIC, 30, what="the deletion reaches broker 2")
            assert zk.exists("/kafka-acl/Topic/c-t") is None
            # The answering broker has applied its own change when it answers
            # (Kafka's authorizer updates its cache first): DescribeAcls and
            # DeleteAcls there see it at once (librdkafka's 0081_admin
            # DescribeAcls / DeleteAcls sub-tests rely on it).
            for i in range(10):
                b = binding(TOPIC, f"now-{i}", DESCRIBE)
                row = (TOPIC, f"now-{i}", LITERAL, ANON, "*", DESCRIBE, ALLOW)
                assert create_acls(a1, [b]) == [0]
                assert row in describe_acls(a1)[1], i
                assert delete_acls(a1, [b]) == [0]
                assert row not in describe_acls(a1)[1], i


def test_confluent_consumer_group_follows_acls(secured):
    """A real group consumer (confluent-kafka): refused with
    GROUP_AUTHORIZATION_FAILED without READ on its group, reads the topic
    once READ on the group and the topic are granted."""
    from confluent_kafka import Consumer, KafkaException

    broker, _, admin, _ = secured
    conf = {"bootstrap.servers": broker.bootstrap_servers, "group.id": "acl-consumer",
            "auto.offset.reset": "earliest", "enable.auto.commit": False, "log_level": 0}
    grants = [binding(TOPIC, T, READ), binding(GROUP, "acl-consumer", READ)]
    assert create_acls(admin, grants[:1]) == [0]  # the topic only
    c = Consumer(conf)
    try:
        c.subscribe([T])
        error = None
        deadline = time.monotonic() + 20
        while error is None and time.monotonic() < deadline:
            m = c.poll(0.2)
            if m is not None and m.error():
                error = m.error()
        assert error is not None and error.code() == E_GROUP, error
    finally:
        c.close()
    assert create_acls(admin, grants[1:]) == [0]
    try:
        c = Consumer(conf)
        try:
            c.subscribe([T])
            got = []
            deadline = time.monotonic() + 30
            while len(got) < 3 and time.monotonic() < deadline:
                m = c.poll(0.2)
                if m is not None:
                    if m.error():
                        raise KafkaException(m.error())
                    got.append(m.offset())
            start = log_start(admin, T)  # the DeleteRecords row may have moved it
            assert got[:3] == [start, start + 1, start + 2]
        finally:
            c.close()
    finally:
        assert delete_acls(admin, grants) == [0, 0]


def test_brokers_in_super_users_replicate_with_the_authorizer_on(tmp_path):
    """Brokers talk to each other as User:ANONYMOUS until they authenticate:
    listed in super.users (docs/security.md), followers fetch (CLUSTER_ACTION)
    and an acks=all produce with min.insync.replicas=2 succeeds."""
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    settings = {"authorizer.class.name": AUTHORIZER, "super.users": ANON,
                "zookeeper.session.timeout.ms": 3000}
    with EmbeddedCluster(2, data_dir=tmp_path, settings=settings) as cluster:
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers, "log_level": 0})
        fs = admin.create_topics([NewTopic("replicated", 1, 2,
                                           config={"min.insync.replicas": "2"})])
        fs["replicated"].result(30)
        cluster.wait_for_leaders("replicated", 30)
        errors = []
        p = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all",
                      "log_level": 0, "message.timeout.ms": 30000})
        for i in range(5):
            p.produce("replicated", f"v{i}".encode(),
                      on_delivery=lambda err, m: errors.append(err))
        assert p.flush(40) == 0
        assert errors == [None] * 5
        assert sorted(cluster.partition_states("replicated")[0].isr) == [1, 2]


def test_share_fetch_needs_read_on_each_topic(secured):
    """ShareFetch with READ on the group but not on the topic: the partition
    is TOPIC_AUTHORIZATION_FAILED (the request itself succeeds); with READ
    on the topic too, the partition is served."""
    _, addr, admin, _ = secured
    md = admin.call(msg("metadata", "MetadataRequest", 12, topics=[{"name": T, "topic_id": None}],
                        allow_auto_topic_creation=False,
                        include_topic_authorized_operations=False))
    topic_id = md.topics[0].topic_id

    def share_fetch(member):
        with Conn(addr) as client:
            return client.call(msg("", "ShareFetchRequest", 1, group_id="acl-sg-topic",
                                   member_id=member, share_session_epoch=0, max_wait_ms=0,
                                   min_bytes=0, max_bytes=1 << 20, max_records=10,
                                   batch_size=10, forgotten_topics_data=[],
                                   topics=[{"topic_id": topic_id, "partitions": [
                                       {"partition_index": 0,
                                        "acknowledgement_batches": []}]}]))

    group_read = [binding(GROUP, "acl-sg-topic", READ)]
    assert create_acls(admin, group_read) == [0]
    try:
        r = share_fetch("m-denied")
        assert r.error_code == 0
        assert [p.error_code for t in r.responses for p in t.partitions] == [E_TOPIC]
        topic_read = [binding(TOPIC, T, READ)]
        assert create_acls(admin, topic_read) == [0]
        try:
            r = share_fetch("m-allowed")
            assert [p.error_code for t in r.responses for p in t.partitions] == [0]
        finally:
            assert delete_acls(admin, topic_read) == [0]
    finally:
        assert delete_acls(admin, group_read) == [0]
