"""Client quotas end to end (docs/security.md "Quotas"): real brokers, real
confluent-kafka clients and raw requests.

A producer / consumer over its byte rate is held to the quota as Kafka
measures it (quota.window.num 11 x quota.window.size.seconds 1: the rate of
a young client is taken over at least 10 s) and sees throttle_time_ms; the
5 s variants run by default, the 20 s ones (the issue's "within 10 % over
20 s") are marked slow. Request-time quotas, Kafka's precedence of user /
client-id / default entities, durability across a restart, the
AlterClientQuotas / DescribeClientQuotas errors and `headrace quota`.
"""
from __future__ import annotations

import json
import struct
import time

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from broker_process import http_address, shared_broker
from broker_wire import Connection, frame, request_header
from cli_run import headrace, ok, one_error_line
from headrace.admin import Admin, AdminError

MB = 1 << 20
QUOTA = 1 * MB  # bytes/s
KAFKA_MIN_WINDOW_S = 10  # (quota.window.num - 1) * quota.window.size.seconds


@pytest.fixture(scope="module")
def qbroker(tmp_path_factory):
    yield from shared_broker(tmp_path_factory, "quota-broker", "--http", "127.0.0.1:0")


def admin_of(b) -> Admin:
    return Admin(b.bootstrap, timeout=10)


def set_quota(b, entity, **values):
    admin_of(b).alter_quotas(entity, values)


def producer(b, client_id: str, throttles: list):
    # Small batches: the request that crosses the quota overshoots it by little.
    return Producer({"bootstrap.servers": b.bootstrap, "client.id": client_id,
                     "linger.ms": 2, "batch.size": 16 * 1024, "acks": 1,
                     "queue.buffering.max.kbytes": 2 * 1024,
                     "throttle_cb": lambda e: throttles.append(e.throttle_time)})


def produce_flat_out(p: Producer, topic: str, seconds: float) -> int:
    """Produces 8 KiB records as fast as the producer takes them for
    `seconds`; returns the bytes acknowledged within those seconds (what is
    still queued then is purged)."""
    acked = [0]
    value = b"x" * (8 * 1024)
    start = time.monotonic()
    end = start + seconds

    def on_delivery(err, msg):
        if err is None and time.monotonic() < end:
            acked[0] += len(msg.value())

    while time.monotonic() < end:
        try:
            p.produce(topic, value, on_delivery=on_delivery)
        except BufferError:
            p.poll(0.01)
        p.poll(0)
    p.purge(in_queue=True, in_flight=False)
    p.flush(1)  # in-flight requests may wait out a throttle: not waited for
    return acked[0]


def run_producer_case(b, topic, client_id, seconds) -> tuple[int, list]:
    admin_of(b).create_topic(topic, 1)
    set_quota(b, [("client-id", client_id)], producer_byte_rate=QUOTA)
    throttles: list = []
    p = producer(b, client_id, throttles)
    sent = produce_flat_out(p, topic, seconds)
    print(f"{client_id}: {sent} B acknowledged in {seconds} s ({sent / seconds / QUOTA:.3f} "
          f"x quota/s), largest throttle {max(throttles, default=0):.3f} s")
    return sent, throttles


def assert_held_in_first_window(n: int) -> None:
    """Within its first 11 s a client's rate is measured over a window of
    10 s (quota.window.num - 1 samples) growing to 11 s, so Kafka lets
    through between quota x 10 s and quota x 11 s; 10 % either side."""
    assert 0.9 * QUOTA * KAFKA_MIN_WINDOW_S <= n <= 1.1 * QUOTA * (KAFKA_MIN_WINDOW_S + 1), n


def test_producer_over_its_byte_rate_is_held_to_the_quota_and_told_the_throttle(qbroker):
    sent, throttles = run_producer_case(qbroker, "q-produce-5s", "quota-producer-5s", 5)
    assert_held_in_first_window(sent)
    assert throttles and max(throttles) > 0, "no throttle_time_ms reported"


@pytest.mark.slow
def test_producer_held_within_ten_percent_of_the_quota_over_20s(qbroker):
    sent, throttles = run_producer_case(qbroker, "q-produce-20s", "quota-producer-20s", 20)
    assert abs(sent / 20 - QUOTA) <= 0.1 * QUOTA, sent / 20
    assert throttles and max(throttles) > 0


def fill_topic(b, topic: str, total: int) -> None:
    admin_of(b).create_topic(topic, 1)
    p = Producer({"bootstrap.servers": b.bootstrap, "client.id": "filler", "linger.ms": 5})
    value = b"y" * (64 * 1024)
    for _ in range(total // len(value)):
        while True:
            try:
                p.produce(topic, value)
                break
            except BufferError:
                p.poll(0.05)
    assert p.flush(60) == 0


def consume_flat_out(b, topic: str, client_id: str, seconds: float, throttles: list) -> int:
    c = Consumer({"bootstrap.servers": b.bootstrap, "client.id": client_id,
                  "group.id": f"g-{client_id}", "enable.auto.commit": False,
                  "throttle_cb": lambda e: throttles.append(e.throttle_time)})
    c.assign([TopicPartition(topic, 0, 0)])
    got = 0
    start = time.monotonic()
    try:
        while time.monotonic() - start < seconds:
            for m in c.consume(1000, timeout=0.1):
                if m.error() is None:
                    got += len(m.value())
    finally:
        c.close()
    return got


def run_consumer_case(b, topic, client_id, seconds) -> tuple[int, list]:
    fill_topic(b, topic, int(QUOTA * (seconds + KAFKA_MIN_WINDOW_S + 5)))
    set_quota(b, [("client-id", client_id)], consumer_byte_rate=QUOTA)
    throttles: list = []
    got = consume_flat_out(b, topic, client_id, seconds, throttles)
    print(f"{client_id}: {got} B consumed in {seconds} s ({got / seconds / QUOTA:.3f} "
          f"x quota/s), largest throttle {max(throttles, default=0):.3f} s")
    return got, throttles


def test_consumer_over_its_byte_rate_is_held_to_the_quota_and_told_the_throttle(qbroker):
    got, throttles = run_consumer_case(qbroker, "q-consume-5s", "quota-consumer-5s", 5)
    assert_held_in_first_window(got)
    assert throttles and max(throttles) > 0


@pytest.mark.slow
def test_consumer_held_within_ten_percent_of_the_quota_over_20s(qbroker):
    got, throttles = run_consumer_case(qbroker, "q-consume-20s", "quota-consumer-20s", 20)
    assert abs(got / 20 - QUOTA) <= 0.1 * QUOTA, got / 20
    assert throttles and max(throttles) > 0


def metadata_v4(conn: Connection, client_id: str, cid: int) -> tuple[int, float]:
    """One Metadata v4 (all topics) round trip: (throttle_time_ms, seconds)."""
    start = time.monotonic()
    conn.send_raw(frame(request_header(3, 4, cid, client_id) + struct.pack(">i", -1) + b"\x00"))
    got_cid, r = conn.recv_response()
    assert got_cid == cid
    return r.i32(), time.monotonic() - start


def test_request_percentage_throttles_and_mutes_the_connection(qbroker):
    # 0.01 % of a thread: 1 ms of handler time in a 10 s window.
    set_quota(qbroker, [("client-id", "quota-requests")], request_percentage=0.01)
    with Connection(qbroker.address) as conn:
        throttle = 0
        for cid in range(1, 2000):
            throttle, _ = metadata_v4(conn, "quota-requests", cid)
            if throttle:
                break
        assert 0 < throttle <= 1000, throttle  # capped at one window, as Kafka
        # The connection is muted for the throttle: the next answer waits.
        _, took = metadata_v4(conn, "quota-requests", 5000)
        assert took >= throttle / 1000 * 0.8, (took, throttle)
    with Connection(qbroker.address) as other:  # another client id: no quota
        assert metadata_v4(other, "quota-free", 1)[0] == 0


def throttle_of_one_burst(b, client_id: str, size: int = 120 * 1024,
                          topic: str = "q-precedence") -> int:
    """Produces `size` bytes at once as `client_id`; the largest throttle seen."""
    throttles: list = []
    p = producer(b, client_id, throttles)
    p.produce(topic, b"z" * size)
    assert p.flush(30) == 0
    p.poll(0.2)
    return max(throttles, default=0)


def test_precedence_of_user_client_and_default_quotas(broker):
    Admin(broker.bootstrap).create_topic("q-precedence", 1)
    # 10 KB/s for every client id: 120 KB over the 10 s window is throttled.
    set_quota(broker, [("client-id", None)], producer_byte_rate=10_000)
    assert throttle_of_one_burst(broker, "any-client") > 0
    # A client id's own quota wins over the client-id default.
    set_quota(broker, [("client-id", "vip")], producer_byte_rate=100 * MB)
    assert throttle_of_one_burst(broker, "vip") == 0
    # A user quota (PLAINTEXT clients are ANONYMOUS) wins over client ids.
    set_quota(broker, [("user", "ANONYMOUS")], producer_byte_rate=100 * MB)
    assert throttle_of_one_burst(broker, "other-client") == 0
    # ... and (user, client-id) over the user alone.
    set_quota(broker, [("user", "ANONYMOUS"), ("client-id", "capped")],
              producer_byte_rate=10_000)
    assert throttle_of_one_burst(broker, "capped") > 0
    # Removing the user quota brings the client-id default back.
    admin_of(broker).alter_quotas([("user", "ANONYMOUS")], {"producer_byte_rate": None})
    assert throttle_of_one_burst(broker, "third-client") > 0


def test_quotas_survive_a_restart(broker):
    set_quota(broker, [("user", "alice"), ("client-id", None)], producer_byte_rate=2048,
              request_percentage=12.5)
    set_quota(broker, [("client-id", "app*1")], consumer_byte_rate=4096)
    broker.restart()
    found = admin_of(broker).describe_quotas()
    assert sorted(found, key=str) == sorted([
        ([("user", "alice"), ("client-id", None)],
         {"producer_byte_rate": 2048.0, "request_percentage": 12.5}),
        ([("client-id", "app*1")], {"consumer_byte_rate": 4096.0}),
    ], key=str)
    doc = json.loads((broker.data_dir / "client-quotas.json").read_text())
    assert doc["quotas"]["clients/app%2A1"] == {"consumer_byte_rate": "4096"}


@pytest.mark.parametrize("entity,values,error", [
    ([], {"producer_byte_rate": 1}, "empty"),
    ([("group", "g")], {"producer_byte_rate": 1}, "Unhandled client quota entity type"),
    ([("user", "a"), ("user", "b")], {"producer_byte_rate": 1}, "Duplicate"),
    ([("user", "a")], {"bogus_rate": 1}, "Invalid configuration key bogus_rate"),
    ([("user", "a")], {"producer_byte_rate": 1.5}, "must be a Long value"),
    ([("user", "a")], {"consumer_byte_rate": -5}, "greater than 0"),
    ([("ip", "1.2.3.4"), ("user", "a")], {"producer_byte_rate": 1}, "combination"),
])
def test_alter_client_quotas_errors_are_kafkas(qbroker, entity, values, error):
    with pytest.raises(AdminError, match="INVALID_REQUEST") as e:
        admin_of(qbroker).alter_quotas(entity, values)
    assert error in str(e.value)


def test_describe_client_quotas_filter_errors_are_kafkas(qbroker):
    with pytest.raises(AdminError, match="Duplicate filter component"):
        admin_of(qbroker).describe_quotas([("user", 0, "a"), ("user", 0, "b")])
    with pytest.raises(AdminError, match="INVALID_REQUEST"):
        admin_of(qbroker).describe_quotas([("topic", 0, "a")])


def test_validate_only_changes_nothing(qbroker):
    admin_of(qbroker).alter_quotas([("user", "dry")], {"producer_byte_rate": 5}, True)
    assert admin_of(qbroker).describe_quotas([("user", 0, "dry")]) == []


def test_cli_quota_set_and_describe(qbroker):
    b = qbroker.bootstrap
    ok(headrace("quota", "set", "--user", "carol", "--default", "client-id",
                "--producer-byte-rate", "1048576", "--request-percentage", "50", brokers=b))
    ok(headrace("quota", "set", "--client-id", "cli-app", "--consumer-byte-rate", "2048",
                brokers=b))
    table = ok(headrace("quota", "describe", "--user", "carol", brokers=b)).stdout.splitlines()
    assert table == ["USER\tCLIENT_ID\tKEY\tVALUE",
                     "carol\t<default>\tproducer_byte_rate\t1048576",
                     "carol\t<default>\trequest_percentage\t50"]
    doc = json.loads(ok(headrace("quota", "describe", "--client-id", "cli-app", "--strict",
                                 "--format", "json", brokers=b)).stdout)
    assert doc == {"quotas": [{"entity": {"client-id": "cli-app"},
                               "values": {"consumer_byte_rate": 2048.0}}]}
    ok(headrace("quota", "set", "--client-id", "cli-app", "--delete", "consumer_byte_rate",
                brokers=b))
    doc = json.loads(ok(headrace("quota", "describe", "--client-id", "cli-app",
                                 "--format", "json", brokers=b)).stdout)
    assert doc == {"quotas": []}
    one_error_line(headrace("quota", "set", "--user", "x", "--producer-byte-rate", "1.5",
                            brokers=b), "must be a Long value")
    one_error_line(headrace("quota", "set", "--producer-byte-rate", "5", brokers=b),
                   "name an entity")


def quota_samples(b) -> dict[str, float]:
    import urllib.request

    host, port = http_address(b)
    with urllib.request.urlopen(f"http://{host}:{port}/metrics", timeout=5) as r:
        text = r.read().decode()
    return {ln.split()[0]: float(ln.split()[1]) for ln in text.splitlines()
            if ln.startswith("headrace_quota_")}


def test_throttles_are_counted_in_the_metrics(qbroker):
    produced = 'headrace_quota_throttled_responses_total{quota="produce"}'
    time_ms = 'headrace_quota_throttle_time_ms_total{quota="produce"}'
    before = quota_samples(qbroker)
    admin_of(qbroker).create_topic("q-metrics", 1)
    set_quota(qbroker, [("client-id", "quota-metrics")], producer_byte_rate=10_000)
    throttle = throttle_of_one_burst(qbroker, "quota-metrics", topic="q-metrics")
    assert throttle > 0
    after = quota_samples(qbroker)
    assert after[produced] >= before[produced] + 1
    assert after[time_ms] >= before[time_ms] + throttle * 1000 * 0.99  # throttle_cb: seconds


def test_cluster_quotas_live_in_zookeeper_and_reach_every_broker(tmp_path):
    """Two brokers and ZooKeeper: AlterClientQuotas on broker 1 writes Kafka's
    /config/users/... znode (keeping other keys there, such as SCRAM
    credentials) and a change notification; broker 2 describes it after the
    next cluster state."""
    from headrace import EmbeddedCluster
    from headrace.admin_wire import Connection as WireConnection
    from headrace.admin_wire import alter_client_quotas, describe_client_quotas
    from zookeeper_fixture import wait_for

    with EmbeddedCluster(2, data_dir=tmp_path / "quota-cluster",
                         settings={"zookeeper.session.timeout.ms": 3000}) as c:
        c.zk.create("/config/users/bob", json.dumps(
            {"version": 1, "config": {"SCRAM-SHA-256": "salt=...,iterations=4096"}}).encode(),
            makepath=True)
        host1, port1 = c.node(1).address.rsplit(":", 1)
        conn = WireConnection(host1, int(port1), 10)
        entity = [("user", "bob"), ("client-id", None)]
        assert alter_client_quotas(conn, [(entity, [("producer_byte_rate", 4096)])]) == [(0, None)]
        assert alter_client_quotas(conn, [([("user", "bob")], [("consumer_byte_rate", 8192)])]) \
            == [(0, None)]
        conn.close()
        data, _ = c.zk.get("/config/users/bob/clients/<default>")
        assert json.loads(data) == {"version": 1, "config": {"producer_byte_rate": "4096"}}
        data, _ = c.zk.get("/config/users/bob")
        assert json.loads(data)["config"] == {"SCRAM-SHA-256": "salt=...,iterations=4096",
                                              "consumer_byte_rate": "8192"}
        changes = [json.loads(c.zk.get(f"/config/changes/{n}")[0])
                   for n in sorted(c.zk.get_children("/config/changes"))]
        assert {"version": 2, "entity_path": "users/bob/clients/<default>"} in changes
        host2, port2 = c.node(2).address.rsplit(":", 1)

        def seen_by_broker_2():
            conn2 = WireConnection(host2, int(port2), 10)
            try:
                return sorted(describe_client_quotas(conn2, [("user", 0, "bob")]), key=str)
            finally:
                conn2.close()

        wait_for(lambda: len(seen_by_broker_2()) == 2, timeout=30)
        assert seen_by_broker_2() == sorted([
            ([("user", "bob")], {"consumer_byte_rate": 8192.0}),
            ([("user", "bob"), ("client-id", None)], {"producer_byte_rate": 4096.0})], key=str)
