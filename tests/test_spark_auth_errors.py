"""A Spark read or write with a wrong SASL password fails promptly with
librdkafka's reason: one line naming the authentication failure ("SASL
authentication error: Authentication failed: Invalid username or
password"), not a time-out ("Broker transport failure", "Timed out") after
the source's 120 s or the sink's 180 s. librdkafka reports a refused login
only to the client's error_cb while the blocking call just waits
(headrace_spark/client_errors.py). Real Spark (local[2], the shared
session) against a real broker with a SASL_PLAINTEXT listener; the right
password works on the same broker."""
from __future__ import annotations

import time

import pytest
from confluent_kafka import Consumer, KafkaError, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from broker_process import BrokerProcess, _finish
from spark_session import quiet_config, spark  # noqa: F401
from test_security_sasl import free_port

pytestmark = pytest.mark.timeout(300)

USER, PASSWORD = "alice", "alice-secret"
JAAS_SERVER = ('org.apache.kafka.common.security.plain.PlainLoginModule required '
               f'user_{USER}="{PASSWORD}";')
TOPIC = "auth-in"
ROWS = 200
PROMPT_S = 30.0   # before: 120 s (source) and 180 s (sink) of time-outs


@pytest.fixture(scope="module")
def sasl_broker(tmp_path_factory):
    b = BrokerProcess(tmp_path_factory.mktemp("spark-sasl"),
                      "--set", "sasl.enabled.mechanisms=PLAIN",
                      "--set", f"listener.name.sasl_plaintext.plain.sasl.jaas.config={JAAS_SERVER}",
                      listen=f"SASL_PLAINTEXT://127.0.0.1:{free_port()}")
    b.start()
    try:
        conf = client_conf(b, PASSWORD)
        admin = AdminClient(quiet_config(b.bootstrap, **conf))
        for t, parts in ((TOPIC, 2), ("auth-out", 2)):
            admin.create_topics([NewTopic(t, parts, 1)], request_timeout=30)[t].result(30)
        from confluent_kafka import Producer
        p = Producer(quiet_config(b.bootstrap, acks="all", **conf))
        for i in range(ROWS):
            p.produce(TOPIC, value=str(i).encode(), partition=i % 2)
        assert p.flush(30) == 0
        yield b
    finally:
        _finish([b])


def client_conf(b, password: str) -> dict:
    return {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
            "sasl.username": USER, "sasl.password": password}


def spark_options(b, password: str) -> dict:
    """What a Spark user writes: the Java client's names (translated)."""
    return {"kafka.bootstrap.servers": b.bootstrap,
            "kafka.security.protocol": "SASL_PLAINTEXT", "kafka.sasl.mechanism": "PLAIN",
            "kafka.sasl.jaas.config": 'org.apache.kafka.common.security.plain.PlainLoginModule '
                                      f'required username="{USER}" password="{password}";'}


def _with(builder, options: dict):
    for k, v in options.items():
        builder = builder.option(k, v)
    return builder


def _auth_line(text: str) -> str:
    """The one line of the error that names the failure."""
    lines = [ln for ln in text.splitlines() if "authentication failed" in ln]
    assert lines, text[-3000:]
    line = lines[-1]
    assert "SASL authentication error" in line and "Invalid username or password" in line, line
    return line


def _committed_values(b, topic: str, partitions: int) -> list[int]:
    c = Consumer(quiet_config(b.bootstrap, **client_conf(b, PASSWORD), **{
        "group.id": "auth-check", "isolation.level": "read_committed",
        "enable.partition.eof": True, "enable.auto.commit": False}))
    out = []
    try:
        for p in range(partitions):
            c.assign([TopicPartition(topic, p, 0)])
            while True:
                msg = c.poll(30)
                assert msg is not None
                if msg.error() is not None:
                    assert msg.error().code() == KafkaError._PARTITION_EOF, msg.error()
                    break
                out.append(int(msg.value()))
    finally:
        c.close()
    return out


def test_read_with_wrong_password_fails_promptly_naming_authentication(spark, sasl_broker):
    t0 = time.monotonic()
    with pytest.raises(Exception) as e:
        _with(spark.read.format("headrace"), spark_options(sasl_broker, "wrong")) \
            .option("subscribe", TOPIC).load().collect()
    took = time.monotonic() - t0
    line = _auth_line(str(e.value))
    print(f"failed after {took:.1f} s: {line.strip()}")
    assert took < PROMPT_S, took
    # The right password on the same broker reads every record.
    got = _with(spark.read.format("headrace"), spark_options(sasl_broker, PASSWORD)) \
        .option("subscribe", TOPIC).load().collect()
    assert sorted(int(r.value) for r in got) == list(range(ROWS))


def test_stream_read_with_wrong_password_fails_promptly(spark, sasl_broker, tmp_path):
    q = (_with(spark.readStream.format("headrace"), spark_options(sasl_broker, "wrong"))
         .option("subscribe", TOPIC).option("startingOffsets", "earliest").load()
         .writeStream.format("noop").option("checkpointLocation", str(tmp_path / "ck"))
         .start())
    t0 = time.monotonic()
    try:
        q.awaitTermination(PROMPT_S + 30)   # raises the query's failure
    except Exception as e:   # noqa: BLE001 - StreamingQueryException
        took = time.monotonic() - t0
        line = _auth_line(str(e))
        print(f"failed after {took:.1f} s: {line.strip()}")
        assert took < PROMPT_S, took
    else:
        raise AssertionError(f"the query did not fail: {q.status}")
    finally:
        q.stop()


@pytest.mark.parametrize("guarantee", ["at-least-once", "exactly-once", "at-most-once"])
def test_write_with_wrong_password_fails_promptly_naming_authentication(spark, sasl_broker,
                                                                        guarantee):
    df = spark.range(ROWS).selectExpr("cast(id as string) AS value").repartition(2)
    job = f"auth-{guarantee}"
    out = "auth-out"

    def write(password: str):
        _with(df.write.format("headrace"), spark_options(sasl_broker, password)) \
            .option("topic", out).option("deliveryGuarantee", guarantee) \
            .option("jobId", job).mode("append").save()

    before = len(_committed_values(sasl_broker, out, 2))
    t0 = time.monotonic()
    with pytest.raises(Exception) as e:
        write("wrong")
    took = time.monotonic() - t0
    line = _auth_line(str(e.value))
    print(f"{guarantee}: failed after {took:.1f} s: {line.strip()}")
    assert took < PROMPT_S, took
    assert len(_committed_values(sasl_broker, out, 2)) == before   # nothing written
    # The same job with the right password writes every row once.
    write(PASSWORD)
    values = _committed_values(sasl_broker, out, 2)
    assert len(values) - before == ROWS
