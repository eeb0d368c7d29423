"""A broker under pressure, as a real `headrace broker` process: its data
directory is locked, it survives file-descriptor exhaustion without spinning
or flooding its log, closes idle connections, limits connections per IP,
caps the memory of queued requests without deadlocking, and refuses
CreateTopics/CreatePartitions over the partition limits.
"""
from __future__ import annotations

import os
import resource
import socket
import struct
import subprocess
import sys
import time

import pytest

from broker_process import BrokerProcess, shared_broker
from broker_wire import API_API_VERSIONS, API_METADATA, Connection, frame, request_header

ERR_POLICY_VIOLATION = 44
MODULE_SETTINGS = ("--set", "connections.max.idle.ms=2000",
                   "--set", "queued.max.request.bytes=1048576",
                   "--set", "headrace.max.partitions=40",
                   "--set", "headrace.max.partitions.per.request=20")


@pytest.fixture(scope="module")
def limits_broker(tmp_path_factory):
    """Idle timeout 2 s, request memory 1 MiB, 40 partitions (20 per request)."""
    yield from shared_broker(tmp_path_factory, "limits-broker", *MODULE_SETTINGS)


def api_versions_ok(address, timeout=10.0) -> bool:
    """One ApiVersions v0 round trip on a fresh connection."""
    with Connection(address, timeout=timeout) as c:
        cid = c.send_request(API_API_VERSIONS, 0)
        got, r = c.recv_response()
        return got == cid and r.i16() == 0


def cpu_seconds(pid: int) -> float:
    """utime + stime of a process, from /proc/<pid>/stat."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


# -- the data directory lock ----------------------------------------------------

def test_second_broker_on_the_same_data_dir_exits_naming_dir_and_pid(broker):
    cmd = [sys.executable, "-m", "headrace.cli", "broker", "--data-dir", str(broker.data_dir),
           "--listen", "127.0.0.1:0"]
    second = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert second.returncode == 2
    # One error line (after the startup summary line every broker logs).
    lines = [ln for ln in second.stderr.strip().splitlines() if " ERROR " in ln]
    assert len(lines) == 1, second.stderr
    assert f"data directory {broker.data_dir} is in use by another broker" in lines[0]
    assert f"pid {broker.proc.pid}" in lines[0]
    assert "listening" not in second.stdout
    broker.assert_alive()  # the first one is untouched


def test_embedded_broker_on_a_locked_dir_raises_headrace_error(broker):
    from headrace import EmbeddedBroker
    from headrace.errors import HeadraceError

    with pytest.raises(HeadraceError, match=f"pid {broker.proc.pid}"):
        EmbeddedBroker(data_dir=str(broker.data_dir)).start()


def test_lock_file_stays_and_a_restart_takes_it_again(broker):
    lock = broker.data_dir / ".lock"
    assert lock.read_text().strip() == str(broker.proc.pid)
    broker.restart()
    assert lock.exists()
    assert lock.read_text().strip() == str(broker.proc.pid)


# -- file descriptors exhausted -------------------------------------------------

def _limit_fds_to_256():
    resource.setrlimit(resource.RLIMIT_NOFILE, (256, 256))


@pytest.mark.parametrize("backend", ["epoll", "io_uring"])
def test_fd_exhaustion_costs_little_cpu_and_few_log_lines_then_recovers(broker_factory, backend):
    # auto = io_uring where the kernel allows it (explicit io_uring fails otherwise).
    setting = "epoll" if backend == "epoll" else "auto"
    b = broker_factory(None, "--set", f"headrace.network.backend={setting}",
                       preexec_fn=_limit_fds_to_256)
    if b.backend != backend:
        pytest.skip(f"{backend} not available here")
    lines_before = len(b.stderr.splitlines())
    socks = []
    for _ in range(400):  # more than the broker's 256 descriptors
        socks.append(socket.create_connection(b.address, timeout=10))
    time.sleep(0.5)  # the broker has hit EMFILE
    cpu0 = cpu_seconds(b.proc.pid)
    time.sleep(3.0)
    cpu = cpu_seconds(b.proc.pid) - cpu0
    # A loaded machine may add the stall detector's line (a network thread
    # preempted while it blocked on a lock); only the acceptor's lines count.
    new_lines = [line for line in b.stderr.splitlines()[lines_before:]
                 if "network thread" not in line]
    print(f"{backend}: {cpu:.2f} s CPU in 3 s with fds exhausted; log lines: {new_lines}")
    assert cpu < 0.5, f"{cpu:.2f} s of CPU in 3 s: the acceptor spins"
    assert 1 <= len(new_lines) <= 4, new_lines
    assert "file descriptors exhausted" in new_lines[0]
    for s in socks:
        s.close()
    deadline = time.monotonic() + 15
    while True:  # served again once the refused sockets are drained
        try:
            if api_versions_ok(b.address, timeout=2):
                break
        except OSError:
            pass
        assert time.monotonic() < deadline, "not serving after the sockets closed"
    b.assert_alive()


# -- idle connections, connections per IP ---------------------------------------

def test_idle_connection_is_closed_by_the_broker(limits_broker):
    with Connection(limits_broker.address) as c:
        cid = c.send_request(API_API_VERSIONS, 0)
        assert c.recv_response()[0] == cid
        start = time.monotonic()
        assert c.is_closed_by_peer(timeout=5)
        elapsed = time.monotonic() - start
    assert 1.5 < elapsed < 4.0, elapsed  # connections.max.idle.ms=2000, checked each second


def test_connections_over_max_connections_per_ip_are_closed_at_once(broker_factory):
    b = broker_factory(None, "--set", "max.connections.per.ip=3")
    kept = [Connection(b.address) for _ in range(3)]
    try:
        for c in kept:
            cid = c.send_request(API_API_VERSIONS, 0)
            assert c.recv_response()[0] == cid
        with Connection(b.address) as refused:
            assert refused.is_closed_by_peer(timeout=5)
        kept.pop().close()
        deadline = time.monotonic() + 5
        while not api_versions_ok_or_closed(b.address):
            assert time.monotonic() < deadline
    finally:
        for c in kept:
            c.close()
    # The broker closes before it logs, and its stderr is read by a thread:
    # the line may come after the client saw the close.
    deadline = time.monotonic() + 10
    while "max.connections.per.ip reached" not in b.stderr and time.monotonic() < deadline:
        time.sleep(0.05)
    first = [line for line in b.stderr.splitlines()
             if "max.connections.per.ip reached (repeats are summarised)" in line]
    assert len(first) == 1, b.stderr[-2000:]


def api_versions_ok_or_closed(address) -> bool:
    try:
        return api_versions_ok(address, timeout=2)
    except (ConnectionError, OSError):
        return False


def test_a_flood_of_malformed_requests_logs_one_line_not_one_per_request(limits_broker):
    before = len(limits_broker.stderr.splitlines())
    for _ in range(50):
        with Connection(limits_broker.address) as c:
            c.send_raw(struct.pack(">i", -1) + b"junk")
            assert c.is_closed_by_peer(timeout=5)
    time.sleep(0.2)
    new_lines = limits_broker.stderr.splitlines()[before:]
    assert len(new_lines) <= 1, new_lines  # the rest go into the 10 s summary
    assert api_versions_ok(limits_broker.address)


# -- queued.max.request.bytes ---------------------------------------------------

def metadata_v1_frame(names: list[str], correlation_id: int) -> bytes:
    body = struct.pack(">i", len(names))
    for n in names:
        body += struct.pack(">h", len(n)) + n.encode()
    return frame(request_header(API_METADATA, 1, correlation_id) + body)


def answered_within(conn: Connection, seconds: float) -> bool:
    conn.sock.settimeout(seconds)
    try:
        conn.sock.recv(1, socket.MSG_PEEK)
        return True
    except socket.timeout:
        return False
    finally:
        conn.sock.settimeout(30)


def test_request_memory_cap_holds_a_big_request_back_but_serves_small_ones(limits_broker):
    # 30 invalid (too long) topic names of 30000 bytes: a ~900 KiB Metadata
    # request the broker answers with INVALID_TOPIC_EXCEPTION per name.
    partial = metadata_v1_frame([f"{i:02d}" + "x" * 29998 for i in range(30)], 7)
    other = metadata_v1_frame([f"{i:02d}" + "y" * 6998 for i in range(30)], 8)  # ~210 KiB
    assert 880_000 < len(partial) < 1_048_576 and len(partial) + len(other) > 1_048_576
    with Connection(limits_broker.address) as big, Connection(limits_broker.address) as waiter:
        big.send_raw(partial[: len(partial) // 2])  # its 900 KiB are reserved
        time.sleep(0.3)
        assert api_versions_ok(limits_broker.address)  # a small request goes through
        waiter.send_raw(other)  # does not fit beside the first: not read further
        assert not answered_within(waiter, 0.7)
        big.send_raw(partial[len(partial) // 2:])
        cid, r = big.recv_response()
        assert cid == 7
        cid, r = waiter.recv_response()  # the memory was released: read and answered
        assert cid == 8


def test_one_request_larger_than_the_memory_cap_goes_through_alone(limits_broker):
    names = [f"{i:02d}" + "z" * 29998 for i in range(40)]  # ~1.2 MiB > the 1 MiB cap
    with Connection(limits_broker.address) as c:
        c.send_raw(metadata_v1_frame(names, 9))
        cid, r = c.recv_response()
        assert cid == 9


# -- partition limits -------------------------------------------------------------

def _create(admin, topics):
    from confluent_kafka.admin import NewTopic

    futures = admin.create_topics([NewTopic(name, n, 1) for name, n in topics],
                                  operation_timeout=30, request_timeout=30)
    out = {}
    for name, fut in futures.items():
        try:
            fut.result(60)
            out[name] = None
        except Exception as e:  # noqa: BLE001 - the KafkaError is inside
            out[name] = e.args[0]
    return out


def test_create_topics_over_the_partition_limits_is_policy_violation(limits_broker):
    from confluent_kafka.admin import AdminClient, NewPartitions

    admin = AdminClient({"bootstrap.servers": limits_broker.bootstrap})
    err = _create(admin, [("cap-too-many", 25)])["cap-too-many"]
    assert err.code() == ERR_POLICY_VIOLATION
    assert "headrace.max.partitions.per.request (20 per request" in err.str()
    # One request: the first topic uses 15 of the 20, the second is refused.
    res = _create(admin, [("cap-a", 15), ("cap-b", 15)])
    assert res["cap-a"] is None
    assert res["cap-b"].code() == ERR_POLICY_VIOLATION
    assert "5 left in this request" in res["cap-b"].str()
    assert _create(admin, [("cap-c", 20)])["cap-c"] is None  # 35 of 40
    err = _create(admin, [("cap-d", 10)])["cap-d"]
    assert err.code() == ERR_POLICY_VIOLATION
    assert "headrace.max.partitions (40); this broker hosts 35" in err.str()
    fut = admin.create_partitions([NewPartitions("cap-a", 21)])["cap-a"]
    with pytest.raises(Exception) as info:
        fut.result(60)
    assert info.value.args[0].code() == ERR_POLICY_VIOLATION
    admin.create_partitions([NewPartitions("cap-a", 20)])["cap-a"].result(60)  # 40: allowed
