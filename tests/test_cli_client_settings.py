"""Client settings of the command line (docs/security.md "Client settings in
the CLI"): -X over --command-config over HEADRACE_* env, Kafka's Java names
translated, and the result reaching every client the CLI makes —
confluent-kafka's Producer / Consumer / AdminClient and admin_wire's own
connection, which speaks TLS (against an in-test TLS server with an openssl
made CA) and SASL PLAIN / SCRAM-SHA-256 / SCRAM-SHA-512 (against an
in-test SASL server using scramp's server side)."""
from __future__ import annotations

import socket
import ssl
import struct
import subprocess
import threading

import pytest

from headrace import client_settings as cs
from headrace.cli import build_parser


# -- resolution ------------------------------------------------------------------
def test_env_maps_headrace_names_to_client_keys():
    env = {"HEADRACE_SECURITY_PROTOCOL": "SASL_SSL", "HEADRACE_SASL_MECHANISM": "PLAIN",
           "HEADRACE_SSL_CA_LOCATION": "/ca.pem", "HEADRACE_CLIENT_ID": "me",
           "HEADRACE_BROKERS": "x:1", "HEADRACE_LOG_RETENTION_MS": "5", "OTHER": "1"}
    assert cs.resolve(environ=env) == {"security.protocol": "SASL_SSL",
                                       "sasl.mechanisms": "PLAIN",
                                       "ssl.ca.location": "/ca.pem", "client.id": "me"}


def test_flag_beats_file_beats_env(tmp_path):
    cfg = tmp_path / "client.properties"
    cfg.write_text("# Kafka tools' client config\n"
                   "security.protocol=SASL_PLAINTEXT\n"
                   "sasl.mechanism = SCRAM-SHA-256\n"
                   "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule "
                   "required \\\n    username=\"alice\" password=\"s3cr=t x\";\n"
                   "ssl.truststore.type: PEM\n"
                   "ssl.truststore.location /etc/ca.pem\n")
    env = {"HEADRACE_SECURITY_PROTOCOL": "SSL", "HEADRACE_SASL_MECHANISMS": "PLAIN",
           "HEADRACE_SSL_KEY_PASSWORD": "env-pw"}
    got = cs.resolve(["sasl.mechanism=SCRAM-SHA-512", "client.id=x=y"], str(cfg), env)
    assert got == {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanisms": "SCRAM-SHA-512",
                   "sasl.username": "alice", "sasl.password": "s3cr=t x",
                   "ssl.ca.location": "/etc/ca.pem", "ssl.key.password": "env-pw",
                   "client.id": "x=y"}


def test_java_pem_keystore_and_hostname_check_translate():
    got = cs.from_java({"ssl.keystore.type": "PEM", "ssl.keystore.location": "/k.pem",
                        "ssl.endpoint.identification.algorithm": "",
                        "ssl.truststore.certificates": "-----BEGIN CERTIFICATE-----"})
    assert got == {"ssl.certificate.location": "/k.pem", "ssl.key.location": "/k.pem",
                   "ssl.endpoint.identification.algorithm": "none",
                   "ssl.ca.pem": "-----BEGIN CERTIFICATE-----"}
    with pytest.raises(cs.ClientSettingsError, match="PEM"):
        cs.from_java({"ssl.truststore.type": "JKS", "ssl.truststore.location": "/t.jks"})


def test_bad_settings_are_one_error_line(tmp_path):
    from cli_run import headrace, one_error_line

    one_error_line(headrace("topic", "list", "-X", "nonsense", brokers="127.0.0.1:1"),
                   "-X expects KEY=VALUE")
    one_error_line(headrace("topic", "list", "--command-config", str(tmp_path / "none"),
                            brokers="127.0.0.1:1"), "--command-config")


# -- the settings reach every client -----------------------------------------------
@pytest.fixture
def listening():
    """A TCP port that accepts (the CLI's bootstrap probe) and nothing more."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(16)
    yield f"127.0.0.1:{s.getsockname()[1]}"
    s.close()


def args_of(*argv: str):
    return build_parser().parse_args(list(argv))


SECURE = ("-X", "security.protocol=SASL_SSL", "-X", "sasl.mechanism=PLAIN")


def test_settings_reach_producer_consumer_admin_client_and_wire(monkeypatch, listening):
    import confluent_kafka

    import headrace.admin as admin_mod
    import headrace.admin_wire as wire
    from headrace.cli import consume as cli_consume, produce as cli_produce
    from headrace.cli.common import admin_for

    seen: dict[str, dict] = {}

    def fake(name):
        def make(conf, *a, **kw):
            seen[name] = dict(conf)
            raise RuntimeError("stop here")
        return make

    monkeypatch.setattr(confluent_kafka, "Producer", fake("producer"))
    monkeypatch.setattr(confluent_kafka, "Consumer", fake("consumer"))
    monkeypatch.setattr(admin_mod, "AdminClient", lambda conf: seen.setdefault("admin", conf))
    monkeypatch.setenv("HEADRACE_SSL_CA_LOCATION", "/env-ca.pem")

    a = args_of("produce", "t", "--brokers", listening, *SECURE)
    with pytest.raises(Exception, match="stop here"):
        cli_produce._producer(a, lambda *x: None)
    a = args_of("consume", "t", "--brokers", listening, *SECURE)
    with pytest.raises(Exception, match="stop here"):
        cli_consume._consumer(a, None, cli_consume.parse_position("earliest"))
    admin = admin_for(args_of("topic", "list", "--brokers", listening, *SECURE))

    class FakeConn:
        def __init__(self, host, port, timeout, settings=None):
            seen["wire"] = dict(settings or {})
            raise wire.WireError("stop here")

    monkeypatch.setattr(wire, "Connection", FakeConn)
    with pytest.raises(admin_mod.AdminError, match="stop here"):
        with admin._wire("127.0.0.1", 1, "test"):
            pass
    for name in ("producer", "consumer", "admin", "wire"):
        assert seen[name]["security.protocol"] == "SASL_SSL", name
        assert seen[name]["sasl.mechanisms"] == "PLAIN", name
        assert seen[name]["ssl.ca.location"] == "/env-ca.pem", name


# -- admin_wire over TLS ---------------------------------------------------------------
@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    """A CA and a server certificate for localhost / 127.0.0.1 (openssl)."""
    d = tmp_path_factory.mktemp("certs")

    def run(*cmd):
        subprocess.run(cmd, check=True, capture_output=True, cwd=d, timeout=60)

    run("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
        "-subj", "/CN=test-ca", "-keyout", "ca.key", "-out", "ca.pem")
    run("openssl", "req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=localhost",
        "-keyout", "server.key", "-out", "server.csr")
    (d / "ext.cnf").write_text("subjectAltName=DNS:localhost,IP:127.0.0.1\n")
    run("openssl", "x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
        "-CAcreateserial", "-days", "2", "-extfile", "ext.cnf", "-out", "server.pem")
    run("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
        "-subj", "/CN=other-ca", "-keyout", "other.key", "-out", "other.pem")
    return d


def uvarint(n: int) -> bytes:
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    return bytes(out + bytes([n]))


def read_uvarint(b: bytes, at: int) -> tuple[int, int]:
    n = shift = 0
    while True:
        byte = b[at]
        at += 1
        n |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return n, at
        shift += 7


def read_frame(sock) -> bytes:
    def exact(n):
        buf = b""
        while len(buf) < n:
            chunk = sock.recv(n - len(buf))
            if not chunk:
                raise ConnectionError("closed")
            buf += chunk
        return buf
    return exact(struct.unpack(">i", exact(4))[0])


def answer(sock, correlation_id: int, body: bytes, flexible: bool = True) -> None:
    payload = struct.pack(">i", correlation_id) + (b"\0" if flexible else b"") + body
    sock.sendall(struct.pack(">i", len(payload)) + payload)


EMPTY_QUOTAS = struct.pack(">ih", 0, 0) + b"\0" + b"\1" + b"\0"  # v1: no entries


class FakeBroker:
    """Answers each connection with `serve(sock)` on a thread."""

    def __init__(self, serve, tls: ssl.SSLContext | None = None):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(4)
        self.port = self.sock.getsockname()[1]
        self.serve, self.tls, self.errors = serve, tls, []
        threading.Thread(target=self._run, daemon=True).start()

    def _run(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            try:
                if self.tls:
                    conn = self.tls.wrap_socket(conn, server_side=True)
                self.serve(conn)
            except (OSError, ssl.SSLError, ConnectionError) as e:
                self.errors.append(e)
            finally:
                conn.close()

    def close(self):
        self.sock.close()


def serve_quotas(sock):
    req = read_frame(sock)
    api_key, _, cid = struct.unpack(">hhi", req[:8])
    assert api_key == 48
    answer(sock, cid, EMPTY_QUOTAS)


def test_admin_wire_speaks_tls_with_the_given_ca(certs):
    from headrace.admin_wire import Connection, WireError, describe_client_quotas

    server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server.load_cert_chain(certs / "server.pem", certs / "server.key")
    fake = FakeBroker(serve_quotas, server)
    try:
        conn = Connection("localhost", fake.port, 5, {"security.protocol": "SSL",
                                                      "ssl.ca.location": str(certs / "ca.pem")})
        assert describe_client_quotas(conn, []) == []
        conn.close()
        with pytest.raises(WireError, match="TLS handshake failed"):
            Connection("localhost", fake.port, 5, {"security.protocol": "SSL",
                                                   "ssl.ca.location": str(certs / "other.pem")})
    finally:
        fake.close()


# -- admin_wire over SASL ------------------------------------------------------------
def serve_sasl(mechanism_name: str, users: dict[str, str]):
    """A SASL_PLAINTEXT fake: SaslHandshake v1, SaslAuthenticate v2 rounds
    (PLAIN or SCRAM through scramp's server), then one DescribeClientQuotas."""
    from scramp import ScramMechanism

    def auth_frame(sock):
        req = read_frame(sock)
        api_key, version, cid = struct.unpack(">hhi", req[:8])
        assert (api_key, version) == (36, 2)
        n = struct.unpack(">h", req[8:10])[0]
        body = req[10 + n + 1:]  # after the client id and the header's tags
        length, at = read_uvarint(body, 0)
        return cid, body[at:at + length - 1]

    def reply_auth(sock, cid, code, token=b"", message=None):
        msg = b"\0" if message is None else uvarint(len(message) + 1) + message.encode()
        answer(sock, cid, struct.pack(">h", code) + msg + uvarint(len(token) + 1) + token +
               struct.pack(">q", 0) + b"\0")

    def serve(sock):
        req = read_frame(sock)
        api_key, version, cid = struct.unpack(">hhi", req[:8])
        assert (api_key, version) == (17, 1)
        n = struct.unpack(">h", req[8:10])[0]
        asked = req[10 + n + 2:].decode()
        offered = mechanism_name.encode()
        code = 0 if asked == mechanism_name else 33  # UNSUPPORTED_SASL_MECHANISM
        answer(sock, cid, struct.pack(">hi", code, 1) + struct.pack(">h", len(offered)) +
               offered, flexible=False)
        if code:
            return
        if mechanism_name == "PLAIN":
            cid, token = auth_frame(sock)
            _, user, password = token.decode().split("\0")
            if users.get(user) != password:
                reply_auth(sock, cid, 58, message="Authentication failed: Invalid username or "
                                                  "password")
                return
            reply_auth(sock, cid, 0)
        else:
            mech = ScramMechanism(mechanism_name)
            creds = {u: mech.make_auth_info(p) for u, p in users.items()}
            server = mech.make_server(lambda u: creds[u])
            cid, token = auth_frame(sock)
            server.set_client_first(token.decode())
            reply_auth(sock, cid, 0, server.get_server_first().encode())
            cid, token = auth_frame(sock)
            try:
                server.set_client_final(token.decode())
            except Exception:  # noqa: BLE001 - scramp's ScramException: a wrong password
                reply_auth(sock, cid, 58, message="Authentication failed")
                return
            reply_auth(sock, cid, 0, server.get_server_final().encode())
        serve_quotas(sock)
    return serve


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_admin_wire_authenticates_with_sasl(mechanism):
    from headrace.admin_wire import Connection, WireError, describe_client_quotas

    fake = FakeBroker(serve_sasl(mechanism, {"alice": "pw"}))
    base = {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanisms": mechanism,
            "sasl.username": "alice"}
    try:
        conn = Connection("127.0.0.1", fake.port, 5, {**base, "sasl.password": "pw"})
        assert describe_client_quotas(conn, []) == []
        conn.close()
        with pytest.raises(WireError, match="Authentication failed|authentication failed"):
            Connection("127.0.0.1", fake.port, 5, {**base, "sasl.password": "wrong"})
        other = "PLAIN" if mechanism != "PLAIN" else "SCRAM-SHA-256"
        with pytest.raises(WireError, match=f"does not offer SASL {other}"):
            Connection("127.0.0.1", fake.port, 5, {**base, "sasl.mechanisms": other,
                                                   "sasl.password": "pw"})
    finally:
        fake.close()


def test_cli_commands_take_the_settings_against_a_real_broker(broker, tmp_path):
    """-X / --command-config / HEADRACE_* on real commands: plaintext works
    with a client id set three ways; SSL against a plaintext port is one
    error line."""
    from cli_run import headrace, ok, one_error_line

    b = broker.bootstrap
    ok(headrace("topic", "create", "settings-t", "-X", "client.id=from-flag", brokers=b))
    cfg = tmp_path / "client.properties"
    cfg.write_text("client.id=from-file\nsecurity.protocol=PLAINTEXT\n")
    listed = ok(headrace("topic", "list", "--command-config", str(cfg), brokers=b)).stdout
    assert "settings-t" in listed
    ok(headrace("quota", "describe", brokers=b, env={"HEADRACE_CLIENT_ID": "from-env"}))
    one_error_line(headrace("quota", "describe", "--timeout", "2", "-X", "security.protocol=SSL",
                            brokers=b))
