"""docs/cli.md says "The examples below run as a script, top to bottom":
every ```sh block after that line, joined in order, runs under `bash -e`
against the broker the first block starts, with `headrace` being this
checkout's command line. Blocks that are illustration only are fenced as
```text. Also: the README's and docs/security.md's config samples are the
format their file names say (a broker.toml sample exists and starts a
broker)."""
from __future__ import annotations

import os
import re
import stat
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
CLI_MD = REPO / "docs" / "cli.md"
MARKER = "The examples below run as a script, top to bottom:"

pytestmark = pytest.mark.timeout(300)


def runnable_script(text: str) -> str:
    """The ```sh blocks after MARKER, in order."""
    assert MARKER in text, f"{CLI_MD} lost its marker line"
    rest = text[text.index(MARKER):]
    blocks = re.findall(r"^```sh\n(.*?)^```$", rest, flags=re.S | re.M)
    assert blocks, "no ```sh blocks"
    return "\n".join(blocks)


def _headrace_on_path(tmp_path: Path) -> dict:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    exe = bin_dir / "headrace"
    exe.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m headrace.cli "$@"\n')
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
    env = {k: v for k, v in os.environ.items() if k != "HEADRACE_BROKERS"}
    env["PATH"] = f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"
    return env


def test_cli_md_runs_top_to_bottom(tmp_path):
    script = runnable_script(CLI_MD.read_text())
    (tmp_path / "cli-md.sh").write_text(script)
    r = subprocess.run(["bash", "-e", "-o", "pipefail", str(tmp_path / "cli-md.sh")],
                       cwd=tmp_path, env=_headrace_on_path(tmp_path), capture_output=True,
                       text=True, timeout=240)
    assert r.returncode == 0, (f"docs/cli.md's script failed (exit {r.returncode})\n"
                               f"stdout:\n{r.stdout[-4000:]}\nstderr:\n{r.stderr[-4000:]}")
    assert "Traceback" not in r.stderr, r.stderr


def _block(doc: Path, lang: str, containing: str) -> str:
    blocks = [b for b in re.findall(rf"^```{lang}\n(.*?)^```$", doc.read_text(),
                                    flags=re.S | re.M) if containing in b]
    assert len(blocks) == 1, f"{doc}: {len(blocks)} ```{lang} blocks with {containing!r}"
    return blocks[0]


def test_readme_broker_toml_sample_starts_a_broker(tmp_path):
    """README runs `headrace broker --config broker.toml`: its sample is TOML
    a broker accepts (flags still win)."""
    from broker_process import BrokerProcess
    from cli_run import headrace, ok

    readme = REPO / "README.md"
    assert "--config broker.toml" in readme.read_text()
    toml = tmp_path / "broker.toml"
    toml.write_text(_block(readme, "toml", "listeners"))
    shown = ok(headrace("config", "show", "--changed", "--config", str(toml))).stdout
    assert f"log.retention.ms=604800000\t(file {toml})" in shown.splitlines()
    assert f"num.partitions=3\t(file {toml})" in shown.splitlines()
    b = BrokerProcess(tmp_path / "data", "--config", str(toml)).start()
    try:
        d = ok(headrace("config", "get", "--broker", "0", "num.partitions", "log.segment.bytes",
                        brokers=b.bootstrap)).stdout
        assert d == ("num.partitions=3\t(STATIC_BROKER_CONFIG, read-only)\n"
                     "log.segment.bytes=268435456\t(STATIC_BROKER_CONFIG)\n"), d
    finally:
        b.stop()


def _jwks() -> str:
    """A JWKS file with one EC P-256 signing key (the sample's OAUTHBEARER)."""
    import base64
    import json

    from cryptography.hazmat.primitives.asymmetric import ec

    pub = ec.generate_private_key(ec.SECP256R1()).public_key().public_numbers()

    def b64(n: int) -> str:
        return base64.urlsafe_b64encode(n.to_bytes(32, "big")).rstrip(b"=").decode()

    return json.dumps({"keys": [{"kty": "EC", "crv": "P-256", "kid": "k1", "use": "sig",
                                 "alg": "ES256", "x": b64(pub.x), "y": b64(pub.y)}]})


def test_security_md_sasl_sample_is_a_server_properties(tmp_path):
    """docs/security.md's SASL_PLAINTEXT broker: the properties saved as
    server.properties start a broker, and `headrace user create` works with
    the client settings the next lines export (without them: one line naming
    the SASL listener, at once)."""
    from broker_process import BrokerProcess
    from cli_run import headrace, ok, one_error_line
    from test_security_tls import free_port

    doc = REPO / "docs" / "security.md"
    text = doc.read_text()
    assert "headrace broker --config server.properties" in text
    assert "--config broker.toml" not in text
    props = _block(doc, "properties", "listeners=SASL_PLAINTEXT://0.0.0.0:9092")
    jwks = tmp_path / "jwks.json"
    jwks.write_text(_jwks())
    port = free_port()
    props = props.replace("file:/etc/headrace/jwks.json", f"file:{jwks}")
    props = props.replace("SASL_PLAINTEXT://0.0.0.0:9092", f"SASL_PLAINTEXT://127.0.0.1:{port}")
    (tmp_path / "server.properties").write_text(props)
    b = BrokerProcess(tmp_path / "data", "--config", str(tmp_path / "server.properties"),
                      listen=f"SASL_PLAINTEXT://127.0.0.1:{port}").start()
    try:
        exports = re.search(r"export (HEADRACE_SECURITY_PROTOCOL=.*?)#", text, flags=re.S)
        env = dict(kv.split("=", 1) for kv in exports.group(1).replace("\\\n", " ").split())
        ok(headrace("user", "create", "sam", "--password", "sam-secret", brokers=b.bootstrap,
                    env=env))
        assert "sam\tSCRAM-SHA-512" in ok(headrace("user", "list", brokers=b.bootstrap,
                                                   env=env)).stdout
        one_error_line(headrace("user", "list", brokers=b.bootstrap), "a SASL listener?")
    finally:
        b.stop()
