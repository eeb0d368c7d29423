"""Admin APIs through confluent-kafka's AdminClient and kafka-python's
KafkaAdminClient against a real broker: create/delete topics, create
partitions, describe/alter configs, describe cluster, delete records, with
the exact Kafka error codes on the error paths; auto-creation and the
settings that control it.
"""
from __future__ import annotations

import time

import pytest

pytestmark = [pytest.mark.timeout(180),
              # kafka-python 3.0 loads its schemas with deprecated importlib calls.
              pytest.mark.filterwarnings("ignore:read_text is deprecated:DeprecationWarning"),
              pytest.mark.filterwarnings("ignore:open_text is deprecated:DeprecationWarning")]

# Kafka error codes (protocol guide).
OFFSET_OUT_OF_RANGE = 1
UNKNOWN_TOPIC_OR_PARTITION = 3
TOPIC_ALREADY_EXISTS = 36
INVALID_PARTITIONS = 37
INVALID_REPLICATION_FACTOR = 38
INVALID_CONFIG = 40


# -- helpers ---------------------------------------------------------------------
def ck_admin(bootstrap):
    from confluent_kafka.admin import AdminClient
    return AdminClient({"bootstrap.servers": bootstrap})


def kp_admin(bootstrap):
    from kafka.admin import KafkaAdminClient
    return KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=30000)


@pytest.fixture
def kp(module_broker):
    a = kp_admin(module_broker.bootstrap)
    yield a
    a.close()


@pytest.fixture
def ck(module_broker):
    return ck_admin(module_broker.bootstrap)


def ck_error(fut):
    """The KafkaError a confluent admin future fails with (None on success)."""
    from confluent_kafka import KafkaException
    try:
        fut.result(60)
    except KafkaException as e:
        return e.args[0]
    return None


def ck_create(admin, topic, partitions=3, rf=1, **config):
    from confluent_kafka.admin import NewTopic
    return admin.create_topics([NewTopic(topic, partitions, rf, config=config)],
                               request_timeout=30)[topic]


def partitions_of(bootstrap, topic):
    """Partition ids from a Metadata request that does not auto-create, or None."""
    md = ck_admin(bootstrap).list_topics(timeout=30)
    t = md.topics.get(topic)
    return None if t is None else sorted(t.partitions)


def ck_topic_configs(admin, topic):
    from confluent_kafka.admin import ConfigResource, ResourceType
    res = ConfigResource(ResourceType.TOPIC, topic)
    return admin.describe_configs([res], request_timeout=30)[res].result(60)


def ck_set_config(admin, topic, **configs):
    from confluent_kafka.admin import (AlterConfigOpType, ConfigEntry, ConfigResource,
                                       ResourceType)
    entries = [ConfigEntry(k.replace("_", "."), str(v),
                           incremental_operation=AlterConfigOpType.SET)
               for k, v in configs.items()]
    res = ConfigResource(ResourceType.TOPIC, topic, incremental_configs=entries)
    return admin.incremental_alter_configs([res], request_timeout=30)[res]


def produce_n(bootstrap, topic, n, partition=0):
    from confluent_kafka import Producer
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5})
    offsets = []
    for i in range(n):
        p.produce(topic, value=b"v%d" % i, partition=partition,
                  on_delivery=lambda err, m: offsets.append(err or m.offset()))
    assert p.flush(60) == 0
    return offsets


def watermarks(bootstrap, topic, partition=0):
    from confluent_kafka import Consumer, TopicPartition
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "admin-wm"})
    try:
        return c.get_watermark_offsets(TopicPartition(topic, partition), timeout=30)
    finally:
        c.close()


# -- create / delete topics --------------------------------------------------------
def test_create_describe_and_delete_topic_with_confluent(module_broker, ck):
    b = module_broker
    assert ck_error(ck_create(ck, "adm-ck-basic", 3, **{"retention.ms": "123456"})) is None
    assert partitions_of(b.bootstrap, "adm-ck-basic") == [0, 1, 2]
    cfg = ck_topic_configs(ck, "adm-ck-basic")
    assert cfg["retention.ms"].value == "123456"
    assert ck_error(ck.delete_topics(["adm-ck-basic"], request_timeout=30)["adm-ck-basic"]) is None
    deadline = time.monotonic() + 30
    while partitions_of(b.bootstrap, "adm-ck-basic") is not None:
        assert time.monotonic() < deadline, "deleted topic still listed"
        time.sleep(0.2)


def test_create_and_delete_topic_with_kafka_python(module_broker, kp):
    b = module_broker
    resp = kp.create_topics({"adm-kp-basic": {"num_partitions": 2, "replication_factor": 1,
                                              "configs": {"retention.ms": "99999"}}})
    assert [(t["name"], t["error_code"]) for t in resp["topics"]] == [("adm-kp-basic", 0)]
    assert partitions_of(b.bootstrap, "adm-kp-basic") == [0, 1]
    names = kp.list_topics()
    assert "adm-kp-basic" in names
    resp = kp.delete_topics(["adm-kp-basic"])
    assert [(t["name"], t["error_code"]) for t in resp["topics"]] == [("adm-kp-basic", 0)]
    assert "adm-kp-basic" not in kp.list_topics()


def test_deleted_topic_can_be_recreated_empty(module_broker, ck):
    b = module_broker
    assert ck_error(ck_create(ck, "adm-recreate", 1)) is None
    assert produce_n(b.bootstrap, "adm-recreate", 5) == [0, 1, 2, 3, 4]
    assert ck_error(ck.delete_topics(["adm-recreate"], request_timeout=30)["adm-recreate"]) is None
    deadline = time.monotonic() + 30
    while True:
        err = ck_error(ck_create(ck, "adm-recreate", 2))
        if err is None:
            break
        assert err.code() == TOPIC_ALREADY_EXISTS and time.monotonic() < deadline, err
        time.sleep(0.5)
    assert partitions_of(b.bootstrap, "adm-recreate") == [0, 1]
    assert watermarks(b.bootstrap, "adm-recreate") == (0, 0)


def test_create_existing_topic_is_topic_already_exists(module_broker, ck, kp):
    import kafka.errors as kerr
    assert ck_error(ck_create(ck, "adm-dup", 1)) is None
    err = ck_error(ck_create(ck, "adm-dup", 1))
    assert err is not None and err.code() == TOPIC_ALREADY_EXISTS
    assert err.name() == "TOPIC_ALREADY_EXISTS"
    with pytest.raises(kerr.TopicAlreadyExistsError):
        kp.create_topics({"adm-dup": {"num_partitions": 1, "replication_factor": 1}})
    resp = kp.create_topics({"adm-dup": {"num_partitions": 1, "replication_factor": 1}},
                            raise_errors=False)
    assert [(t["name"], t["error_code"]) for t in resp["topics"]] == [("adm-dup", 36)]


@pytest.mark.parametrize("partitions", [0, -5])
def test_create_with_bad_partition_count_is_invalid_partitions(module_broker, kp, partitions):
    resp = kp.create_topics({"adm-badparts": {"num_partitions": partitions,
                                              "replication_factor": 1}}, raise_errors=False)
    assert [(t["name"], t["error_code"]) for t in resp["topics"]] == \
        [("adm-badparts", INVALID_PARTITIONS)]
    assert partitions_of(module_broker.bootstrap, "adm-badparts") is None


def test_create_with_replication_factor_3_is_invalid_replication_factor(module_broker, ck, kp):
    import kafka.errors as kerr
    err = ck_error(ck_create(ck, "adm-rf3", 1, rf=3))
    assert err is not None and err.code() == INVALID_REPLICATION_FACTOR
    assert err.name() == "INVALID_REPLICATION_FACTOR"
    with pytest.raises(kerr.InvalidReplicationFactorError):
        kp.create_topics({"adm-rf3": {"num_partitions": 1, "replication_factor": 3}})
    assert partitions_of(module_broker.bootstrap, "adm-rf3") is None


def test_create_with_invalid_config_value_is_invalid_config(module_broker, ck, kp):
    import kafka.errors as kerr
    err = ck_error(ck_create(ck, "adm-badcfg", 1, **{"retention.ms": "abc"}))
    assert err is not None and err.code() == INVALID_CONFIG, err
    with pytest.raises(kerr.InvalidConfigurationError):
        kp.create_topics({"adm-badcfg": {"num_partitions": 1, "replication_factor": 1,
                                         "configs": {"retention.ms": "abc"}}})
    assert partitions_of(module_broker.bootstrap, "adm-badcfg") is None


def test_delete_unknown_topic_is_unknown_topic_or_partition(module_broker, ck, kp):
    import kafka.errors as kerr
    err = ck_error(ck.delete_topics(["adm-nope"], request_timeout=30)["adm-nope"])
    assert err is not None and err.code() == UNKNOWN_TOPIC_OR_PARTITION
    assert err.name() == "UNKNOWN_TOPIC_OR_PART"
    with pytest.raises(kerr.UnknownTopicOrPartitionError):
        kp.delete_topics(["adm-nope"])


# -- create partitions ---------------------------------------------------------------
def test_create_partitions_grows_topic_and_keeps_data(module_broker, ck):
    from confluent_kafka.admin import NewPartitions
    b = module_broker
    assert ck_error(ck_create(ck, "adm-grow", 2)) is None
    assert produce_n(b.bootstrap, "adm-grow", 4, partition=1) == [0, 1, 2, 3]
    fut = ck.create_partitions([NewPartitions("adm-grow", 5)], request_timeout=30)["adm-grow"]
    assert ck_error(fut) is None
    assert partitions_of(b.bootstrap, "adm-grow") == [0, 1, 2, 3, 4]
    assert watermarks(b.bootstrap, "adm-grow", 1) == (0, 4)
    assert produce_n(b.bootstrap, "adm-grow", 2, partition=4) == [0, 1]


def test_create_partitions_error_paths(module_broker, ck, kp):
    import kafka.errors as kerr
    from confluent_kafka.admin import NewPartitions
    assert ck_error(ck_create(ck, "adm-shrink", 3)) is None
    for count in (2, 3):  # fewer or the same: INVALID_PARTITIONS
        err = ck_error(ck.create_partitions([NewPartitions("adm-shrink", count)],
                                            request_timeout=30)["adm-shrink"])
        assert err is not None and err.code() == INVALID_PARTITIONS, (count, err)
    with pytest.raises(kerr.InvalidPartitionsError):
        kp.create_partitions({"adm-shrink": 1})
    err = ck_error(ck.create_partitions([NewPartitions("adm-missing", 4)],
                                        request_timeout=30)["adm-missing"])
    assert err is not None and err.code() == UNKNOWN_TOPIC_OR_PARTITION
    assert partitions_of(module_broker.bootstrap, "adm-shrink") == [0, 1, 2]


def test_create_partitions_with_kafka_python(module_broker, kp):
    kp.create_topics({"adm-kp-grow": {"num_partitions": 1, "replication_factor": 1}})
    resp = kp.create_partitions({"adm-kp-grow": 3})
    assert [(r.name, r.error_code) for r in resp.results] == [("adm-kp-grow", 0)]
    assert partitions_of(module_broker.bootstrap, "adm-kp-grow") == [0, 1, 2]


# -- configs ---------------------------------------------------------------------------
def test_describe_configs_defaults_and_alter(module_broker, ck):
    from confluent_kafka.admin import ConfigSource
    assert ck_error(ck_create(ck, "adm-cfg", 1)) is None
    cfg = ck_topic_configs(ck, "adm-cfg")
    assert cfg["retention.ms"].value == str(7 * 24 * 3600 * 1000)
    assert cfg["retention.ms"].source != ConfigSource.DYNAMIC_TOPIC_CONFIG.value
    assert "cleanup.policy" in cfg and cfg["cleanup.policy"].value == "delete"
    assert ck_error(ck_set_config(ck, "adm-cfg", retention_ms=60000)) is None
    cfg = ck_topic_configs(ck, "adm-cfg")
    assert cfg["retention.ms"].value == "60000"
    assert cfg["retention.ms"].source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value


def test_alter_config_invalid_value_and_unknown_name_are_invalid_config(module_broker, ck):
    assert ck_error(ck_create(ck, "adm-cfg-bad", 1, **{"retention.ms": "5000"})) is None
    err = ck_error(ck_set_config(ck, "adm-cfg-bad", retention_ms="abc"))
    assert err is not None and err.code() == INVALID_CONFIG, err
    err = ck_error(ck_set_config(ck, "adm-cfg-bad", **{"no.such.config": "1"}))
    assert err is not None and err.code() == INVALID_CONFIG, err
    assert ck_topic_configs(ck, "adm-cfg-bad")["retention.ms"].value == "5000"


def test_describe_configs_of_unknown_topic_is_unknown_topic_or_partition(module_broker, ck):
    from confluent_kafka import KafkaException
    with pytest.raises(KafkaException) as e:
        ck_topic_configs(ck, "adm-cfg-missing")
    assert e.value.args[0].code() == UNKNOWN_TOPIC_OR_PARTITION


def test_describe_and_alter_configs_with_kafka_python(module_broker, kp):
    from kafka.admin import ConfigResource, ConfigResourceType
    kp.create_topics({"adm-kp-cfg": {"num_partitions": 1, "replication_factor": 1}})
    kp.alter_configs([ConfigResource(ConfigResourceType.TOPIC, "adm-kp-cfg",
                                     configs={"retention.ms": "77777"})], raise_on_unknown=False)
    got = kp.describe_configs([ConfigResource(ConfigResourceType.TOPIC, "adm-kp-cfg")],
                              config_filter="all")
    entry = got["topic"]["adm-kp-cfg"]["retention.ms"]
    assert entry["value"] == "77777", entry


# -- cluster / records -------------------------------------------------------------------
def test_describe_cluster(module_broker, ck, kp):
    b = module_broker
    d = ck.describe_cluster(request_timeout=30).result(60)
    assert [(n.id, n.host, n.port) for n in d.nodes] == [(0, b.host, b.port)]
    assert d.controller is not None and d.controller.id == 0
    assert d.cluster_id
    k = kp.describe_cluster()
    assert [(x["broker_id"], x["host"], x["port"]) for x in k["brokers"]] == [(0, b.host, b.port)]
    assert k["cluster_id"] == d.cluster_id
    assert k["controller_id"] == 0


def test_delete_records_moves_log_start_offset(module_broker, ck):
    from confluent_kafka import Consumer, TopicPartition
    b = module_broker
    assert ck_error(ck_create(ck, "adm-delrec", 1)) is None
    assert produce_n(b.bootstrap, "adm-delrec", 10) == list(range(10))
    futs = ck.delete_records([TopicPartition("adm-delrec", 0, 4)], request_timeout=30)
    (res,) = [f.result(60) for f in futs.values()]
    assert res.low_watermark == 4
    assert watermarks(b.bootstrap, "adm-delrec") == (4, 10)
    c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": "adm-delrec",
                  "auto.offset.reset": "earliest", "enable.auto.commit": False})
    try:
        from confluent_kafka import OFFSET_BEGINNING
        c.assign([TopicPartition("adm-delrec", 0, OFFSET_BEGINNING)])
        got = []
        deadline = time.monotonic() + 60
        while len(got) < 6 and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is not None:
                assert m.error() is None, m.error()
                got.append((m.offset(), m.value()))
        assert got == [(i, b"v%d" % i) for i in range(4, 10)]
    finally:
        c.close()


def test_delete_records_beyond_high_watermark_is_offset_out_of_range(module_broker, ck):
    from confluent_kafka import TopicPartition
    assert ck_error(ck_create(ck, "adm-delrec-oor", 1)) is None
    assert produce_n(module_broker.bootstrap, "adm-delrec-oor", 3) == [0, 1, 2]
    futs = ck.delete_records([TopicPartition("adm-delrec-oor", 0, 50)], request_timeout=30)
    (err,) = [ck_error(f) for f in futs.values()]
    assert err is not None and err.code() == OFFSET_OUT_OF_RANGE, err
    assert watermarks(module_broker.bootstrap, "adm-delrec-oor") == (0, 3)


def test_delete_records_with_kafka_python(module_broker, kp):
    from kafka import TopicPartition
    kp.create_topics({"adm-kp-delrec": {"num_partitions": 1, "replication_factor": 1}})
    assert produce_n(module_broker.bootstrap, "adm-kp-delrec", 5) == [0, 1, 2, 3, 4]
    res = kp.delete_records({TopicPartition("adm-kp-delrec", 0): 2})
    (r,) = res.values()
    assert r["low_watermark"] == 2, res
    assert watermarks(module_broker.bootstrap, "adm-kp-delrec") == (2, 5)


def test_acks_1_writes_are_at_once_visible_to_delete_records_and_list_offsets(module_broker, ck):
    """Issue 37, item 3, single node: an acks=1 record is acknowledged before
    its fsync moves the HW; DeleteRecords up to it and ListOffsets LATEST
    right after the acknowledgement wait for the HW instead of answering
    OFFSET_OUT_OF_RANGE / an end short of it."""
    from ack_visibility import check_acked_writes_visible
    assert ck_error(ck_create(ck, "adm-ack-visible", 1)) is None
    assert check_acked_writes_visible(module_broker.bootstrap, "adm-ack-visible") == {}


# -- persistence and auto-creation ---------------------------------------------------------
def test_config_change_and_new_partitions_survive_restart(broker):
    from confluent_kafka.admin import NewPartitions
    b = broker
    admin = ck_admin(b.bootstrap)
    assert ck_error(ck_create(admin, "adm-persist", 1)) is None
    assert ck_error(ck_set_config(admin, "adm-persist", retention_ms=4242000,
                                  segment_bytes=2097152)) is None
    assert ck_error(admin.create_partitions([NewPartitions("adm-persist", 3)],
                                            request_timeout=30)["adm-persist"]) is None
    b.restart()
    cfg = ck_topic_configs(ck_admin(b.bootstrap), "adm-persist")
    assert cfg["retention.ms"].value == "4242000"
    assert cfg["segment.bytes"].value == "2097152"
    assert partitions_of(b.bootstrap, "adm-persist") == [0, 1, 2]


def test_auto_create_on_metadata_and_produce_default_one_partition(module_broker):
    from confluent_kafka import Producer
    b = module_broker
    p = Producer({"bootstrap.servers": b.bootstrap, "allow.auto.create.topics": True})
    md = p.list_topics("adm-auto-md", timeout=30)  # Metadata with allow_auto_topic_creation
    assert md.topics["adm-auto-md"].error is None or \
        md.topics["adm-auto-md"].error.code() in (5,)  # LEADER_NOT_AVAILABLE while creating
    deadline = time.monotonic() + 30
    while partitions_of(b.bootstrap, "adm-auto-md") != [0]:
        assert time.monotonic() < deadline, partitions_of(b.bootstrap, "adm-auto-md")
        time.sleep(0.2)
    # A producer writing to an unknown topic: created with 1 partition, message at offset 0.
    assert produce_n(b.bootstrap, "adm-auto-produce", 1) == [0]
    assert partitions_of(b.bootstrap, "adm-auto-produce") == [0]


def test_auto_create_disabled_by_setting(broker_factory):
    from confluent_kafka import Producer
    b = broker_factory(None, "--set", "auto.create.topics.enable=false")
    p = Producer({"bootstrap.servers": b.bootstrap, "allow.auto.create.topics": True})
    md = p.list_topics("adm-no-auto", timeout=30)
    t = md.topics["adm-no-auto"]
    assert t.error is not None and t.error.code() == UNKNOWN_TOPIC_OR_PARTITION
    time.sleep(0.5)
    assert partitions_of(b.bootstrap, "adm-no-auto") is None
    # Explicit creation still works.
    assert ck_error(ck_create(ck_admin(b.bootstrap), "adm-no-auto", 2)) is None
    assert partitions_of(b.bootstrap, "adm-no-auto") == [0, 1]


def test_num_partitions_setting_applies_to_auto_and_default_creation(broker_factory):
    b = broker_factory(None, "--set", "num.partitions=4")
    assert produce_n(b.bootstrap, "adm-four", 1) == [0]
    assert partitions_of(b.bootstrap, "adm-four") == [0, 1, 2, 3]
    a = kp_admin(b.bootstrap)
    try:  # CreateTopics with num_partitions=-1 (broker default)
        resp = a.create_topics(["adm-four-default"])
        assert [(t["name"], t["error_code"]) for t in resp["topics"]] == [("adm-four-default", 0)]
    finally:
        a.close()
    assert partitions_of(b.bootstrap, "adm-four-default") == [0, 1, 2, 3]
