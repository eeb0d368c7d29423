"""Security settings reach every Kafka client of the Spark and Storm
integrations (docs/spark.md, docs/storm.md): ``kafka.security.protocol``,
``kafka.sasl.*``, ``kafka.ssl.*`` options of the Spark source and sink (the
Java client's names translated, as Spark's Kafka source takes them), and
Storm's ``headrace.kafka``. Unit level: the configs handed to
confluent-kafka are inspected, no broker is needed."""
from __future__ import annotations

import io

import pytest

JAAS = ('org.apache.kafka.common.security.scram.ScramLoginModule required '
        'username="alice" password="pw";')
SECURITY_JAVA = {"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-256",
                 "sasl.jaas.config": JAAS, "ssl.truststore.type": "PEM",
                 "ssl.truststore.location": "/etc/ca.pem"}
EXPECTED = {"security.protocol": "SASL_SSL", "sasl.mechanisms": "SCRAM-SHA-256",
            "sasl.username": "alice", "sasl.password": "pw", "ssl.ca.location": "/etc/ca.pem"}


def has_security(conf: dict) -> bool:
    return all(conf.get(k) == v for k, v in EXPECTED.items())


def test_spark_source_and_sink_pass_security_options_to_every_client():
    pytest.importorskip("pyspark")
    from headrace.spark.cluster import consumer_config
    from headrace.spark.delivery import claim_producer_config, producer_config
    from headrace.spark.options import (HeadraceOptionError, parse_sink_options,
                                        parse_source_options)
    from headrace.spark.sink_progress import _client_conf

    options = {"kafka.bootstrap.servers": "b:9093", "subscribe": "t",
               **{f"kafka.{k}": v for k, v in SECURITY_JAVA.items()}}
    source = parse_source_options(options, streaming=False)
    for purpose in ("driver", "executor", "commit"):
        assert has_security(consumer_config(source, purpose)), purpose
    sink_options = {"kafka.bootstrap.servers": "b:9093", "topic": "t",
                    "kafka.security.protocol": "SSL", "kafka.ssl.ca.location": "/ca.pem",
                    "kafka.ssl.certificate.location": "/c.pem", "kafka.ssl.key.location": "/k.pem"}
    sink = parse_sink_options(sink_options, streaming=False)
    for conf in (producer_config(sink), _client_conf(sink)):
        assert conf["security.protocol"] == "SSL" and conf["ssl.ca.location"] == "/ca.pem"
        assert conf["ssl.key.location"] == "/k.pem"
    exactly_once = parse_sink_options({**sink_options, "deliveryGuarantee": "exactly-once",
                                       "jobId": "j1"}, streaming=False)
    assert claim_producer_config(exactly_once)["security.protocol"] == "SSL"
    with pytest.raises(HeadraceOptionError, match="JKS"):
        parse_source_options({**options, "kafka.ssl.keystore.type": "JKS",
                              "kafka.ssl.keystore.location": "/k.jks"}, streaming=False)


def test_storm_spout_and_bolt_pass_headrace_kafka_to_every_client(monkeypatch):
    pytest.importorskip("pystorm")
    import headrace.storm.bolt as bolt_mod
    import headrace.storm.transactional_writer as writer_mod
    from headrace.storm import KafkaBolt, KafkaSpout
    from headrace.storm import config as cfg
    from headrace.storm.consumer import consumer_config

    conf = {"headrace.brokers": "b:9093", "headrace.topics": "t",
            "headrace.kafka": SECURITY_JAVA}
    spout = KafkaSpout(input_stream=io.BytesIO(), output_stream=io.BytesIO())
    settings = cfg.resolve(spout, cfg.SPOUT, conf)
    assert has_security(consumer_config(settings, "g", "c"))
    # ... and as the class attribute (a subclass), the other way to set it.
    attr = type("SecureSpout", (KafkaSpout,), {"kafka": SECURITY_JAVA})(
        input_stream=io.BytesIO(), output_stream=io.BytesIO())
    no_key = {k: v for k, v in conf.items() if k != "headrace.kafka"}
    assert has_security(consumer_config(cfg.resolve(attr, cfg.SPOUT, no_key), "g", "c"))
    assert cfg.resolve(spout, cfg.SPOUT, no_key)["kafka"] is None

    seen = {}
    monkeypatch.setattr(bolt_mod, "Producer", lambda c: seen.setdefault("producer", c))

    class FakeConsumer:
        def __init__(self, c):
            seen["writer-consumer"] = c

        def consumer_group_metadata(self):
            return None

    monkeypatch.setattr(writer_mod, "Consumer", FakeConsumer)
    bolt = KafkaBolt(input_stream=io.BytesIO(), output_stream=io.BytesIO())
    bolt.component_name, bolt.task_id = "out", 1
    bolt.initialize({"headrace.brokers": "b:9093", "headrace.topic": "t",
                     "headrace.fire_and_forget": True, "headrace.kafka": SECURITY_JAVA}, {})
    assert has_security(seen["producer"])
    writer = writer_mod.TransactionalWriter({}, "g", "b:9093", 10, 0.1, print, print, None,
                                            client_conf=bolt.settings["kafka"])
    assert has_security(seen["writer-consumer"])
    assert writer is not None
