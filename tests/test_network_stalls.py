"""Disk waits and the network threads (docs/architecture.md "Threads",
docs/metrics.md, issue 32).

- A produce's append runs on its log directory's writer thread
  (`hr-write-N`), not on the network thread: while the partition's write is
  held, the same (only) network thread answers other clients.
- What still writes on a network thread (the group coordinator's log, on an
  OffsetCommit) and blocks for >= 10 ms is counted by the stall detector on
  /metrics and logged at warn level, naming the thread.

The waits are real: a write to the files under a path blocks for as long as
a file exists (the I/O seam, HEADRACE_FAULT_INJECT "write:...:hold=FILE"),
as a write into a page the kernel's writeback holds would.
"""
from __future__ import annotations

import re
import threading
import time

from confluent_kafka import Consumer, Producer, TopicPartition

from test_broker_limits import api_versions_ok
from test_metrics import _http_address, _scrape, _value
from test_partition_state import _create

HELD_S = 0.3


def _stall_seconds(b) -> float:
    return _value(_scrape(b), "headrace_network_thread_stall_seconds_total")


def test_a_held_append_does_not_hold_the_network_thread(broker_factory, tmp_path, monkeypatch):
    topic = "held"
    hold = tmp_path / "hold-writes"
    monkeypatch.setenv("HEADRACE_FAULT_INJECT", f"write:path={topic}-0/:hold={hold}")
    b = broker_factory(tmp_path / "data", "--http", "127.0.0.1:0", "--set", "num.io.threads=1")
    monkeypatch.delenv("HEADRACE_FAULT_INJECT")
    b.http = _http_address(b)
    _create(b.bootstrap, topic)
    stalled_before = _stall_seconds(b)

    hold.touch()  # from now on the partition's writes wait, for as long as it exists
    p = Producer({"bootstrap.servers": b.bootstrap, "acks": 1, "linger.ms": 0})
    acked: list = []
    p.produce(topic, b"held", on_delivery=lambda err, msg: acked.append(err))
    p.poll(HELD_S)
    assert acked == [], "the produce was acknowledged while its write was held"
    # The one network thread still serves: new connections, requests, and
    # another partition's produce.
    for _ in range(3):
        assert api_versions_ok(b.address, timeout=5)
    _create(b.bootstrap, "free")
    other = Producer({"bootstrap.servers": b.bootstrap, "acks": 1, "linger.ms": 0})
    other_acked: list = []
    other.produce("free", b"not held", on_delivery=lambda err, msg: other_acked.append(err))
    assert other.flush(10) == 0 and other_acked == [None]
    assert acked == [] and hold.exists()
    hold.unlink()
    assert p.flush(30) == 0 and acked == [None]
    # The held write was never a network thread's wait.
    assert _stall_seconds(b) - stalled_before < HELD_S * 0.8


def test_a_write_that_blocks_a_network_thread_is_counted_and_logged(broker_factory, tmp_path,
                                                                     monkeypatch):
    topic = "committed"
    hold = tmp_path / "hold-writes"
    # The group coordinator's log (single node: <data>/__group_metadata/)
    # is still appended on the thread that serves the OffsetCommit.
    monkeypatch.setenv("HEADRACE_FAULT_INJECT", f"write:path=__group_metadata/:hold={hold}")
    b = broker_factory(tmp_path / "data", "--http", "127.0.0.1:0")
    monkeypatch.delenv("HEADRACE_FAULT_INJECT")
    b.http = _http_address(b)
    _create(b.bootstrap, topic)
    before = _scrape(b)

    c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": "stalls",
                  "enable.auto.commit": False})
    committed: list = []
    hold.touch()
    committer = threading.Thread(target=lambda: committed.append(
        c.commit(offsets=[TopicPartition(topic, 0, 5)], asynchronous=False)))
    committer.start()
    time.sleep(HELD_S)
    assert committed == [], "the commit was answered while its write was held"
    hold.unlink()
    committer.join(30)
    assert committed and committed[0][0].offset == 5
    c.close()

    after = _scrape(b)
    stalls = (_value(after, "headrace_network_thread_stalls_total") -
              _value(before, "headrace_network_thread_stalls_total"))
    assert stalls >= 1
    assert _value(after, "headrace_network_thread_stall_max_seconds") >= HELD_S * 0.8
    assert (_value(after, "headrace_network_thread_stall_seconds_total") -
            _value(before, "headrace_network_thread_stall_seconds_total")) >= HELD_S * 0.8

    # The first stall is logged at once; one within 10 s of a logged one
    # (the broker may have stalled starting on a loaded machine) is in the
    # next summary line ("... network-thread stalls ...; last: off CPU X ms").
    pattern = re.compile(r"WARN .*network.thread.* off CPU (\d+) ms")
    deadline = time.monotonic() + 15
    while True:
        found = [int(m.group(1)) for m in map(pattern.search, b.stderr.splitlines()) if m]
        if any(ms >= HELD_S * 800 for ms in found) or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert any(ms >= HELD_S * 800 for ms in found), \
        f"no line for the held write's stall in the broker's log:\n{b.stderr[-3000:]}"
    assert any(re.search(r"WARN .*network thread hr-net-\d+ stalled: off CPU", line)
               for line in b.stderr.splitlines())


def test_with_no_writer_threads_the_append_holds_its_network_thread(broker_factory, tmp_path,
                                                                     monkeypatch):
    """headrace.log.writer.threads=0 appends on the network thread, as before
    the writers: the held write is that thread's stall, counted as one."""
    topic = "inline"
    hold = tmp_path / "hold-writes"
    monkeypatch.setenv("HEADRACE_FAULT_INJECT", f"write:path={topic}-0/:hold={hold}")
    b = broker_factory(tmp_path / "data", "--http", "127.0.0.1:0",
                       "--set", "headrace.log.writer.threads=0")
    monkeypatch.delenv("HEADRACE_FAULT_INJECT")
    b.http = _http_address(b)
    _create(b.bootstrap, topic)
    before = _scrape(b)
    hold.touch()
    p = Producer({"bootstrap.servers": b.bootstrap, "acks": 1, "linger.ms": 0})
    acked: list = []
    p.produce(topic, b"held", on_delivery=lambda err, msg: acked.append(err))
    p.poll(HELD_S)
    assert acked == []
    hold.unlink()
    assert p.flush(30) == 0 and acked == [None]
    after = _scrape(b)
    assert (_value(after, "headrace_network_thread_stalls_total") -
            _value(before, "headrace_network_thread_stalls_total")) >= 1
    assert _value(after, "headrace_network_thread_stall_max_seconds") >= HELD_S * 0.8
