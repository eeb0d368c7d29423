"""The broker's HTTP listener: /metrics (Prometheus text, parsed with
prometheus_client's own parser), /healthz and /readyz (docs/metrics.md).

One broker for the module. As root its data directory is a small
loop-mounted ext4 file system, so that /readyz can be shown to fail for a
real storage fault: the file system is filled up (ENOSPC) and freed again.
(A read-only remount, `mount -o remount,ro`, is refused with EBUSY while the
broker holds its segment files open for writing, as any Kafka broker does,
so it cannot be done under a running broker.)

The last test runs its own three-broker EmbeddedCluster (about 5 s) for the
cluster-mode metrics: under-replicated partitions and ISR shrinks/expands.
"""
from __future__ import annotations

import errno
import http.client
import os
import shutil
import socket
import subprocess
import sys
import time
import uuid

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from prometheus_client.parser import text_string_to_metric_families

from broker_process import GROUP_ARGS, HTTP_LINE_RE, BrokerProcess, _finish, http_address
from broker_wire import API_METADATA, Connection

# The broker's announcement (after its log line's timestamp and level).
def _http_address(b: BrokerProcess, timeout: float = 10.0) -> tuple[str, int]:
    return http_address(b, timeout)


def _run(*cmd: str) -> None:
    subprocess.run(cmd, check=True, capture_output=True, timeout=60)


@pytest.fixture(scope="module")
def data_mount(tmp_path_factory, request):
    """A directory for the broker's data: a 64 MiB loop-mounted ext4 file
    system as root (unmounted by a finalizer), a plain directory otherwise."""
    base = tmp_path_factory.mktemp("metrics-broker")
    if os.geteuid() != 0 or shutil.which("mkfs.ext4") is None:
        return base, False
    image, mnt = base / "fs.img", base / "mnt"
    mnt.mkdir()
    with open(image, "wb") as f:
        f.truncate(64 << 20)
    _run("mkfs.ext4", "-q", "-F", "-m", "0", str(image))
    _run("mount", "-o", "loop", str(image), str(mnt))
    request.addfinalizer(lambda: subprocess.run(["umount", "-l", str(mnt)], capture_output=True))
    return mnt / "data", True


@pytest.fixture(scope="module")
def hb(data_mount):
    """The module's broker with its HTTP listener on a free port."""
    data_dir, _ = data_mount
    b = BrokerProcess(data_dir, "--http", "127.0.0.1:0", *GROUP_ARGS)
    b.start()
    b.http = _http_address(b)
    yield b
    _finish([b])


def _get(b, path: str, method: str = "GET") -> tuple[int, str, dict]:
    conn = http.client.HTTPConnection(*b.http, timeout=10)
    try:
        conn.request(method, path)
        r = conn.getresponse()
        return r.status, r.read().decode(), dict(r.getheaders())
    finally:
        conn.close()


def _scrape(b) -> dict[tuple[str, frozenset], float]:
    """Every sample of /metrics: (name, labels) -> value, through
    prometheus_client's parser (which rejects malformed text)."""
    status, text, headers = _get(b, "/metrics")
    assert status == 200, text
    assert headers["Content-Type"].startswith("text/plain; version=0.0.4")
    out = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out[(s.name, frozenset(s.labels.items()))] = s.value
    return out


def _value(samples, name: str, **labels) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


def _create_topic(b, topic: str, partitions: int) -> None:
    admin = AdminClient({"bootstrap.servers": b.bootstrap})
    admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(30)


def _produce(b, topic: str, n: int, start: int = 0) -> None:
    p = Producer({"bootstrap.servers": b.bootstrap, "linger.ms": 5})
    for i in range(start, start + n):
        p.produce(topic, key=str(i % 7).encode(), value=f"value-{i}".encode() * 3)
    assert p.flush(30) == 0


def _consume_all(b, topic: str, group: str, n: int) -> None:
    c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": group,
                  "auto.offset.reset": "earliest", "enable.auto.commit": False,
                  "session.timeout.ms": 6000})
    try:
        c.subscribe([topic])
        got, deadline = 0, time.monotonic() + 30
        while got < n and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is not None and m.error() is None:
                got += 1
        assert got == n
        c.commit(asynchronous=False)
    finally:
        c.close()


def test_healthz_answers_200(hb):
    status, body, _ = _get(hb, "/healthz")
    assert (status, body) == (200, "ok\n")
    assert _get(hb, "/healthz", "HEAD")[0] == 200


def test_topic_counters_match_what_was_produced_and_consumed(hb):
    topic, group, n = f"m-{uuid.uuid4().hex[:8]}", f"g-{uuid.uuid4().hex[:8]}", 500
    _create_topic(hb, topic, 2)
    _produce(hb, topic, n)
    s = _scrape(hb)
    assert _value(s, "headrace_topic_records_in_total", topic=topic) == n
    bytes_in = _value(s, "headrace_topic_bytes_in_total", topic=topic)
    # A fresh topic's logs hold exactly the appended batches.
    assert bytes_in == _value(s, "headrace_topic_log_size_bytes", topic=topic) > n * 18
    assert _value(s, "headrace_topic_partitions", topic=topic) == 2
    assert _value(s, "headrace_topic_log_segments", topic=topic) == 2
    assert _value(s, "headrace_topic_bytes_out_total", topic=topic) == 0

    _consume_all(hb, topic, group, n)
    s = _scrape(hb)
    # Every batch was sent once to the one consumer.
    assert _value(s, "headrace_topic_bytes_out_total", topic=topic) == bytes_in
    assert _value(s, "headrace_group_lag_records", group=group, topic=topic) == 0

    _produce(hb, topic, 37, start=n)  # lag = HW - committed, summed over partitions
    s = _scrape(hb)
    assert _value(s, "headrace_topic_records_in_total", topic=topic) == n + 37
    assert _value(s, "headrace_group_lag_records", group=group, topic=topic) == 37
    assert _value(s, "headrace_requests_total", api="Produce") >= 1
    assert _value(s, "headrace_requests_total", api="Fetch") >= 1
    assert _value(s, "headrace_log_flush_duration_seconds_count") >= 0
    assert _value(s, "headrace_connections_accepted_total") >= 3
    p50 = _value(s, "headrace_request_duration_p50_seconds", api="Produce")
    p99 = _value(s, "headrace_request_duration_p99_seconds", api="Produce")
    assert 0 < p50 <= p99 < 30


def test_request_counts_grow_by_exactly_what_was_sent(hb):
    before = _scrape(hb)
    with Connection(hb.address) as conn:
        for _ in range(5):
            conn.send_request(API_METADATA, 1, b"\xff\xff\xff\xff")  # all topics, v1
            conn.recv_response()
        after_connections = _scrape(hb)
    after = _scrape(hb)
    metadata = "headrace_requests_total"
    assert _value(after, metadata, api="Metadata") - _value(before, metadata, api="Metadata") == 5
    count = "headrace_request_duration_seconds_count"
    assert _value(after, count, api="Metadata") - _value(before, count, api="Metadata") == 5
    assert _value(after_connections, "headrace_connections") >= 1
    assert _value(after, "headrace_connections_accepted_total") - \
        _value(before, "headrace_connections_accepted_total") == 1


def test_handler_time_leaves_out_the_long_poll_wait(hb):
    """Kafka's TotalTimeMs beside LocalTimeMs: an idle consumer's fetches
    each wait fetch.wait.max.ms in the purgatory for data that never comes;
    their total time shows the wait, their handler time only the work."""
    topic = f"idle-{uuid.uuid4().hex[:8]}"
    _create_topic(hb, topic, 1)
    before = _scrape(hb)
    c = Consumer({"bootstrap.servers": hb.bootstrap, "group.id": f"g-{uuid.uuid4().hex[:8]}",
                  "fetch.wait.max.ms": 500, "enable.auto.commit": False})
    try:
        c.assign([TopicPartition(topic, 0, 0)])
        deadline = time.monotonic() + 4
        while time.monotonic() < deadline:
            assert c.poll(0.2) is None
    finally:
        c.close()
    after = _scrape(hb)

    def delta(name: str) -> float:
        return _value(after, name, api="Fetch") - _value(before, name, api="Fetch")

    answered = delta("headrace_request_duration_seconds_count")
    handled = delta("headrace_request_handler_duration_seconds_count")
    assert answered >= 3 and handled >= 3, (answered, handled)
    mean_total = delta("headrace_request_duration_seconds_sum") / answered
    mean_handler = delta("headrace_request_handler_duration_seconds_sum") / handled
    assert mean_total >= 0.3, mean_total
    assert mean_handler < 0.05, mean_handler
    assert _value(after, "headrace_request_handler_duration_p50_seconds", api="Fetch") < 0.05


def test_bad_http_requests_get_4xx_and_the_broker_keeps_serving(hb):
    assert _get(hb, "/nope")[0] == 404
    status, _, headers = _get(hb, "/metrics", "POST")
    assert status == 405 and "GET" in headers["Allow"]
    for raw in (b"GARBAGE\r\n\r\n", b"GET /metrics HTTP/9.9\r\n\r\n",
                b"GET /metrics HTTP/1.1\r\nContent-Length: x\r\n\r\n", b"\x00\xff\r\n\r\n"):
        with socket.create_connection(hb.http, timeout=10) as s:
            s.sendall(raw)
            reply = s.recv(4096)
        assert reply.split(b" ")[1] in (b"400", b"505"), (raw, reply)
    assert _get(hb, "/healthz")[0] == 200
    assert _scrape(hb)  # and /metrics still renders
    hb.assert_alive()


def test_http_port_in_use_is_a_one_line_start_error(hb, tmp_path):
    host, port = hb.http
    proc = subprocess.run(
        [sys.executable, "-m", "headrace.cli", "broker", "--data-dir", str(tmp_path / "d"),
         "--listen", "127.0.0.1:0", "--http", f"{host}:{port}"],
        capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    # One error line; the start-up summary (INFO) comes before it.
    lines = [line for line in proc.stderr.strip().splitlines() if " INFO " not in line]
    assert len(lines) == 1 and "cannot listen for HTTP on" in lines[0], proc.stderr
    assert "in use" in lines[0]


def _fill(path, files: list[str]) -> None:
    """Takes every free block of the file system holding `path`: big
    fallocated files, then 4 KiB written and fsynced per file (what the
    readiness probe's own small write needs) until ENOSPC. Adds each file to
    `files` as it is made, so the caller frees them even if this fails."""

    def one(chunk: int, allocate: bool) -> bool:
        f = os.path.join(path, f"filler-{len(files)}")
        try:
            fd = os.open(f, os.O_CREAT | os.O_WRONLY)
        except OSError as e:  # no room left for the directory entry itself
            assert e.errno == errno.ENOSPC, e
            return False
        try:
            if allocate:
                os.posix_fallocate(fd, 0, chunk)
            else:
                os.write(fd, b"x" * chunk)
                os.fdatasync(fd)
        except OSError as e:
            assert e.errno == errno.ENOSPC, e
            os.close(fd)
            os.unlink(f)
            return False
        os.close(fd)
        files.append(f)
        return True

    while one(1 << 20, allocate=True):
        pass
    for small in (4096, 512, 1):  # the last blocks, as small files take them
        while one(small, allocate=False):
            pass


def _wait_ready(hb, status: int, timeout: float = 5.0) -> str:
    deadline = time.monotonic() + timeout
    while True:
        got, body, _ = _get(hb, "/readyz")
        if got == status or time.monotonic() > deadline:
            assert got == status, body
            return body
        time.sleep(0.2)  # the probe's answer is kept for up to 1 s


def test_readyz_fails_while_the_data_dir_cannot_be_written(hb, data_mount, request):
    data_dir, mounted = data_mount
    assert _wait_ready(hb, 200) == "ready\n"
    if not mounted:
        pytest.skip("needs root to loop-mount a file system for the data directory")
    fill_dir = os.path.dirname(str(data_dir))  # the mount's root, beside the data dir
    files: list[str] = []

    def free():
        for f in files:
            os.unlink(f)
        files.clear()

    request.addfinalizer(free)
    _fill(fill_dir, files)
    body = _wait_ready(hb, 503)
    assert body.startswith(f"data directory {data_dir} is not writable") and body.count("\n") == 1
    assert "No space left" in body
    assert _get(hb, "/healthz")[0] == 200  # the process is up all the same
    free()
    assert _wait_ready(hb, 200) == "ready\n"


class _Node:
    """What _get/_scrape need of a broker: its HTTP address."""

    def __init__(self, http: tuple[str, int]):
        self.http = http


def _cluster_http(node) -> _Node:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        m = [HTTP_LINE_RE.search(line) for line in node.log_path.read_text(errors="replace").splitlines()]
        m = [x for x in m if x]
        if m:
            return _Node((m[-1]["host"], int(m[-1]["port"])))
        time.sleep(0.2)
    raise AssertionError(f"no http line in {node.log_path}:\n{node.log_tail()}")


def _wait_for(what: str, fn, timeout: float = 30.0):
    deadline = time.monotonic() + timeout
    while True:
        value = fn()
        if value or time.monotonic() > deadline:
            assert value, f"timed out waiting for {what}"
            return value
        time.sleep(0.25)


def test_cluster_leader_reports_under_replicated_and_isr_changes(tmp_path):
    """Three brokers, an RF=2 partition on the two that are not the
    controller: pausing the follower (SIGSTOP) while records arrive makes the
    leader's ISR shrink and the partition under-replicated on the leader's
    /metrics; resuming it expands the ISR again. Every broker is ready."""
    from headrace import EmbeddedCluster

    topic = "replicated"
    with EmbeddedCluster(3, data_dir=tmp_path,
                         settings={"zookeeper.session.timeout.ms": 6000,
                                   "replica.lag.time.max.ms": 2000}) as c:
        http = {n: _cluster_http(c.node(n)) for n in (1, 2, 3)}
        for n in (1, 2, 3):
            _wait_for(f"broker {n} ready", lambda n=n: _get(http[n], "/readyz")[0] == 200)
        leader, follower = [n for n in (1, 2, 3) if n != c.controller_id()]
        admin = AdminClient({"bootstrap.servers": c.bootstrap_servers})
        admin.create_topics([NewTopic(topic, 1, replica_assignment=[[leader, follower]])])[
            topic].result(30)
        assert c.wait_for_leaders(topic)[0] == leader
        _wait_for("a full ISR", lambda: _value(
            _scrape(http[leader]), "headrace_partitions_under_replicated") == 0)
        before = _scrape(http[leader])
        producer = Producer({"bootstrap.servers": c.bootstrap_servers, "acks": 1})
        c.pause(follower)
        try:
            def shrunk():
                producer.produce(topic, b"while the follower sleeps")
                producer.poll(0)
                s = _scrape(http[leader])
                return s if _value(s, "headrace_partitions_under_replicated") >= 1 else None

            after = _wait_for("the ISR shrink", shrunk)
            assert _value(after, "headrace_isr_shrinks_total") > \
                _value(before, "headrace_isr_shrinks_total")
            assert _value(after, "headrace_topic_partitions", topic=topic) == 1
        finally:
            c.resume(follower)
        assert producer.flush(30) == 0
        expanded = _wait_for("the ISR expand", lambda: (lambda s: s if _value(
            s, "headrace_partitions_under_replicated") == 0 else None)(_scrape(http[leader])),
            timeout=60)
        assert _value(expanded, "headrace_isr_expands_total") > \
            _value(before, "headrace_isr_expands_total")
