"""Kafka's PKCS12 and JKS stores on a TLS listener (issue 33, item 5;
docs/security.md "Key and trust stores").

Stores are made as an operator would: the key and certificates with the
`openssl` CLI (tests/test_security_tls.py's helpers), the PKCS12 keystore by
Java's keytool (-importkeystore from OpenSSL's PKCS12) and the PKCS12
truststore by keytool -importcert (trustedCertEntry). A broker with
`ssl.keystore.type=PKCS12` / `ssl.truststore.type=PKCS12` (and one with the
types unset, Kafka's default JKS, over the same PKCS12 files, as Java 9+
reads them) serves mutual TLS to a confluent-kafka client; a JKS store is
refused with a message naming JKS as the default and the keytool command.
"""
from __future__ import annotations

import shutil
import subprocess
import sys

import pytest

from broker_process import BrokerProcess, _finish
from test_security_tls import confluent_roundtrip, free_port, make_ca, make_cert, openssl, topic

pytestmark = [pytest.mark.timeout(180),
              pytest.mark.skipif(shutil.which("keytool") is None or
                                 shutil.which("openssl") is None,
                                 reason="needs keytool (a JDK/JRE) and openssl")]

STORE_PASSWORD = "store-secret"


def keytool(*args: str, cwd) -> None:
    subprocess.run(["keytool", *args], cwd=cwd, check=True, capture_output=True)


@pytest.fixture(scope="module")
def stores(tmp_path_factory):
    d = tmp_path_factory.mktemp("keystores")
    make_ca(d, "ca")
    make_cert(d, "ca", "broker", "/CN=localhost", "IP:127.0.0.1,DNS:localhost")
    make_cert(d, "ca", "client", "/CN=client")
    openssl("pkcs12", "-export", "-in", "broker.pem", "-inkey", "broker.key",
            "-certfile", "ca.pem", "-name", "broker", "-passout", f"pass:{STORE_PASSWORD}",
            "-out", "openssl.p12", cwd=d)
    for dest, kind in (("broker.keystore.p12", "PKCS12"), ("broker.keystore.jks", "JKS")):
        keytool("-importkeystore", "-srckeystore", "openssl.p12", "-srcstoretype", "PKCS12",
                "-srcstorepass", STORE_PASSWORD, "-destkeystore", dest, "-deststoretype", kind,
                "-deststorepass", STORE_PASSWORD, "-destkeypass", STORE_PASSWORD,
                "-noprompt", cwd=d)
    keytool("-importcert", "-alias", "ca", "-file", "ca.pem", "-keystore",
            "truststore.p12", "-storetype", "PKCS12", "-storepass", STORE_PASSWORD,
            "-noprompt", cwd=d)
    return d


def _client(d, port: int) -> dict:
    return {"bootstrap.servers": f"127.0.0.1:{port}", "security.protocol": "SSL",
            "ssl.ca.location": str(d / "ca.pem"),
            "ssl.certificate.location": str(d / "client.pem"),
            "ssl.key.location": str(d / "client.key")}


def _tls_args(d, keystore: str, typed: bool) -> list[str]:
    args = ["--set", f"ssl.keystore.location={d / keystore}",
            "--set", f"ssl.keystore.password={STORE_PASSWORD}",
            "--set", f"ssl.key.password={STORE_PASSWORD}",
            "--set", f"ssl.truststore.location={d / 'truststore.p12'}",
            "--set", f"ssl.truststore.password={STORE_PASSWORD}",
            "--set", "ssl.client.auth=required"]
    if typed:
        args += ["--set", "ssl.keystore.type=PKCS12", "--set", "ssl.truststore.type=PKCS12"]
    return args


@pytest.mark.parametrize("typed", [True, False], ids=["type-PKCS12", "type-unset"])
def test_pkcs12_key_and_trust_stores_serve_mutual_tls(tmp_path, stores, typed):
    port = free_port()
    b = BrokerProcess(tmp_path / "data", *_tls_args(stores, "broker.keystore.p12", typed),
                      listen=f"SSL://127.0.0.1:{port}")
    try:
        b.start()
        confluent_roundtrip(_client(stores, port), topic(), n=20)
        log = b.stderr
        assert "PKCS12 store" in log and "truststore.p12" in log, log
    finally:
        _finish([b])


def test_a_jks_store_is_refused_naming_the_default_and_the_conversion(tmp_path, stores):
    r = subprocess.run([sys.executable, "-m", "headrace", "broker", "--data-dir",
                        str(tmp_path / "d"), "--listen", f"SSL://127.0.0.1:{free_port()}",
                        *_tls_args(stores, "broker.keystore.jks", typed=False)],
                       capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert r.returncode == 2, r
    errors = [line for line in r.stderr.splitlines() if " ERROR " in line]
    assert len(errors) == 1, r.stderr
    assert "Kafka's default ssl.keystore.type" in errors[0], errors[0]
    assert "keytool -importkeystore -srckeystore " in errors[0], errors[0]
    assert "-deststoretype PKCS12" in errors[0], errors[0]


def test_no_tls_listener_no_store_read(tmp_path, stores):
    """A PLAINTEXT-only broker does not read (nor refuse) the stores, as the
    core does not use them then."""
    from headrace.keystores import convert_stores

    values = {"listeners": "PLAINTEXT://127.0.0.1:9092",
              "ssl.keystore.location": str(stores / "broker.keystore.jks")}
    assert convert_stores(values) == (values, [])


def test_a_listener_override_pkcs12_store_next_to_a_global_pem_one(tmp_path, stores):
    """listener.name.<l>.ssl.keystore.* (and truststore) PKCS12 for one
    listener, the global ssl.* stores PEM for the other: each listener
    serves its own."""
    (stores / "broker-store.pem").write_text((stores / "broker.key").read_text() +
                                             (stores / "broker.pem").read_text())
    ssl_port, mtls_port = free_port(), free_port()
    b = BrokerProcess(
        tmp_path / "data",
        "--set", "listener.security.protocol.map=SSL:SSL,MTLS:SSL",
        "--set", "ssl.keystore.type=PEM",
        "--set", f"ssl.keystore.location={stores / 'broker-store.pem'}",
        "--set", "listener.name.mtls.ssl.keystore.type=PKCS12",
        "--set", f"listener.name.mtls.ssl.keystore.location={stores / 'broker.keystore.p12'}",
        "--set", f"listener.name.mtls.ssl.keystore.password={STORE_PASSWORD}",
        "--set", "listener.name.mtls.ssl.truststore.type=PKCS12",
        "--set", f"listener.name.mtls.ssl.truststore.location={stores / 'truststore.p12'}",
        "--set", f"listener.name.mtls.ssl.truststore.password={STORE_PASSWORD}",
        "--set", "listener.name.mtls.ssl.client.auth=required",
        listen=f"SSL://127.0.0.1:{ssl_port},MTLS://127.0.0.1:{mtls_port}")
    try:
        b.start()
        confluent_roundtrip(_client(stores, mtls_port), topic(), n=10)
        plain_tls = {k: v for k, v in _client(stores, ssl_port).items()
                     if k not in ("ssl.certificate.location", "ssl.key.location")}
        confluent_roundtrip(plain_tls, topic(), n=10)
        assert "listener.name.mtls.ssl.keystore.location: PKCS12 store" in b.stderr, b.stderr
    finally:
        _finish([b])


def test_cli_command_config_with_java_pkcs12_stores(tmp_path, stores):
    """A Kafka client config (--command-config) with keytool's PKCS12 key and
    trust stores: the CLI's librdkafka clients and its own connection
    (cluster info's probes, secure_socket) both use them over mutual TLS; a
    JKS one is refused naming the conversion."""
    d = stores
    if not (d / "client.keystore.p12").exists():
        openssl("pkcs12", "-export", "-in", "client.pem", "-inkey", "client.key",
                "-name", "client", "-passout", f"pass:{STORE_PASSWORD}",
                "-out", "client-openssl.p12", cwd=d)
        keytool("-importkeystore", "-srckeystore", "client-openssl.p12", "-srcstoretype",
                "PKCS12", "-srcstorepass", STORE_PASSWORD, "-destkeystore",
                "client.keystore.p12", "-deststoretype", "PKCS12", "-deststorepass",
                STORE_PASSWORD, "-noprompt", cwd=d)
    port = free_port()
    b = BrokerProcess(tmp_path / "data", *_tls_args(d, "broker.keystore.p12", typed=True),
                      listen=f"SSL://127.0.0.1:{port}")
    conf = tmp_path / "client.properties"
    conf.write_text("security.protocol=SSL\n"
                    "ssl.keystore.type=PKCS12\n"
                    f"ssl.keystore.location={d / 'client.keystore.p12'}\n"
                    f"ssl.keystore.password={STORE_PASSWORD}\n"
                    f"ssl.key.password={STORE_PASSWORD}\n"
                    f"ssl.truststore.location={d / 'truststore.p12'}\n"
                    f"ssl.truststore.password={STORE_PASSWORD}\n")
    try:
        b.start()
        out = {}
        for args in (("topic", "create", "p12-cli"), ("topic", "list"), ("cluster", "info")):
            r = subprocess.run([sys.executable, "-m", "headrace", *args, "--brokers",
                                f"127.0.0.1:{port}", "--command-config", str(conf)],
                               capture_output=True, text=True, timeout=60)
            assert r.returncode == 0, (args, r.stderr)
            out[args[1]] = r.stdout
        assert "p12-cli" in out["list"], out
        assert "brokers      1\n" in out["info"] and "DOWN" not in out["info"], out
    finally:
        _finish([b])
    jks = tmp_path / "jks.properties"
    jks.write_text("security.protocol=SSL\n"
                   f"ssl.truststore.location={d / 'broker.keystore.jks'}\n")
    r = subprocess.run([sys.executable, "-m", "headrace", "topic", "list", "--brokers",
                        "127.0.0.1:1", "--command-config", str(jks)],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "deststoretype PKCS12" in r.stderr, r.stderr
