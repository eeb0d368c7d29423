"""The web console's login, HTTPS and authorisation (docs/console.md
"Security"), in a real headless Chromium and over HTTPS from Python.

One broker for the module: a SASL_PLAINTEXT listener with PLAIN users
`admin` (a super user) and `alice` (JAAS) and a SCRAM user `sam` (the SCRAM
credential store), an SSL listener whose key store the console serves HTTPS
with, and the ACL authorizer on. `alice` may READ topic `alpha` only; topic
`bravo` has records and a consumer group. Screenshots go to
console-screenshots/ as in tests/test_console.py.

The last test starts a broker without SASL bound to 0.0.0.0 and reads its
loud warning (no login on a network address).
"""
from __future__ import annotations

import http.client
import json
import re
import socket
import ssl

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import (AclBinding, AclOperation, AclPermissionType, AdminClient,
                                   NewTopic, ResourcePatternType, ResourceType)

from broker_process import BrokerProcess, _finish, http_address
from test_console import CHROMEDRIVER, CHROMIUM, SCREENSHOTS, _wait_for
from test_security_tls import make_ca, make_cert

ADMIN = ("admin", "admin-secret")
ALICE = ("alice", "alice-secret")
SAM = ("sam", "sam-secret")  # SCRAM only
JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required '
        f'user_{ADMIN[0]}="{ADMIN[1]}" user_{ALICE[0]}="{ALICE[1]}";')
SECRET_TOPIC = "bravo"
SECRET_GROUP = "bravo-readers"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    d = tmp_path_factory.mktemp("console-certs")
    make_ca(d, "ca")
    make_cert(d, "ca", "broker", "/CN=localhost", "IP:127.0.0.1,DNS:localhost")
    (d / "broker-store.pem").write_text((d / "broker.key").read_text() +
                                        (d / "broker.pem").read_text())
    return d


@pytest.fixture(scope="module")
def sb(tmp_path_factory, certs):
    """The secured broker; `sb.http` is its console's "host:port"."""
    sasl, tls = _free_port(), _free_port()
    b = BrokerProcess(
        tmp_path_factory.mktemp("console-secure"),
        "--http", "127.0.0.1:0",
        "--set", "listener.security.protocol.map=SASL_PLAINTEXT:SASL_PLAINTEXT,SSL:SSL",
        "--set", f"listener.name.sasl_plaintext.plain.sasl.jaas.config={JAAS}",
        "--set", "ssl.keystore.type=PEM",
        "--set", f"ssl.keystore.location={certs / 'broker-store.pem'}",
        "--set", "authorizer.class.name=headrace.security.AclAuthorizer",
        "--set", "super.users=User:admin",
        "--set", "offsets.topic.replication.factor=1",
        listen=f"SASL_PLAINTEXT://127.0.0.1:{sasl},SSL://127.0.0.1:{tls}")
    b.start()
    try:
        b.sasl_bootstrap = f"127.0.0.1:{sasl}"
        b.http = _http_of(b)
        yield b
    finally:
        _finish([b])


def _http_of(b: BrokerProcess) -> str:
    host, port = http_address(b)
    return f"{host}:{port}"


def _conf(b, user=ADMIN) -> dict:
    return {"bootstrap.servers": b.sasl_bootstrap, "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "PLAIN", "sasl.username": user[0], "sasl.password": user[1]}


@pytest.fixture(scope="module")
def cluster_data(sb):
    """Topics alpha (alice may READ) and bravo (she may not), each with
    records; a SCRAM user; a group on bravo."""
    from confluent_kafka.admin import (ScramCredentialInfo, ScramMechanism,
                                       UserScramCredentialUpsertion)

    admin = AdminClient(_conf(sb))
    for t in ("alpha", SECRET_TOPIC):
        admin.create_topics([NewTopic(t, 1, 1)])[t].result(30)
    acl = AclBinding(ResourceType.TOPIC, "alpha", ResourcePatternType.LITERAL,
                     f"User:{ALICE[0]}", "*", AclOperation.READ, AclPermissionType.ALLOW)
    for f in admin.create_acls([acl]).values():
        f.result(30)
    ups = [UserScramCredentialUpsertion(SAM[0], ScramCredentialInfo(
        ScramMechanism.SCRAM_SHA_512, 4096), SAM[1].encode())]
    for f in admin.alter_user_scram_credentials(ups).values():
        f.result(30)
    p = Producer({**_conf(sb), "linger.ms": 5})
    p.produce("alpha", b"alpha-record-0", b"k-alpha")
    p.produce(SECRET_TOPIC, b"bravo-record-0", b"k-bravo")
    assert p.flush(30) == 0
    c = Consumer({**_conf(sb), "group.id": SECRET_GROUP})
    try:
        c.commit(offsets=[TopicPartition(SECRET_TOPIC, 0, 1)], asynchronous=False)
    finally:
        c.close()
    return admin


@pytest.fixture(scope="module")
def browser():
    """Headless Chromium that accepts the test CA's certificate (its trust
    is checked from Python in test_https_with_the_brokers_certificate)."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage",
                "--disable-gpu", "--window-size=1400,1000"):
        opts.add_argument(arg)
    opts.set_capability("acceptInsecureCerts", True)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=opts)
    driver.set_page_load_timeout(30)
    yield driver
    driver.quit()


def _shot(driver, name: str) -> None:
    SCREENSHOTS.mkdir(exist_ok=True)
    driver.save_screenshot(str(SCREENSHOTS / f"{name}.png"))


def _login(driver, base: str, user: str, password: str, next_path: str = "/") -> None:
    from selenium.webdriver.common.by import By

    driver.delete_all_cookies()
    driver.get(f"{base}/login?next={next_path}")
    driver.find_element(By.NAME, "user").send_keys(user)
    driver.find_element(By.NAME, "password").send_keys(password)
    driver.find_element(By.CSS_SELECTOR, "form.login button").click()


def _https(sb, certs, method: str, path: str, body: str | None = None,
           cookie: str | None = None) -> tuple[int, dict, bytes]:
    host, port = sb.http.rsplit(":", 1)
    ctx = ssl.create_default_context(cafile=str(certs / "ca.pem"))
    conn = http.client.HTTPSConnection(host, int(port), context=ctx, timeout=30)
    headers = {"Content-Type": "application/x-www-form-urlencoded"} if body else {}
    if cookie:
        headers["Cookie"] = cookie
    try:
        conn.request(method, path, body=body, headers=headers)
        r = conn.getresponse()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
    finally:
        conn.close()


def _session_cookie(sb, certs, user) -> str:
    from urllib.parse import urlencode

    code, headers, _ = _https(sb, certs, "POST", "/login",
                              urlencode({"user": user[0], "password": user[1], "next": "/"}))
    assert code == 303, code
    cookie = headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie and "Secure" in cookie
    return cookie.split(";", 1)[0]


# -- tests ---------------------------------------------------------------------
def test_https_with_the_brokers_certificate(sb, certs):
    """The console answers TLS only, with the certificate of the broker's
    key store, which verifies against the broker's CA for 127.0.0.1."""
    host, port = sb.http.rsplit(":", 1)
    ctx = ssl.create_default_context(cafile=str(certs / "ca.pem"))
    with socket.create_connection((host, int(port)), timeout=10) as raw:
        with ctx.wrap_socket(raw, server_hostname=host) as tls:
            served = tls.getpeercert(binary_form=True)
    expected = ssl.PEM_cert_to_DER_cert((certs / "broker.pem").read_text())
    assert served == expected
    # Plain HTTP to it gets no page.
    conn = http.client.HTTPConnection(host, int(port), timeout=5)
    with pytest.raises((http.client.HTTPException, OSError)):
        conn.request("GET", "/login")
        conn.getresponse().read()
    conn.close()
    # /metrics and /healthz stay served (over HTTPS).
    assert _https(sb, certs, "GET", "/healthz")[2] == b"ok\n"


def test_no_session_gets_the_login_page(sb, certs, browser, cluster_data):
    base = f"https://{sb.http}"
    browser.delete_all_cookies()
    browser.get(f"{base}/topics/alpha")
    _wait_for("the login page", lambda: browser.title == "Log in · headrace")
    assert "/login?next=%2Ftopics%2Falpha" in browser.current_url
    _shot(browser, "login")
    # Every console route, page or JSON, asks for a login first.
    for path in ("/", "/topics", "/groups", f"/groups/{SECRET_GROUP}", "/topics/bravo/0"):
        code, headers, _ = _https(sb, certs, "GET", path)
        assert code == 303 and headers["location"].startswith("/login?next="), path
    for path in ("/api/cluster", "/api/topics", "/api/topics/bravo", "/api/topics/bravo/0",
                 "/api/groups", "/api/metrics"):
        code, _, body = _https(sb, certs, "GET", path)
        assert code == 401 and "log" in json.loads(body)["error"], path
    assert _https(sb, certs, "GET", "/static/console.css")[0] == 200


def test_wrong_password_is_refused(sb, certs, browser, cluster_data):
    from urllib.parse import urlencode

    from selenium.webdriver.common.by import By

    base = f"https://{sb.http}"
    _login(browser, base, ALICE[0], "not-her-password")
    _wait_for("the refusal", lambda: browser.find_elements(By.ID, "login-error"))
    assert "wrong user name or password" in browser.find_element(By.ID, "login-error").text
    assert browser.get_cookie("headrace_session") is None
    _shot(browser, "login-refused")
    browser.get(f"{base}/topics")
    assert browser.title == "Log in · headrace"
    for user, password in ((ALICE[0], ""), ("mallory", "x"), (SAM[0], ALICE[1])):
        code, headers, body = _https(sb, certs, "POST", "/login",
                                     urlencode({"user": user, "password": password}))
        assert code == 401 and "set-cookie" not in headers, (user, code)
    # The SCRAM user is checked against the SCRAM credential store: accepted.
    code, headers, _ = _https(sb, certs, "POST", "/login",
                              urlencode({"user": SAM[0], "password": SAM[1]}))
    assert code == 303 and "headrace_session=" in headers["set-cookie"]


def test_user_with_read_on_one_topic_sees_it_and_not_the_other(sb, certs, browser,
                                                              cluster_data):
    """alice (READ on alpha) sees alpha's name and records; bravo's name,
    records and group appear in no view; asking for bravo answers as for a
    topic that does not exist. admin (a super user) sees both."""
    from selenium.webdriver.common.by import By

    base = f"https://{sb.http}"
    _login(browser, base, *ALICE, next_path="/topics")
    _wait_for("the topics page", lambda: browser.title == "Topics · headrace")
    assert browser.find_element(By.ID, "viewer").text == ALICE[0]
    assert [e.text for e in browser.find_elements(By.CSS_SELECTOR, "#topics tbody td a")] == \
        ["alpha"]
    seen = {}
    for path, shot in (("/", "acl-overview"), ("/topics", "acl-topics"),
                       ("/topics/alpha", "acl-topic"), ("/topics/alpha/0", "acl-messages"),
                       ("/groups", "acl-groups")):
        browser.get(base + path)
        seen[path] = browser.page_source
        _shot(browser, shot)
        assert SECRET_TOPIC not in browser.page_source, path
        assert SECRET_GROUP not in browser.page_source, path
    assert "alpha-record-0" in seen["/topics/alpha/0"]
    assert "k-alpha" in seen["/topics/alpha/0"]
    # bravo and a topic that does not exist get the same answer.
    for path in (f"/topics/{SECRET_TOPIC}", f"/topics/{SECRET_TOPIC}/0"):
        browser.get(base + path)
        assert "bravo-record" not in browser.page_source
        assert browser.find_element(By.ID, "error").text == f"no topic '{SECRET_TOPIC}'"
    _shot(browser, "acl-refused")
    cookie = _session_cookie(sb, certs, ALICE)
    for path in ("/api/cluster", "/api/topics", "/api/groups", "/api/topics/alpha",
                 "/api/topics/alpha/0"):
        code, _, body = _https(sb, certs, "GET", path, cookie=cookie)
        assert code == 200 and SECRET_TOPIC.encode() not in body and \
            SECRET_GROUP.encode() not in body, (path, body[:300])
    code, _, body = _https(sb, certs, "GET", f"/api/topics/{SECRET_TOPIC}/0", cookie=cookie)
    missing = _https(sb, certs, "GET", "/api/topics/zulu/0", cookie=cookie)
    assert (code, missing[0]) == (404, 404) and b"bravo-record" not in body
    assert json.loads(body)["error"] == json.loads(missing[2])["error"].replace("zulu", "bravo")
    # The super user sees both, and the group.
    cookie = _session_cookie(sb, certs, ADMIN)
    names = {t["name"] for t in json.loads(_https(sb, certs, "GET", "/api/topics",
                                                  cookie=cookie)[2])["topics"]}
    assert names >= {"alpha", SECRET_TOPIC}
    page = json.loads(_https(sb, certs, "GET", f"/api/topics/{SECRET_TOPIC}/0",
                             cookie=cookie)[2])
    assert page["records"][0]["value"] == "bravo-record-0"
    groups = json.loads(_https(sb, certs, "GET", "/api/groups", cookie=cookie)[2])["groups"]
    assert SECRET_GROUP in {g["group_id"] for g in groups}


def test_logout_ends_the_session(sb, certs, browser, cluster_data):
    from selenium.webdriver.common.by import By

    base = f"https://{sb.http}"
    _login(browser, base, *ADMIN)
    _wait_for("the overview", lambda: browser.title == "Overview · headrace")
    _shot(browser, "logged-in-overview")
    token = browser.get_cookie("headrace_session")["value"]
    browser.find_element(By.CSS_SELECTOR, "form.logout button").click()
    _wait_for("the login page", lambda: browser.title == "Log in · headrace")
    code, _, _ = _https(sb, certs, "GET", "/api/topics", cookie=f"headrace_session={token}")
    assert code == 401


def test_no_login_on_a_network_address_is_warned_loudly(tmp_path):
    """A broker without SASL whose console listens on 0.0.0.0 says so at
    start; its console needs no login (as before)."""
    b = BrokerProcess(tmp_path / "open", "--http", "0.0.0.0:0")
    b.start()
    try:
        http_addr = _http_of(b)
        text = _wait_for("the warning", lambda: re.search(
            r"WEB CONSOLE WITHOUT LOGIN ON A NETWORK ADDRESS.*", b.stderr), timeout=10)
        assert "0.0.0.0" in text.group(0)
        port = int(http_addr.rsplit(":", 1)[1])
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        conn.request("GET", "/api/topics")
        assert conn.getresponse().status == 200
        conn.close()
    finally:
        _finish([b])


def test_after_login_only_paths_of_this_console_are_followed():
    from headrace.console.routes import _safe_next

    assert _safe_next("/topics/a?from=1") == "/topics/a?from=1"
    for hostile in ("//evil.example", "/\\evil.example", "https://evil.example",
                    "/\t/evil.example", "/x\r\nSet-Cookie: a=b", "/login?next=/", ""):
        assert _safe_next(hostile) == "/", hostile


def test_https_from_an_inline_pem_key_store(certs):
    """The inline key + chain a PKCS12 store is turned into
    (headrace.keystores) serve HTTPS as well as a PEM file does."""
    from headrace.console.auth import https_context
    from headrace.http_server import HttpServer, Response

    ctx = https_context({"listeners": "SSL://127.0.0.1:0",
                         "ssl.keystore.type": "PEM",
                         "ssl.keystore.key": (certs / "broker.key").read_text(),
                         "ssl.keystore.certificate.chain": (certs / "broker.pem").read_text()})
    assert ctx is not None
    assert https_context({"listeners": "PLAINTEXT://127.0.0.1:0"}) is None
    server = HttpServer("127.0.0.1:0", ssl_context=ctx)
    server.add_route("/x", lambda req: Response(200, "tls\n"))
    server.start()
    try:
        host, port = server.address.rsplit(":", 1)
        conn = http.client.HTTPSConnection(
            host, int(port), timeout=10,
            context=ssl.create_default_context(cafile=str(certs / "ca.pem")))
        conn.request("GET", "/x")
        assert conn.getresponse().read() == b"tls\n"
        conn.close()
    finally:
        server.stop()


def test_login_over_a_sasl_ssl_listener(tmp_path, certs):
    """With only a SASL_SSL listener the console checks logins on it (TLS
    trusting the broker's trust store) and reads over it."""
    from urllib.parse import urlencode

    b = BrokerProcess(
        tmp_path / "sasl-ssl", "--http", "127.0.0.1:0",
        "--set", f"listener.name.sasl_ssl.plain.sasl.jaas.config={JAAS}",
        "--set", "ssl.keystore.type=PEM",
        "--set", f"ssl.keystore.location={certs / 'broker-store.pem'}",
        "--set", "ssl.truststore.type=PEM",
        "--set", f"ssl.truststore.location={certs / 'ca.pem'}",
        listen=f"SASL_SSL://127.0.0.1:{_free_port()}")
    b.start()
    try:
        b.http = _http_of(b)
        code, headers, _ = _https(b, certs, "POST", "/login",
                                  urlencode({"user": ALICE[0], "password": "wrong"}))
        assert code == 401
        code, headers, _ = _https(b, certs, "POST", "/login",
                                  urlencode({"user": ALICE[0], "password": ALICE[1]}))
        assert code == 303, code
        cookie = headers["set-cookie"].split(";", 1)[0]
        code, _, body = _https(b, certs, "GET", "/api/cluster", cookie=cookie)
        assert code == 200 and json.loads(body)["healthy"], body[:300]
    finally:
        _finish([b])
