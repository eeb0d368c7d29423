"""TLS listeners of a real `headrace broker` process (docs/security.md "TLS").

One module broker with three listeners: PLAINTEXT, SSL (server certificate
only) and MTLS (mapped to SSL by listener.security.protocol.map, with
`listener.name.mtls.ssl.client.auth=required`). Certificates are made with
the `openssl` CLI in a session directory: a CA, the broker's key + chain in
one PEM file (Kafka's PEM keystore), a client certificate, and a second,
untrusted CA with its own client certificate.

Real clients (confluent-kafka, kafka-python, aiokafka, kcat) produce and
consume over SSL and mutual TLS; untrusted certificates and plaintext
against a TLS port fail with the client's error; malformed and truncated
TLS records close only their own connection with a rate-limited log line.
This machine's kernel has no kernel TLS, so every TLS byte here goes through
the OpenSSL copy path (the broker says so at start).
"""
from __future__ import annotations

import asyncio
import json
import logging
import os
import socket
import ssl
import struct
import subprocess
import time
import uuid

import pytest

from broker_process import GROUP_ARGS, BrokerProcess, _finish


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def openssl(*args: str, cwd) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


def make_ca(d, name: str) -> None:
    openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
            "-nodes", "-keyout", f"{name}.key", "-out", f"{name}.pem", "-days", "2",
            "-subj", f"/CN={name}", cwd=d)


def make_cert(d, ca: str, name: str, subject: str, san: str | None = None) -> None:
    openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
            "-keyout", f"{name}.key", "-out", f"{name}.csr", "-subj", subject, cwd=d)
    ext = []
    if san:
        (d / f"{name}.ext").write_text(f"subjectAltName={san}\n")
        ext = ["-extfile", f"{name}.ext"]
    openssl("x509", "-req", "-in", f"{name}.csr", "-CA", f"{ca}.pem", "-CAkey", f"{ca}.key",
            "-CAcreateserial", "-out", f"{name}.pem", "-days", "2", *ext, cwd=d)


@pytest.fixture(scope="session")
def certs(tmp_path_factory):
    d = tmp_path_factory.mktemp("tls-certs")
    make_ca(d, "ca")
    make_ca(d, "rogue-ca")
    make_cert(d, "ca", "broker", "/CN=localhost", "IP:127.0.0.1,DNS:localhost")
    make_cert(d, "ca", "client", "/O=headrace/OU=eng/CN=client")
    make_cert(d, "rogue-ca", "rogue", "/CN=rogue")
    # Kafka's PEM keystore: the key and the certificate chain in one file.
    (d / "broker-store.pem").write_text((d / "broker.key").read_text() +
                                        (d / "broker.pem").read_text())
    return d


class TlsBroker:
    def __init__(self, proc: BrokerProcess, plain: int, ssl_port: int, mtls: int, certs):
        self.proc, self.plain, self.ssl, self.mtls, self.certs = proc, plain, ssl_port, mtls, certs

    def conf(self, port: int, *, client_cert: str | None = None, ca: str = "ca") -> dict:
        c = {"bootstrap.servers": f"127.0.0.1:{port}", "security.protocol": "SSL",
             "ssl.ca.location": str(self.certs / f"{ca}.pem")}
        if client_cert:
            c["ssl.certificate.location"] = str(self.certs / f"{client_cert}.pem")
            c["ssl.key.location"] = str(self.certs / f"{client_cert}.key")
        return c


def start_tls_broker(data_dir, certs, *extra: str) -> TlsBroker:
    plain, ssl_port, mtls = free_port(), free_port(), free_port()
    proc = BrokerProcess(
        data_dir,
        "--set", "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,SSL:SSL,MTLS:SSL",
        "--set", "ssl.keystore.type=PEM",
        "--set", f"ssl.keystore.location={certs / 'broker-store.pem'}",
        "--set", "ssl.truststore.type=PEM",
        "--set", f"ssl.truststore.location={certs / 'ca.pem'}",
        "--set", "listener.name.mtls.ssl.client.auth=required",
        *GROUP_ARGS, *extra,
        listen=f"PLAINTEXT://127.0.0.1:{plain},SSL://127.0.0.1:{ssl_port},"
               f"MTLS://127.0.0.1:{mtls}")
    proc.start()
    return TlsBroker(proc, plain, ssl_port, mtls, certs)


@pytest.fixture(scope="module")
def tls_broker(tmp_path_factory, certs):
    b = start_tls_broker(tmp_path_factory.mktemp("tls-broker"), certs)
    yield b
    _finish([b.proc])


def topic() -> str:
    return f"tls-{uuid.uuid4().hex[:8]}"


def confluent_roundtrip(conf: dict, name: str, n: int = 200) -> None:
    """Produces n records and reads them back: offsets 0..n-1, same bytes."""
    from confluent_kafka import Consumer, Producer

    values = [os.urandom(100 + i) for i in range(n)]
    offsets = []
    p = Producer(conf)
    for v in values:
        p.produce(name, v, on_delivery=lambda err, m: offsets.append(
            (err, m.offset() if err is None else None)))
    assert p.flush(30) == 0
    assert [e for e, _ in offsets] == [None] * n
    assert sorted(o for _, o in offsets) == list(range(n))
    c = Consumer({**conf, "group.id": f"g-{name}", "auto.offset.reset": "earliest",
                  "enable.auto.commit": False})
    c.subscribe([name])
    got = []
    deadline = time.monotonic() + 30
    while len(got) < n and time.monotonic() < deadline:
        m = c.poll(1.0)
        if m is None:
            continue
        assert m.error() is None, m.error()
        got.append((m.offset(), m.value()))
    c.close()
    assert [o for o, _ in got] == list(range(n))
    assert [v for _, v in got] == values


def test_startup_line_names_the_send_path(tls_broker):
    log = tls_broker.proc.stderr
    for name in ("SSL", "MTLS"):
        lines = [line for line in log.splitlines() if f"listener {name} on port" in line]
        assert len(lines) == 1, log
        # CONFIG_TLS is unset on this machine's kernel: the copy path.
        assert "sending with kTLS" in lines[0] or "sending with OpenSSL copy" in lines[0]


def test_confluent_over_ssl(tls_broker):
    confluent_roundtrip(tls_broker.conf(tls_broker.ssl), topic())


def test_confluent_over_mutual_tls(tls_broker):
    confluent_roundtrip(tls_broker.conf(tls_broker.mtls, client_cert="client"), topic())


def test_metadata_advertises_the_listener_the_client_came_in_on(tls_broker):
    from confluent_kafka.admin import AdminClient

    for port, conf in ((tls_broker.ssl, tls_broker.conf(tls_broker.ssl)),
                       (tls_broker.mtls, tls_broker.conf(tls_broker.mtls, client_cert="client")),
                       (tls_broker.plain, {"bootstrap.servers": f"127.0.0.1:{tls_broker.plain}"})):
        md = AdminClient(conf).list_topics(timeout=20)
        assert [(b.host, b.port) for b in md.brokers.values()] == [("127.0.0.1", port)]


def test_kafka_python_over_ssl_and_mutual_tls(tls_broker):
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition

    c = tls_broker.certs
    for port, cert in ((tls_broker.ssl, None), (tls_broker.mtls, "client")):
        kw = {"bootstrap_servers": f"127.0.0.1:{port}", "security_protocol": "SSL",
              "ssl_cafile": str(c / "ca.pem"), "ssl_check_hostname": True}
        if cert:
            kw.update(ssl_certfile=str(c / f"{cert}.pem"), ssl_keyfile=str(c / f"{cert}.key"))
        name = topic()
        values = [os.urandom(64) for _ in range(50)]
        p = KafkaProducer(**kw)
        metas = [p.send(name, v).get(timeout=30) for v in values]
        p.close()
        assert [m.offset for m in metas] == list(range(50))
        cons = KafkaConsumer(**kw, consumer_timeout_ms=10000)
        tp = TopicPartition(name, 0)
        cons.assign([tp])
        cons.seek_to_beginning(tp)
        got = []
        for m in cons:
            got.append((m.offset, m.value))
            if len(got) == 50:
                break
        cons.close()
        assert got == list(enumerate(values))


def test_aiokafka_over_ssl_and_mutual_tls(tls_broker):
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
    from aiokafka.helpers import create_ssl_context

    c = tls_broker.certs

    async def run(port: int, cert: str | None):
        kw = {}
        if cert:
            kw = {"certfile": str(c / f"{cert}.pem"), "keyfile": str(c / f"{cert}.key")}
        ctx = create_ssl_context(cafile=str(c / "ca.pem"), **kw)
        boot = f"127.0.0.1:{port}"
        name = topic()
        values = [os.urandom(80) for _ in range(50)]
        p = AIOKafkaProducer(bootstrap_servers=boot, security_protocol="SSL", ssl_context=ctx)
        await p.start()
        try:
            metas = [await p.send_and_wait(name, v) for v in values]
        finally:
            await p.stop()
        assert [m.offset for m in metas] == list(range(50))
        cons = AIOKafkaConsumer(name, bootstrap_servers=boot, security_protocol="SSL",
                                ssl_context=ctx, auto_offset_reset="earliest")
        await cons.start()
        got = []
        try:
            while len(got) < 50:
                batch = await asyncio.wait_for(cons.getmany(timeout_ms=1000), 30)
                for msgs in batch.values():
                    got.extend((m.offset, m.value) for m in msgs)
        finally:
            await cons.stop()
        assert got == list(enumerate(values))

    asyncio.run(run(tls_broker.ssl, None))
    asyncio.run(run(tls_broker.mtls, "client"))


def test_kcat_over_ssl_and_mutual_tls(tls_broker):
    c = tls_broker.certs
    for port, cert in ((tls_broker.ssl, None), (tls_broker.mtls, "client")):
        x = ["-X", "security.protocol=SSL", "-X", f"ssl.ca.location={c / 'ca.pem'}"]
        if cert:
            x += ["-X", f"ssl.certificate.location={c / f'{cert}.pem'}",
                  "-X", f"ssl.key.location={c / f'{cert}.key'}"]
        name = topic()
        lines = [f"line-{i}-{uuid.uuid4().hex}" for i in range(20)]
        subprocess.run(["kcat", "-b", f"127.0.0.1:{port}", *x, "-P", "-t", name],
                       input="\n".join(lines) + "\n", text=True, check=True, timeout=60)
        out = subprocess.run(["kcat", "-b", f"127.0.0.1:{port}", *x, "-C", "-t", name, "-o",
                              "beginning", "-e", "-f", "%o %s\n"],
                             capture_output=True, text=True, check=True, timeout=60).stdout
        assert out.splitlines() == [f"{i} {v}" for i, v in enumerate(lines)]


class _Collect(logging.Handler):
    def __init__(self):
        super().__init__()
        self.lines: list[str] = []

    def emit(self, record):
        self.lines.append(record.getMessage())


def client_errors(conf: dict, timeout: float = 2.5) -> tuple[str, Exception | None]:
    """Asks for metadata; returns librdkafka's log and error callbacks as one
    text, and what list_topics raised (None if it answered)."""
    from confluent_kafka.admin import AdminClient

    errors = []
    collect = _Collect()
    logger = logging.getLogger(f"rdkafka-{uuid.uuid4().hex[:6]}")
    logger.addHandler(collect)
    logger.propagate = False
    admin = AdminClient({**conf, "error_cb": errors.append, "logger": logger,
                         "reconnect.backoff.max.ms": 1000})
    raised = None
    try:
        admin.list_topics(timeout=timeout)
    except Exception as e:  # KafkaException(_TRANSPORT / _TIMED_OUT)
        raised = e
    admin.poll(0.1)  # serves the queued log lines to `logger`
    del admin
    return " | ".join(collect.lines + [str(e) for e in errors]), raised


def api_versions_request() -> bytes:
    body = struct.pack(">hhih", 18, 0, 1, 4) + b"test"
    return struct.pack(">i", len(body)) + body


def test_untrusted_client_certificate_is_refused(tls_broker):
    c = tls_broker.certs
    # A client that presents a certificate of another CA: the broker refuses
    # it during the handshake (TLS 1.3: the client learns it from the alert
    # on its first read) and never answers a request.
    ctx = ssl.create_default_context(cafile=str(c / "ca.pem"))
    ctx.load_cert_chain(str(c / "rogue.pem"), str(c / "rogue.key"))
    with socket.create_connection(("127.0.0.1", tls_broker.mtls), timeout=10) as raw:
        with pytest.raises((ssl.SSLError, ConnectionResetError, BrokenPipeError)) as info:
            with ctx.wrap_socket(raw, server_hostname="127.0.0.1") as s:
                s.sendall(api_versions_request())
                assert s.recv(4096) == b"", "the broker answered an untrusted client"
                raise ConnectionResetError("closed without an alert")
    # Usually the alert (unknown ca); an EOF or reset when the close beats it.
    assert isinstance(info.value, (ssl.SSLError, ConnectionResetError)), info.value
    # librdkafka does not send a certificate the broker's CAs did not issue:
    # the broker requires one and says so.
    text, raised = client_errors(tls_broker.conf(tls_broker.mtls, client_cert="rogue"))
    assert raised is not None
    assert "certificate required" in text, text
    # No certificate at all on a client-auth=required listener: refused too.
    text, raised = client_errors(tls_broker.conf(tls_broker.mtls))
    assert raised is not None and "certificate required" in text, text
    log = tls_broker.proc.stderr
    assert "certificate" in log, log
    # The broker still serves trusted clients.
    confluent_roundtrip(tls_broker.conf(tls_broker.mtls, client_cert="client"), topic(), n=5)


def test_client_that_does_not_trust_the_broker_fails(tls_broker):
    text, raised = client_errors(tls_broker.conf(tls_broker.ssl, ca="rogue-ca"))
    assert raised is not None
    assert "certificate verify failed" in text, text


def test_plaintext_client_against_a_tls_port_fails_cleanly(tls_broker):
    text, raised = client_errors({"bootstrap.servers": f"127.0.0.1:{tls_broker.ssl}"})
    assert raised is not None
    assert text, "no error reported"
    # A raw Kafka ApiVersions request in plaintext: the broker closes the
    # connection (after an alert), it never answers or hangs.
    with socket.create_connection(("127.0.0.1", tls_broker.ssl), timeout=10) as s:
        s.sendall(api_versions_request())
        data = b""
        try:
            while chunk := s.recv(4096):
                data += chunk
        except ConnectionResetError:
            pass
        assert data == b"" or data[:1] == b"\x15", data  # nothing, or a TLS alert record


def tls_handshaken_socket(port: int, certs) -> tuple[socket.socket, ssl.SSLObject]:
    """A raw socket with a completed TLS handshake done through memory BIOs,
    so the test can write arbitrary bytes on the wire afterwards."""
    ctx = ssl.create_default_context(cafile=str(certs / "ca.pem"))
    inc, out = ssl.MemoryBIO(), ssl.MemoryBIO()
    obj = ctx.wrap_bio(inc, out, server_hostname="127.0.0.1")
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    while True:
        try:
            obj.do_handshake()
            break
        except ssl.SSLWantReadError:
            s.sendall(out.read())
            inc.write(s.recv(65536))
    s.sendall(out.read())
    return s, obj


def half_close(s: socket.socket) -> None:
    """EOF towards the broker (which may have closed already: then nothing)."""
    try:
        s.shutdown(socket.SHUT_WR)
    except OSError:
        pass


def closed_by_broker(s: socket.socket) -> bool:
    """Reads until EOF (an alert may come first); False if still open after 10 s."""
    try:
        while s.recv(65536):
            pass
        return True
    except ConnectionResetError:
        return True
    except socket.timeout:
        return False


FUZZ_CASES = {
    "garbage": os.urandom(4096),
    # A handshake record announcing 16000 bytes, cut after 10 (then EOF).
    "truncated-record": b"\x16\x03\x01\x3e\x80" + os.urandom(10),
    # A record longer than TLS allows.
    "oversized-record": b"\x16\x03\x03\xff\xff" + os.urandom(2000),
    # A ClientHello cut in the middle of its body.
    "truncated-hello": b"\x16\x03\x01\x00\x40\x01\x00\x00\x3c\x03\x03" + os.urandom(20),
    # An HTTP request.
    "http": b"GET / HTTP/1.1\r\nHost: x\r\n\r\n",
}


def cpu_seconds(pid: int) -> float:
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def fuzz_connections(port: int, certs, broker_pid: int) -> None:
    # A half-sent ClientHello held open: must not stall anyone else, nor
    # keep an I/O thread busy while the rest of the record does not come.
    stalled = socket.create_connection(("127.0.0.1", port), timeout=10)
    stalled.sendall(FUZZ_CASES["truncated-hello"])
    time.sleep(0.2)
    before = cpu_seconds(broker_pid)
    time.sleep(1.0)
    assert cpu_seconds(broker_pid) - before < 0.3, "the broker spins on a partial record"
    for name, payload in FUZZ_CASES.items():
        with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
            s.sendall(payload)
            if name.startswith("truncated"):
                half_close(s)
            assert closed_by_broker(s), name
    # After a good handshake: a corrupted application-data record (bad MAC)
    # and a truncated one.
    for tail, then_eof in ((b"\x17\x03\x03\x00\x40" + os.urandom(64), False),
                           (b"\x17\x03\x03\x01\x00" + b"x", True)):
        s, _ = tls_handshaken_socket(port, certs)
        with s:
            s.sendall(tail)
            if then_eof:
                half_close(s)
            assert closed_by_broker(s)
    stalled.close()


def test_malformed_and_truncated_tls_records_close_only_their_connection(tls_broker):
    before = tls_broker.proc.stderr.count("repeats are summarised")
    fuzz_connections(tls_broker.ssl, tls_broker.certs, tls_broker.proc.proc.pid)
    fuzz_connections(tls_broker.mtls, tls_broker.certs, tls_broker.proc.proc.pid)
    assert tls_broker.proc.running
    confluent_roundtrip(tls_broker.conf(tls_broker.ssl), topic(), n=5)
    log = tls_broker.proc.stderr
    tls_lines = [line for line in log.splitlines() if "TLS" in line and "closing" in line]
    assert tls_lines, log
    # One line, then summaries (EventSummary: at most one line per 10 s).
    assert log.count("repeats are summarised") - before <= 2, log


def test_epoll_backend_serves_tls(tmp_path, certs):
    b = start_tls_broker(tmp_path / "epoll", certs, "--set", "headrace.network.backend=epoll")
    try:
        assert b.proc.backend == "epoll"
        confluent_roundtrip(b.conf(b.ssl), topic(), n=100)
        confluent_roundtrip(b.conf(b.mtls, client_cert="client"), topic(), n=100)
        text, raised = client_errors(b.conf(b.mtls, client_cert="rogue"))
        assert raised is not None and "certificate required" in text, text
        fuzz_connections(b.ssl, certs, b.proc.proc.pid)
        confluent_roundtrip(b.conf(b.ssl), topic(), n=5)
    finally:
        _finish([b.proc])


def test_io_uring_backend_serves_tls(tls_broker):
    # The module broker runs the default backend: io_uring where the kernel
    # allows it (every other test of this module then covers it).
    assert tls_broker.proc.backend in ("io_uring", "epoll")
    if tls_broker.proc.backend != "io_uring":
        pytest.skip("io_uring is not available on this machine")


def test_zookeeper_registration_lists_every_listener():
    # Kafka's /brokers/ids/<id> layout: every listener's endpoint and the
    # protocol map; host/port are the inter-broker listener's.
    from headrace.cluster import zk_layout as L

    reg = L.BrokerRegistration(3, "10.0.0.3", 9092, None,
                               endpoints=["PLAINTEXT://10.0.0.3:9092", "SSL://b3.example:9093"],
                               protocol_map={"PLAINTEXT": "PLAINTEXT", "SSL": "SSL"})
    obj = json.loads(reg.encode())
    assert obj["endpoints"] == ["PLAINTEXT://10.0.0.3:9092", "SSL://b3.example:9093"]
    assert obj["listener_security_protocol_map"] == {"PLAINTEXT": "PLAINTEXT", "SSL": "SSL"}
    back = L.BrokerRegistration.decode(3, reg.encode())
    assert (back.host, back.port) == ("10.0.0.3", 9092)


def test_cluster_gives_each_client_the_endpoints_of_its_listener(tmp_path, certs, zookeeper,
                                                                 zk_chroot):
    """Two brokers, each with PLAINTEXT (inter-broker) and SSL listeners:
    Metadata over SSL lists both brokers' SSL endpoints, over PLAINTEXT their
    PLAINTEXT ones, and an RF=2 topic produced over SSL with acks=all is
    replicated (the followers fetch over PLAINTEXT)."""
    from confluent_kafka.admin import AdminClient, NewTopic

    brokers = []
    try:
        for node in (1, 2):
            b = start_tls_broker(tmp_path / f"b{node}", certs, "--node-id", str(node),
                                 "--zookeeper", zookeeper.connect_string + zk_chroot,
                                 "--set", "zookeeper.session.timeout.ms=6000")
            brokers.append(b)
        ssl_conf = brokers[0].conf(brokers[0].ssl)
        want_ssl = sorted(("127.0.0.1", b.ssl) for b in brokers)
        want_plain = sorted(("127.0.0.1", b.plain) for b in brokers)
        deadline = time.monotonic() + 30
        while True:
            md = AdminClient(ssl_conf).list_topics(timeout=20)
            got = sorted((x.host, x.port) for x in md.brokers.values())
            if got == want_ssl or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        assert got == want_ssl
        md = AdminClient({"bootstrap.servers": f"127.0.0.1:{brokers[1].plain}"}).list_topics(
            timeout=20)
        assert sorted((x.host, x.port) for x in md.brokers.values()) == want_plain
        name = topic()
        admin = AdminClient(ssl_conf)
        for f in admin.create_topics([NewTopic(name, 1, 2)]).values():
            f.result(30)
        confluent_roundtrip({**ssl_conf, "acks": "all"}, name, n=50)
    finally:
        _finish([b.proc for b in brokers])
