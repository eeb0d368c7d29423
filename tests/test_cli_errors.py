"""Clear errors: the command line names librdkafka's authentication, TLS and
protocol failures at once (headrace.cli.probe.check_handshake) instead of
waiting for --timeout and saying "broker unreachable"; and no error path
prints an empty reason. A real broker with a SASL_PLAINTEXT and an SSL
listener, the real CLI as a subprocess."""
from __future__ import annotations

import io
import time
from contextlib import redirect_stderr
from pathlib import Path

import pytest

from broker_process import BrokerProcess, _finish
from cli_run import headrace, ok, one_error_line
from test_security_tls import free_port, make_ca, make_cert

pytestmark = pytest.mark.timeout(300)
JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required '
        'user_admin="admin-secret";')
# Each failing command must answer well within the 10 s --timeout; the
# budget covers the interpreter's start on a loaded 2-core machine.
FAST_S = 4.0


class Secured:
    def __init__(self, proc, sasl: str, tls: str, certs: Path):
        self.proc, self.sasl, self.tls, self.certs = proc, sasl, tls, certs


@pytest.fixture(scope="module")
def secured(tmp_path_factory):
    d = tmp_path_factory.mktemp("err-certs")
    make_ca(d, "ca")
    make_ca(d, "rogue")
    make_cert(d, "ca", "broker", "/CN=localhost", "IP:127.0.0.1,DNS:localhost")
    (d / "broker-store.pem").write_text((d / "broker.key").read_text() +
                                        (d / "broker.pem").read_text())
    sp, tp = free_port(), free_port()
    b = BrokerProcess(
        tmp_path_factory.mktemp("err-broker"),
        "--set", "listener.security.protocol.map=SASL_PLAINTEXT:SASL_PLAINTEXT,SSL:SSL",
        "--set", "sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256",
        "--set", f"listener.name.sasl_plaintext.plain.sasl.jaas.config={JAAS}",
        "--set", "ssl.keystore.type=PEM",
        "--set", f"ssl.keystore.location={d / 'broker-store.pem'}",
        listen=f"SASL_PLAINTEXT://127.0.0.1:{sp},SSL://127.0.0.1:{tp}")
    b.start()
    yield Secured(b, f"127.0.0.1:{sp}", f"127.0.0.1:{tp}", d)
    _finish([b])


def _sasl(password: str, mechanism: str = "PLAIN") -> list[str]:
    return ["-X", "security.protocol=SASL_PLAINTEXT", "-X", f"sasl.mechanism={mechanism}",
            "-X", "sasl.username=admin", "-X", f"sasl.password={password}"]


COMMANDS = {
    "topic list": ["topic", "list"],
    "topic describe": ["topic", "describe", "t"],
    "produce": ["produce", "t"],
    "consume": ["consume", "t", "-e"],
    "group list": ["group", "list"],
    "user list": ["user", "list"],
    "user create": ["user", "create", "bob", "--password", "pw"],
    "txn list": ["txn", "list"],
}


def _cases(s: Secured) -> dict[str, tuple[str, list[str], tuple[str, ...]]]:
    """{name: (bootstrap, client flags, words the error line must hold)}."""
    return {
        "wrong password": (s.sasl, _sasl("wrong"),
                           ("authentication failed", "Invalid username or password")),
        "mechanism the listener lacks": (s.sasl, _sasl("x", "SCRAM-SHA-512"),
                                         ("authentication failed", "SCRAM-SHA-512",
                                          "PLAIN,SCRAM-SHA-256")),
        "PLAINTEXT to a SASL listener": (s.sasl, [], ("a SASL listener?",
                                                      "security.protocol is PLAINTEXT")),
        "PLAINTEXT to a TLS listener": (s.tls, [], ("a TLS listener?",
                                                    "security.protocol=SSL")),
        "untrusted broker certificate": (s.tls, ["-X", "security.protocol=SSL", "-X",
                                                 f"ssl.ca.location={s.certs / 'rogue.pem'}"],
                                         ("TLS handshake", "certificate verify failed")),
        "TLS to a plaintext port": (s.sasl, ["-X", "security.protocol=SSL"],
                                    ("TLS handshake", "PLAINTEXT")),
    }


CASE_NAMES = ["wrong password", "mechanism the listener lacks", "PLAINTEXT to a SASL listener",
              "PLAINTEXT to a TLS listener", "untrusted broker certificate",
              "TLS to a plaintext port"]


@pytest.mark.parametrize("case", CASE_NAMES)
def test_cause_is_named_at_once(secured, case):
    bootstrap, flags, words = _cases(secured)[case]
    for name, argv in COMMANDS.items():
        start = time.monotonic()
        r = headrace(*argv, *flags, brokers=bootstrap)
        elapsed = time.monotonic() - start
        line = one_error_line(r, *words)
        assert r.returncode == 2, (name, r)
        assert "unreachable" not in line, (name, line)
        assert elapsed < FAST_S, f"{case} / {name}: {elapsed:.2f}s: {line}"


def test_right_settings_still_work(secured):
    ok(headrace("topic", "create", "ok-t", *_sasl("admin-secret"), brokers=secured.sasl))
    assert "ok-t" in ok(headrace("topic", "list", *_sasl("admin-secret"),
                                 brokers=secured.sasl)).stdout
    ok(headrace("user", "create", "carol", "--password", "pw", *_sasl("admin-secret"),
                brokers=secured.sasl))
    assert "carol" in ok(headrace("user", "list", *_sasl("admin-secret"),
                                  brokers=secured.sasl)).stdout
    tls = ["-X", "security.protocol=SSL", "-X", f"ssl.ca.location={secured.certs / 'ca.pem'}"]
    assert "ok-t" in ok(headrace("topic", "list", *tls, brokers=secured.tls)).stdout


# -- no empty reasons -----------------------------------------------------------------
def _main_error(exc: BaseException, monkeypatch) -> tuple[int, str]:
    """Runs headrace.cli.main on a command whose work raises ``exc``."""
    from headrace.cli import app

    def fail(args):
        raise exc

    real = app.build_parser

    def build():
        p = real()
        parse = p.parse_args

        def parse_failing(argv=None):
            ns = parse(argv)
            ns.func = fail
            ns.own_signals = True  # no SIGINT watcher inside pytest
            return ns

        p.parse_args = parse_failing
        return p

    monkeypatch.setattr(app, "build_parser", build)
    err = io.StringIO()
    with redirect_stderr(err):
        code = app.main(["topic", "list", "--brokers", "127.0.0.1:1"])
    return code, err.getvalue()


@pytest.mark.parametrize("exc", [
    "HeadraceError()", "OSError()", "ConnectionResetError()", "TimeoutError()",
    "RuntimeError()", "ValueError('')", "KeyError()",
    "KafkaException(KafkaError(KafkaError._TIMED_OUT))",
    "KafkaException(KafkaError(KafkaError._TRANSPORT, ''))",
    "KafkaException(KafkaError(KafkaError.TOPIC_AUTHORIZATION_FAILED, ''))",
    "SettingsError('')", "CliError('')", "CliError('cannot do it: ')",
])
def test_no_error_line_is_empty(exc, monkeypatch):
    from confluent_kafka import KafkaError, KafkaException  # noqa: F401 - used by eval

    from headrace.cli.common import CliError  # noqa: F401
    from headrace.errors import HeadraceError  # noqa: F401
    from headrace.settings import SettingsError  # noqa: F401

    code, stderr = _main_error(eval(exc), monkeypatch)
    assert code in (1, 2)
    lines = stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("headrace: error: "), stderr
    reason = lines[0][len("headrace: error: "):].strip()
    assert reason and not reason.endswith(":"), f"{exc}: empty reason in {lines[0]!r}"


def test_user_errors_name_their_reason():
    """`user`'s per-user errors: a future that timed out has no text of its own."""
    from concurrent.futures import TimeoutError as FutureTimeout

    from confluent_kafka import KafkaError, KafkaException

    from headrace.cli.user import _error_text

    assert _error_text(FutureTimeout()) == "no answer from the broker in time"
    assert _error_text(KafkaException(KafkaError(KafkaError._TIMED_OUT, ""))).startswith(
        "_TIMED_OUT: ")
    assert _error_text(KafkaException(KafkaError(KafkaError._TIMED_OUT, ""))) != "_TIMED_OUT: "


def test_handshake_probe_latency(secured):
    """In process: the wrong password is known within milliseconds (kcat: ~12 ms),
    and a good handshake costs about as little."""
    from headrace.cli.probe import HandshakeError, check_handshake

    settings = {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanisms": "PLAIN",
                "sasl.username": "admin", "sasl.password": "wrong"}
    times = []
    for _ in range(3):
        start = time.monotonic()
        with pytest.raises(HandshakeError, match="Invalid username or password"):
            check_handshake(secured.sasl, settings, 10.0)
        times.append(time.monotonic() - start)
    failed = min(times)
    start = time.monotonic()
    check_handshake(secured.sasl, {**settings, "sasl.password": "admin-secret"}, 10.0)
    good = time.monotonic() - start
    print(f"wrong password named after {failed * 1000:.1f} ms; good handshake {good * 1000:.1f} ms")
    assert failed < 1.0 and good < 1.0, (failed, good)
