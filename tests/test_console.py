"""The web console (docs/console.md) in a real headless browser, and its
JSON endpoints over plain HTTP.

One broker for the module (with its HTTP listener on a free port) and one
headless Chromium driven by selenium through Debian's chromedriver. The
browser tests assert what a person sees: the text of the table cells, the
data the charts plot. Screenshots go to console-screenshots/ at the
repository root (ignored by git), one per browser test.

The last test runs a three-broker EmbeddedCluster: the console of any broker
shows the whole cluster.
"""
from __future__ import annotations

import http.client
import json
import time
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from broker_process import GROUP_ARGS, HTTP_LINE_RE, BrokerProcess, _finish, http_address

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
SCREENSHOTS = Path(__file__).resolve().parent.parent / "console-screenshots"


# -- fixtures ------------------------------------------------------------------
@pytest.fixture(scope="module")
def cb(tmp_path_factory):
    """The module's broker; `cb.http` is its HTTP listener's "host:port"."""
    b = BrokerProcess(tmp_path_factory.mktemp("console-broker"), "--http", "127.0.0.1:0",
                      *GROUP_ARGS)
    b.start()
    host, port = http_address(b)
    b.http = f"{host}:{port}"
    yield b
    _finish([b])


@pytest.fixture(scope="module")
def browser():
    """One headless Chromium for the module (Debian's chromium and
    chromium-driver; scripts/setup.sh installs them)."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage",
                "--disable-gpu", "--window-size=1400,1000"):
        opts.add_argument(arg)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=opts)
    driver.set_page_load_timeout(30)
    yield driver
    driver.quit()


@pytest.fixture(scope="module")
def admin(cb):
    return AdminClient({"bootstrap.servers": cb.bootstrap})


# -- helpers -------------------------------------------------------------------
def _wait_for(what: str, fn, timeout: float = 20.0, every: float = 0.1):
    deadline = time.monotonic() + timeout
    while True:
        value = fn()
        if value or time.monotonic() > deadline:
            assert value, f"timed out waiting for {what}"
            return value
        time.sleep(every)


def _get(address: str, path: str) -> tuple[int, dict, bytes]:
    host, port = address.rsplit(":", 1)
    conn = http.client.HTTPConnection(host, int(port), timeout=30)
    try:
        conn.request("GET", path)
        r = conn.getresponse()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
    finally:
        conn.close()


def _api(address: str, path: str, status: int = 200) -> dict:
    code, headers, body = _get(address, path)
    assert code == status, f"GET {path}: {code} {body[:300]!r}"
    assert headers["content-type"] == "application/json"
    return json.loads(body)


def _create(admin, topic: str, partitions: int) -> None:
    admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(30)


def _produce(bootstrap: str, topic: str, records) -> None:
    """records: (partition, key, value, headers) tuples; all acknowledged."""
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    failed = []
    for part, key, value, headers in records:
        p.produce(topic, value, key, partition=part, headers=headers,
                  on_delivery=lambda err, msg: failed.append(err) if err else None)
    assert p.flush(30) == 0 and not failed, failed


def _shot(driver, name: str) -> None:
    SCREENSHOTS.mkdir(exist_ok=True)
    driver.save_screenshot(str(SCREENSHOTS / f"{name}.png"))


def _cells(driver, css: str) -> list[str]:
    from selenium.webdriver.common.by import By

    return [e.text for e in driver.find_elements(By.CSS_SELECTOR, css)]


# -- browser -------------------------------------------------------------------
def test_topics_page_shows_a_new_topic_with_its_partition_count(cb, admin, browser):
    _create(admin, "orders", 3)
    _produce(cb.bootstrap, "orders", [(p, None, b"x" * 10, None) for p in (0, 1, 2, 2)])
    browser.get(f"http://{cb.http}/topics")
    assert browser.title == "Topics · headrace"
    assert _cells(browser, 'tr[data-topic="orders"] td.partitions') == ["3"]
    assert _cells(browser, 'tr[data-topic="orders"] td.records') == ["4"]
    _shot(browser, "topics")
    browser.get(f"http://{cb.http}/topics/orders")
    rows = _cells(browser, "#partitions tbody tr")
    assert len(rows) == 3
    # partition 2: leader 0, replicas 0, ISR 0, start 0, end 2, 2 records
    assert rows[2].split()[:7] == ["2", "0", "0", "0", "0", "2", "2"]
    assert "retention.ms" in _cells(browser, "#configs td:first-child")
    _shot(browser, "topic")


def test_group_lag_shown_equals_the_brokers(cb, admin, browser):
    """A live member of group "billing" owns both partitions and has
    committed offsets 3 and 5 of 10 and 7 records: the page shows the member,
    its assignment, and per partition exactly the high watermark minus the
    committed offset that a consumer reads from the broker."""
    topic, group = "invoices", "billing"
    _create(admin, topic, 2)
    _produce(cb.bootstrap, topic, [(p, None, b"r", None) for p in [0] * 10 + [1] * 7])
    c = Consumer({"bootstrap.servers": cb.bootstrap, "group.id": group,
                  "enable.auto.commit": False, "session.timeout.ms": 6000,
                  "client.id": "billing-worker"})
    try:
        c.subscribe([topic])
        _wait_for("both partitions assigned",
                  lambda: c.poll(0.1) is None and len(c.assignment()) == 2, every=0)
        c.commit(offsets=[TopicPartition(topic, 0, 3), TopicPartition(topic, 1, 5)],
                 asynchronous=False)
        tps = [TopicPartition(topic, 0), TopicPartition(topic, 1)]
        broker_lag = {}
        for tp in c.committed(tps, timeout=10):
            _, high = c.get_watermark_offsets(tp, timeout=10)
            broker_lag[tp.partition] = high - tp.offset
        assert broker_lag == {0: 7, 1: 2}
        browser.get(f"http://{cb.http}/groups/{group}")
        assert _cells(browser, "#group-id") == [group]
        shown = {int(p): int(lag) for p, lag in zip(
            _cells(browser, f'#offsets tr[data-topic="{topic}"] td:nth-child(2)'),
            _cells(browser, f'#offsets tr[data-topic="{topic}"] td.lag'))}
        assert shown == broker_lag
        members = _cells(browser, "#members tbody tr")
        assert len(members) == 1 and "billing-worker" in members[0]
        assert f"{topic}[0]" in members[0] and f"{topic}[1]" in members[0]
        _shot(browser, "group")
        browser.get(f"http://{cb.http}/groups")
        row = [r for r in _cells(browser, "#groups tbody tr") if r.startswith(group + " ")]
        assert row and row[0].split()[-2:] == ["1", str(sum(broker_lag.values()))]
    finally:
        c.close()


def test_share_group_pages_show_members_and_assignments(cb, admin, browser):
    """A ShareConsumer of share group "workers" owns both partitions of
    "jobs": its page shows the member, its subscription and assignment as
    ShareGroupDescribe says; the share-group list counts them; the
    consumer-group pages (ListGroups of types consumer and classic, as
    kafka-consumer-groups) do not list it."""
    from confluent_kafka import ShareConsumer

    topic, group = "jobs", "workers"
    _create(admin, topic, 2)
    c = ShareConsumer({"bootstrap.servers": cb.bootstrap, "group.id": group,
                       "client.id": "share-worker"})
    try:
        c.subscribe([topic])

        def assigned():
            c.poll(0.2)
            code, _, body = _get(cb.http, f"/api/share-groups/{group}")
            if code != 200:
                return None
            doc = json.loads(body)
            members = doc["members"]
            return doc if members and members[0]["assignment"].get(topic) == [0, 1] else None

        doc = _wait_for("the share member assigned both partitions", assigned, timeout=40,
                        every=0)
        assert doc["state"] == "Stable" and len(doc["members"]) == 1
        assert doc["members"][0]["client_id"] == "share-worker"
        browser.get(f"http://{cb.http}/share-groups/{group}")
        assert _cells(browser, "#group-id") == [group]
        members = _cells(browser, "#members tbody tr")
        assert len(members) == 1 and "share-worker" in members[0], members
        assert _cells(browser, "#members td.assignment") == [f"{topic}[0], {topic}[1]"]
        # DescribeShareGroupOffsets: both share-partitions exist (the
        # member fetched them), start at the empty log's end, no lag.
        assert sorted(r["partition"] for r in doc["partitions"]) == [0, 1], doc["partitions"]
        assert _cells(browser, "#share-partitions tbody tr") == \
            [f"{topic} 0 0 0 0 -", f"{topic} 1 0 0 0 -"]
        _shot(browser, "share-group")
        browser.get(f"http://{cb.http}/share-groups")
        row = [r for r in _cells(browser, "#share-groups tbody tr") if r.startswith(group + " ")]
        assert row and row[0].split()[1:] == ["Stable", "1", "2"], row
        assert group not in {g["group_id"] for g in _api(cb.http, "/api/groups")["groups"]}
        browser.get(f"http://{cb.http}/groups")
        assert not [r for r in _cells(browser, "#groups tbody tr") if r.startswith(group + " ")]
    finally:
        c.close()
    code, _, _ = _get(cb.http, "/api/share-groups/no-such-share-group")
    assert code == 404


def test_throughput_chart_plots_what_was_produced(cb, admin, browser):
    """The overview's throughput chart polls once a second; after 200
    records of 1000 bytes the bytes-in line gains points whose rate x
    interval adds up to the produced bytes (plus batch framing)."""
    topic = "chart-feed"
    _create(admin, topic, 1)
    browser.get(f"http://{cb.http}/")

    def plotted():
        return browser.execute_script("""
            const s = window.headraceConsole, g = s && s.charts.throughput;
            if (!g) return null;
            const rows = [];
            for (let r = 0; r < g.numRows(); r++) rows.push([g.getValue(r, 0), g.getValue(r, 1)]);
            return rows;""")

    before = _wait_for("the throughput chart", plotted, timeout=15, every=0.2)
    payload = 200 * 1000
    _produce(cb.bootstrap, topic, [(0, None, b"v" * 1000, None)] * 200)
    last_t = before[-1][0]

    def grown():
        rows = plotted()
        new = [(t, rate) for t, rate in rows if t > last_t]
        # Points until the rate falls back to 0 after it rose: all the bytes are in.
        if any(rate for _, rate in new) and new[-1][1] == 0:
            return rows
        return None

    after = _wait_for("the produced bytes on the chart", grown, timeout=20, every=0.25)
    assert after != before
    times = [t for t, _ in after]
    plotted_bytes = sum(rate * (t - t0) / 1000.0 for (t0, _), (t, rate) in zip(after, after[1:])
                        if t > last_t)
    assert payload <= plotted_bytes <= payload * 1.1 + 4096, (plotted_bytes, after)
    assert times == sorted(times)
    # The latency chart plots the produce requests of those intervals.
    produce_p99 = browser.execute_script("""
        const g = window.headraceConsole.charts.latency, out = [];
        for (let r = 0; g && r < g.numRows(); r++) out.push([g.getValue(r, 0), g.getValue(r, 2)]);
        return out;""")
    assert any(t > last_t and v is not None and 0 < v < 10_000 for t, v in produce_p99)
    # Its title says what it plots: handler (processing) time or total time.
    from selenium.webdriver.common.by import By

    kind = browser.execute_script("return window.headraceConsole.last.latency")
    title = browser.find_element(By.ID, "latency-caption").text
    assert kind in ("handler", "total")
    assert ("processing time" in title) == (kind == "handler"), (kind, title)
    assert ("including long-poll" in title) == (kind == "total"), (kind, title)
    _shot(browser, "overview")


def test_message_browser_shows_key_value_and_header_as_text_and_hex(cb, admin, browser):
    topic = "browsed"
    _create(admin, topic, 2)
    _produce(cb.bootstrap, topic, [(1, b"before", b"skipped", None),
                                   (1, "kéy-1".encode(), b"value one", [("trace", b"abc-123")]),
                                   (1, None, None, [("empty", None)])])
    browser.get(f"http://{cb.http}/topics/{topic}/1?from=1")
    assert _cells(browser, "#messages tbody td:first-child") == ["1", "2"]
    assert _cells(browser, "#messages td.key")[0] == "kéy-1"
    assert _cells(browser, "#messages td.value") == ["value one", "null"]
    assert _cells(browser, "#messages td.headers") == ["trace=abc-123", "empty=null"]
    _shot(browser, "messages-text")
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    Select(browser.find_element(By.NAME, "encoding")).select_by_value("hex")
    browser.find_element(By.CSS_SELECTOR, "form.browse button").click()
    _wait_for("the hex page", lambda: "encoding=hex" in browser.current_url)
    assert _cells(browser, "#messages td.key")[0] == "kéy-1".encode().hex()
    assert _cells(browser, "#messages td.value")[0] == b"value one".hex()
    assert _cells(browser, "#messages td.headers")[0] == "trace=" + b"abc-123".hex()
    _shot(browser, "messages-hex")


def test_html_in_group_ids_keys_values_and_headers_is_shown_as_text(cb, admin, browser):
    """Client-written strings reach the page as text: no element, script or
    attribute of theirs exists in the DOM. (Topic names cannot hold markup:
    the broker accepts only Kafka's [a-zA-Z0-9._-].)"""
    topic = "markup"
    group = '<b id="pwn-group">g</b>&amp;"\'/x'
    key = '<img id="pwn-key" src=x onerror="window.pwned=1">'
    value = '<script>window.pwned=2</script>&lt;'
    header = ('<i id="pwn-h">h</i>', b'"><svg onload="window.pwned=3">')
    _create(admin, topic, 1)
    _produce(cb.bootstrap, topic, [(0, key.encode(), value.encode(), [header])])
    c = Consumer({"bootstrap.servers": cb.bootstrap, "group.id": group})
    try:
        c.commit(offsets=[TopicPartition(topic, 0, 0)], asynchronous=False)
    finally:
        c.close()
    from urllib.parse import quote

    from selenium.webdriver.common.by import By

    browser.get(f"http://{cb.http}/groups")
    link = browser.find_element(By.LINK_TEXT, group)
    link.click()
    _wait_for("the group page", lambda: _cells(browser, "#group-id") == [group])
    assert quote(group, safe="") in browser.current_url
    assert _cells(browser, "td.lag") == ["1"]
    browser.get(f"http://{cb.http}/topics/{topic}/0")
    assert _cells(browser, "#messages td.key") == [key]
    assert _cells(browser, "#messages td.value") == [value]
    assert _cells(browser, "#messages td.headers") == [f"{header[0]}={header[1].decode()}"]
    for planted in ("pwn-group", "pwn-key", "pwn-h"):
        assert browser.find_elements(By.ID, planted) == []
    assert browser.execute_script("return window.pwned === undefined")
    _shot(browser, "escaped")


# -- JSON over HTTP ------------------------------------------------------------
def test_json_endpoints_answer_what_the_cli_answers(cb, admin):
    topic = "json-api"
    _create(admin, topic, 2)
    _produce(cb.bootstrap, topic, [(0, b"k%d" % i, b"v%d" % i, None) for i in range(12)])
    cluster = _api(cb.http, "/api/cluster")
    assert [b["id"] for b in cluster["brokers"]] == [0] and cluster["controller"] == 0
    assert cluster["brokers"][0]["log_dirs"][0]["log_bytes"] > 0
    topics = {t["name"]: t for t in _api(cb.http, "/api/topics")["topics"]}
    assert topics[topic]["partitions"] == 2 and topics[topic]["records"] == 12
    doc = _api(cb.http, f"/api/topics/{topic}")
    assert [(p["partition"], p["start_offset"], p["end_offset"]) for p in doc["partitions"]] == \
        [(0, 0, 12), (1, 0, 0)]
    assert doc["configs"]["cleanup.policy"]["value"] == "delete"
    # The message browser: the last 3 records, then pages of 5 from offset 0.
    page = _api(cb.http, f"/api/topics/{topic}/0?from=-3")
    assert [r["offset"] for r in page["records"]] == [9, 10, 11]
    assert page["records"][0]["key"] == "k9" and page["next_offset"] == 12
    page = _api(cb.http, f"/api/topics/{topic}/0?from=0&count=5&encoding=hex")
    assert [r["value"] for r in page["records"]] == [(b"v%d" % i).hex() for i in range(5)]
    assert page["next_offset"] == 5 and page["truncated"] is False
    page = _api(cb.http, f"/api/topics/{topic}/0?from=40")
    assert page["from"] == 12 and page["records"] == [] and "outside" in page["note"]
    t_ms = _api(cb.http, f"/api/topics/{topic}/0?from=7&count=1")["records"][0]["timestamp"]
    assert t_ms > 0
    by_time = _api(cb.http, f"/api/topics/{topic}/0?from=@{t_ms}&count=1")
    assert by_time["records"][0]["timestamp"] >= t_ms
    # Refusals: bounds, bad positions, unknown things.
    for q in ("count=0", "count=501", "from=yesterday", "encoding=rot13", "time=noon"):
        assert "error" in _api(cb.http, f"/api/topics/{topic}/0?{q}", status=400)
    assert _api(cb.http, "/api/topics/nope", status=404)["error"] == "no topic 'nope'"
    assert "no partition 7" in _api(cb.http, f"/api/topics/{topic}/7", status=404)["error"]
    assert "unknown group" in _api(cb.http, "/api/groups/nobody", status=404)["error"]
    # Charts: series of equal length.
    series = _api(cb.http, "/api/metrics")
    assert series["node_id"] == 0
    assert {len(v) for k, v in series.items() if isinstance(v, list)} == {len(series["t"])}


def test_pages_carry_a_strict_content_security_policy_and_static_files_stay_inside(cb):
    code, headers, body = _get(cb.http, "/")
    assert code == 200 and headers["content-type"] == "text/html; charset=utf-8"
    assert "script-src 'self'" in headers["content-security-policy"]
    assert b"/static/vendor/dygraphs/dygraph.min.js" in body
    code, headers, body = _get(cb.http, "/static/vendor/dygraphs/dygraph.min.js")
    assert code == 200 and body.startswith(b"/*! @license") and len(body) > 100_000
    assert _get(cb.http, "/static/vendor/dygraphs/LICENSE.txt")[0] == 200
    for path in ("/static/../routes.py", "/static/%2e%2e/routes.py", "/static/",
                 "/static/templates/base.html", "/topics/a/b/c", "/groups/"):
        assert _get(cb.http, path)[0] == 404, path
    # /metrics and friends are untouched by the console's routes.
    assert _get(cb.http, "/healthz")[2] == b"ok\n"
    assert _get(cb.http, "/metrics")[0] == 200


# -- a cluster -------------------------------------------------------------------
def test_console_of_any_cluster_broker_shows_the_whole_cluster(tmp_path):
    """Three brokers: broker 2's console lists all three, and an RF=3 topic
    with its leaders and full ISRs, the same as broker 3's."""
    from headrace import EmbeddedCluster

    with EmbeddedCluster(3, data_dir=tmp_path) as c:
        http_of = {n: _cluster_http(c.node(n)) for n in (2, 3)}
        cluster_admin = AdminClient({"bootstrap.servers": c.bootstrap_servers})
        cluster_admin.create_topics([NewTopic("replicated", 3, 3)])["replicated"].result(30)
        leaders = c.wait_for_leaders("replicated")
        doc = _wait_for("broker 2's console", lambda: (lambda r: r if r[0] == 200 else None)(
            _get(http_of[2], "/api/cluster")))
        assert [b["id"] for b in json.loads(doc[2])["brokers"]] == [1, 2, 3]

        def topic_doc(n):
            code, _, body = _get(http_of[n], "/api/topics/replicated")
            d = json.loads(body) if code == 200 else None
            full = d and all(len(p["isr"]) == 3 for p in d["partitions"])
            return d if full else None

        d2 = _wait_for("full ISRs on broker 2's console", lambda: topic_doc(2), timeout=30)
        assert {p["partition"]: p["leader"] for p in d2["partitions"]} == leaders
        assert all(sorted(p["replicas"]) == [1, 2, 3] for p in d2["partitions"])
        d3 = topic_doc(3)
        assert [p["leader"] for p in d3["partitions"]] == [p["leader"] for p in d2["partitions"]]
        assert _get(http_of[3], "/")[0] == 200


def _cluster_http(node) -> str:
    def found():
        lines = node.log_path.read_text(errors="replace").splitlines()
        m = [x for x in map(HTTP_LINE_RE.search, lines) if x]
        return f"{m[-1]['host']}:{m[-1]['port']}" if m else None

    return _wait_for(f"the http line of broker {node.node_id}", found, timeout=60, every=0.2)


# -- chart arithmetic (no broker) ------------------------------------------------
def test_interval_quantiles_come_from_bucket_differences():
    from headrace.console.metrics_history import quantile

    inf = float("inf")
    before = [(0.001, 10.0), (0.002, 10.0), (0.004, 10.0), (inf, 10.0)]
    # 100 new observations: 50 in (1 ms, 2 ms], 50 in (2 ms, 4 ms].
    after = [(0.001, 10.0), (0.002, 60.0), (0.004, 110.0), (inf, 110.0)]
    assert quantile(0.5, before, after) == pytest.approx(0.002)
    assert quantile(0.99, before, after) == pytest.approx(0.002 + 0.002 * 49 / 50)
    assert quantile(0.5, after, after) is None          # nothing in between
    over = [(0.001, 10.0), (0.002, 10.0), (0.004, 10.0), (inf, 20.0)]
    assert quantile(0.99, before, over) == 0.004        # +Inf: the last finite bound


def test_history_samples_at_most_once_per_interval_and_breaks_at_gaps():
    from headrace.console.metrics_history import MetricsHistory

    now, texts = [1000.0], []

    def metrics_text():
        n = len(texts)
        texts.append(n)
        return (f'headrace_topic_bytes_in_total{{topic="a"}} {1000 * n}\n'
                f'headrace_topic_bytes_in_total{{topic="b"}} {24 * n}\n'
                f'headrace_requests_total{{api="Produce"}} {2 * n}\n'
                f'headrace_requests_total{{api="Metadata"}} {n}\n')

    h = MetricsHistory(metrics_text, keep=3, min_interval=1.0, max_gap=10.0,
                       clock=lambda: now[0])
    assert h.series()["t"] == []                         # one sample: no point yet
    now[0] += 0.5
    assert h.series()["t"] == [] and len(texts) == 1     # too soon: no new sample
    now[0] += 1.5
    s = h.series()
    assert s["t"] == [1002.0] and s["bytes_in_per_s"] == [512.0]
    assert s["produce_per_s"] == [1.0] and s["other_requests_per_s"] == [0.5]
    assert s["produce_p99_ms"] == [None]                 # no histogram lines: no quantile
    now[0] += 30                                         # nobody watched for 30 s
    s = h.series()
    assert s["t"] == [1002.0, 1032.0] and s["bytes_in_per_s"] == [512.0, None]
    now[0] += 1
    assert len(h.series()["t"]) == 2                     # keep=3 samples: 2 points


def test_latency_chart_plots_handler_time_when_the_broker_exports_it():
    """With headrace_request_handler_duration_seconds (Kafka's LocalTimeMs)
    the latency series are handler time and say so ("latency": "handler");
    a broker without it is charted by total time ("total")."""
    from headrace.console.metrics_history import MetricsHistory

    now, n = [1000.0], [0]

    def text(with_handler: bool):
        def metrics_text():
            n[0] += 1
            k = n[0]
            lines = [f'headrace_requests_total{{api="Fetch"}} {10 * k}']
            # total: every fetch waited ~500 ms; handler: each took ~1 ms
            lines += [f'headrace_request_duration_seconds_bucket{{api="Fetch",le="{le}"}} {c}'
                      for le, c in (("0.001", 0), ("0.512", 10 * k), ("+Inf", 10 * k))]
            if with_handler:
                lines += [f'headrace_request_handler_duration_seconds_bucket'
                          f'{{api="Fetch",le="{le}"}} {c}'
                          for le, c in (("0.001", 10 * k), ("0.512", 10 * k), ("+Inf", 10 * k))]
            return "\n".join(lines) + "\n"
        return metrics_text

    for with_handler, kind, top_ms in ((True, "handler", 1.0), (False, "total", 512.0)):
        h = MetricsHistory(text(with_handler), min_interval=1.0, clock=lambda: now[0])
        h.series()
        now[0] += 1
        s = h.series()
        assert s["latency"] == kind
        assert 0 < s["fetch_p50_ms"][0] <= top_ms and s["fetch_p99_ms"][0] <= top_ms, s

