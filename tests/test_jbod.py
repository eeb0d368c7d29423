"""Several log directories (JBOD, `log.dirs`) on real file systems.

Three small ext4 images are loop-mounted as the broker's three log
directories. One of them is then made to fail for real: the ext4 shutdown
ioctl (EXT4_IOC_SHUTDOWN with NOLOGFLUSH, xfstests' "godown": the disk is
gone, every later read, write, open and fsync on it fails with EIO). The
device-mapper `error` target would do the same one layer lower, but this
kernel has no device-mapper driver, so the ioctl is the fault here.

Proved with confluent-kafka / kafka-python against one broker process:
- 6 new partitions are placed 2 per directory (the fewest-partitions rule);
- AlterReplicaLogDirs moves a partition while a producer writes to it:
  every acknowledged record is readable afterwards, none twice;
- with one directory failed, producing to its partitions answers
  KAFKA_STORAGE_ERROR while the other directories' partitions keep taking
  and serving records (counted: none lost), and DescribeLogDirs reports the
  directory with KAFKA_STORAGE_ERROR;
- a restart with the directory still failed starts and serves the rest;
- `headrace log dirs` lists every directory, the failed one with its error.

Needs root (mount, the ioctl); skipped otherwise.
"""
from __future__ import annotations

import fcntl
import os
import shutil
import struct
import subprocess
import sys
import time

import pytest

ck = pytest.importorskip("confluent_kafka")
import confluent_kafka.admin  # noqa: E402,F401  (ck.admin)
kafka_admin = pytest.importorskip("kafka.admin")

from background_writer import start_writer  # noqa: E402
from broker_process import BrokerProcess  # noqa: E402

EXT4_IOC_SHUTDOWN = 0x8004587D       # _IOR('X', 125, __u32)
EXT4_GOING_FLAGS_NOLOGFLUSH = 2      # the disk is gone: no flush, no journal
KAFKA_STORAGE_ERROR = 56
TOPIC = "jbod"

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("mkfs.ext4") is None or shutil.which("mount") is None,
    reason="needs root, mkfs.ext4 and mount to loop-mount the log directories")


def _run(*cmd: str) -> None:
    subprocess.run(cmd, check=True, capture_output=True, timeout=60)


def _shutdown_fs(mount_point: str) -> None:
    """Makes the file system at mount_point fail every I/O from now on."""
    fd = os.open(mount_point, os.O_RDONLY)
    try:
        fcntl.ioctl(fd, EXT4_IOC_SHUTDOWN, struct.pack("I", EXT4_GOING_FLAGS_NOLOGFLUSH))
    finally:
        os.close(fd)


def _mount_disks(root, count: int, mounts: list[str]) -> None:
    """Appends `count` loop-mounted 64 MB ext4 file systems under root to
    `mounts` (the caller unmounts them; -o loop autoclears the loop device)."""
    for i in range(count):
        img, mnt = root / f"disk{i}.img", root / f"d{i}"
        _run("truncate", "-s", "64M", str(img))
        _run("mkfs.ext4", "-q", "-F", str(img))
        mnt.mkdir()
        try:
            _run("mount", "-o", "loop", str(img), str(mnt))
        except subprocess.CalledProcessError as e:
            pytest.skip(f"cannot loop-mount an ext4 image here: {e.stderr.decode().strip()}")
        mounts.append(str(mnt))


def _unmount(mounts: list[str]) -> None:
    for m in mounts:
        subprocess.run(["umount", "-l", m], capture_output=True, timeout=60)


@pytest.fixture(scope="module")
def disks(tmp_path_factory):
    """Three loop-mounted file systems; unmounted at the end even when a
    test fails."""
    mounts: list[str] = []
    try:
        _mount_disks(tmp_path_factory.mktemp("jbod"), 3, mounts)
        yield mounts
    finally:
        _unmount(mounts)


@pytest.fixture(scope="module")
def jbod_broker(disks, tmp_path_factory):
    b = BrokerProcess(disks[0], "--set", "log.dirs=" + ",".join(disks),
                      "--set", "num.partitions=1")
    b.start()
    try:
        yield b
    finally:
        if b.running:
            b.kill()


def _admin(broker):
    return kafka_admin.KafkaAdminClient(bootstrap_servers=broker.bootstrap,
                                        request_timeout_ms=10000)


def _log_dirs(broker) -> dict[str, dict]:
    """{path: {"error": code, "parts": {(topic, p): (size, is_future)}}}."""
    admin = _admin(broker)
    try:
        answers = admin.describe_log_dirs()
    finally:
        admin.close()
    out = {}
    for a in answers:
        for d in a["log_dirs"]:
            parts = {(t["name"], p["partition_index"]): (p["partition_size"], p["is_future_key"])
                     for t in d.get("topics", []) for p in t.get("partitions", [])}
            out[d["log_dir"]] = {"error": d["error_code"], "parts": parts,
                                 "total": d.get("total_bytes", -1)}
    return out


def _dir_of(dirs: dict[str, dict], topic: str, partition: int) -> str:
    found = [path for path, d in dirs.items()
             if (topic, partition) in d["parts"] and not d["parts"][(topic, partition)][1]]
    assert len(found) == 1, (topic, partition, dirs)
    return found[0]


def _producer(broker, **extra):
    conf = {"bootstrap.servers": broker.bootstrap, "acks": "all", "linger.ms": 1,
            "message.timeout.ms": 20000}
    conf.update(extra)
    return ck.Producer(conf)


def _produce(broker, topic: str, partition: int, n: int, prefix: str, **extra):
    """Produces n records; returns ({offset: value} acknowledged, [errors])."""
    p = _producer(broker, **extra)
    acked, errors = {}, []

    def report(err, msg):
        if err is None:
            acked[msg.offset()] = msg.value()
        else:
            errors.append(err)
    for i in range(n):
        p.produce(topic, value=f"{prefix}-{i}".encode(), partition=partition, on_delivery=report)
        p.poll(0)
    assert p.flush(30) == 0
    return acked, errors


def _consume(broker, topic: str, partition: int) -> dict[int, bytes]:
    """Every record of one partition up to its high watermark, by offset."""
    c = ck.Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "jbod-check",
                     "enable.auto.commit": False})
    try:
        tp = ck.TopicPartition(topic, partition)
        low, high = c.get_watermark_offsets(tp, timeout=15)
        c.assign([ck.TopicPartition(topic, partition, low)])
        out: dict[int, bytes] = {}
        deadline = time.monotonic() + 30
        while len(out) < high - low:
            assert time.monotonic() < deadline, f"read stalled at {len(out)} of {high - low}"
            # Ask for exactly what is missing: consume() returns as soon as
            # that many arrived (asking for more waits out the timeout).
            for msg in c.consume(min(1000, high - low - len(out)), 1.0):
                assert msg.error() is None, msg.error()
                assert msg.offset() not in out, f"offset {msg.offset()} read twice"
                out[msg.offset()] = msg.value()
        return out
    finally:
        c.close()


def test_new_partitions_are_spread_two_per_directory(jbod_broker, disks):
    admin = _admin(jbod_broker)
    try:
        admin.create_topics([kafka_admin.NewTopic(TOPIC, 6, 1)])
    finally:
        admin.close()
    dirs = _log_dirs(jbod_broker)
    assert sorted(dirs) == sorted(disks)
    for path in disks:
        assert dirs[path]["error"] == 0
        assert dirs[path]["total"] > 0
        mine = sorted(p for (t, p) in dirs[path]["parts"] if t == TOPIC)
        assert len(mine) == 2, (path, mine)
    # Each directory carries its own identity (meta.properties, Kafka's keys).
    ids = set()
    for path in disks:
        props = dict(line.split("=", 1) for line in open(os.path.join(path, "meta.properties"))
                     .read().splitlines() if "=" in line and not line.startswith("#"))
        assert props["node.id"] == "0"
        ids.add(props["directory.id"])
    assert len(ids) == 3


def test_a_partition_moves_between_directories_while_written(jbod_broker, disks):
    dirs = _log_dirs(jbod_broker)
    source = _dir_of(dirs, TOPIC, 0)
    target = next(d for d in disks if d != source)
    # Some data before the move, so that there is something to copy.
    before, errors = _produce(jbod_broker, TOPIC, 0, 20000, "pre", **{"enable.idempotence": True})
    assert not errors and len(before) == 20000

    acked, failures, stop, writer = start_writer(jbod_broker.bootstrap, TOPIC,
                                                 lambda i: b"during-%d" % i)
    try:
        time.sleep(0.3)
        admin = _admin(jbod_broker)
        try:
            answer = admin.alter_replica_log_dirs({(TOPIC, 0, 0): target})
        finally:
            admin.close()
        assert all(e.errno == 0 for e in answer.values()), answer
        deadline = time.monotonic() + 20
        while _dir_of(_log_dirs(jbod_broker), TOPIC, 0) != target:
            assert time.monotonic() < deadline, "the move did not finish"
            time.sleep(0.1)
        time.sleep(0.3)  # keep writing to the moved partition for a while
    finally:
        stop.set()
        writer.join(60)
    assert not failures, failures[:3]
    acked.update(before)
    stored = _consume(jbod_broker, TOPIC, 0)
    lost = [o for o, v in acked.items() if stored.get(o) != v]
    values = list(stored.values())
    duplicated = len(values) - len(set(values))
    assert lost == [] and duplicated == 0, (len(lost), duplicated)
    assert len(acked) > len(before), "nothing was written during the move"
    assert not os.path.exists(os.path.join(source, f"{TOPIC}-0"))
    assert "moved jbod-0 to" in jbod_broker.stderr


def test_a_failed_directory_goes_offline_alone(jbod_broker, disks):
    dirs = _log_dirs(jbod_broker)
    failed = disks[2]
    on_failed = sorted(p for p in range(6) if _dir_of(dirs, TOPIC, p) == failed)
    healthy = sorted(p for p in range(6) if p not in on_failed)
    assert on_failed and len(healthy) >= 3, (on_failed, dirs)
    _shutdown_fs(failed)

    # Producing to its partitions fails with KAFKA_STORAGE_ERROR.
    for p in on_failed:
        acked, errors = _produce(jbod_broker, TOPIC, p, 3, "lost", retries=0,
                                 **{"enable.idempotence": False})
        assert not acked, (p, acked)
        assert errors and all(e.code() == ck.KafkaError.KAFKA_STORAGE_ERROR for e in errors), errors
    # The others keep taking and serving records: none lost.
    for p in healthy:
        start = len(_consume(jbod_broker, TOPIC, p))
        acked, errors = _produce(jbod_broker, TOPIC, p, 500, f"ok{p}")
        assert not errors and len(acked) == 500, (p, errors[:3])
        stored = _consume(jbod_broker, TOPIC, p)
        lost = [o for o, v in acked.items() if stored.get(o) != v]
        assert lost == [] and len(stored) == start + 500, (p, len(lost), len(stored))
    dirs = _log_dirs(jbod_broker)
    assert dirs[failed]["error"] == KAFKA_STORAGE_ERROR and not dirs[failed]["parts"]
    assert all(dirs[d]["error"] == 0 for d in disks if d != failed)
    # The command line shows every directory, the failed one with its error.
    cli = subprocess.run([sys.executable, "-m", "headrace.cli", "log", "dirs", "--brokers",
                          jbod_broker.bootstrap], capture_output=True, text=True, timeout=60)
    assert cli.returncode == 1, cli.stderr
    lines = {line.split()[2]: line for line in cli.stdout.splitlines()}
    assert set(lines) == set(disks), cli.stdout
    assert "KAFKA_STORAGE_ERROR" in lines[failed] and "online" in lines[disks[0]], cli.stdout
    offline_lines = [line for line in jbod_broker.stderr.splitlines()
                     if f"log directory {failed} is offline" in line]
    assert len(offline_lines) == 1, jbod_broker.stderr
    jbod_broker.assert_alive()


def test_a_restart_with_the_directory_still_failed_serves_the_rest(jbod_broker, disks):
    failed = disks[2]
    jbod_broker.kill()
    jbod_broker.start_again()
    dirs = _log_dirs(jbod_broker)
    assert dirs[failed]["error"] == KAFKA_STORAGE_ERROR
    healthy = [p for p in range(6) if (TOPIC, p) in dirs[disks[0]]["parts"]
               or (TOPIC, p) in dirs[disks[1]]["parts"]]
    assert len(healthy) >= 3, dirs
    for p in healthy:
        before = _consume(jbod_broker, TOPIC, p)
        acked, errors = _produce(jbod_broker, TOPIC, p, 100, f"again{p}")
        assert not errors and len(acked) == 100
        assert len(_consume(jbod_broker, TOPIC, p)) == len(before) + 100
    for p in set(range(6)) - set(healthy):
        acked, errors = _produce(jbod_broker, TOPIC, p, 1, "x", retries=0,
                                 **{"enable.idempotence": False})
        assert not acked and errors[0].code() == ck.KafkaError.KAFKA_STORAGE_ERROR


def test_cluster_moves_leadership_off_a_failed_directory(tmp_path):
    """Two brokers (RF 2); broker 2 has log.dirs = its data dir plus a
    loop-mounted disk. The disk fails: broker 2's member reports the offline
    replicas (/admin/offline_replicas/2), the controller moves their
    leadership to broker 1 and takes broker 2 out of their ISR, and broker
    2 stays out (it no longer fetches them: its last fetches must not bring
    it back); every partition keeps taking records. replica.lag.time.max.ms
    is longer than the test's wait, so no lag-based shrink can pass it."""
    from headrace import EmbeddedCluster

    mounts: list[str] = []
    try:
        _mount_disks(tmp_path, 1, mounts)
        with EmbeddedCluster(2, data_dir=tmp_path / "cluster",
                             settings={"zookeeper.session.timeout.ms": 3000,
                                       "replica.lag.time.max.ms": 60000,
                                       "default.replication.factor": 2}) as cluster:
            node = cluster.node(2)
            cluster.stop(2)
            node.settings["log.dirs"] = f"{node.data_dir},{mounts[0]}"
            cluster.start_node(2)
            topic = "jbod-cluster"
            admin = ck.admin.AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
            admin.create_topics([ck.admin.NewTopic(topic, 4, 2)])[topic].result(30)
            # Records everywhere first, so both replicas of every partition exist.
            for p in range(4):
                acked, errors = _produce_cluster(cluster, topic, p, 50)
                assert not errors and len(acked) == 50, (p, errors[:3])
            kadmin = kafka_admin.KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)
            try:
                dirs = kadmin.describe_log_dirs(brokers=[2])[0]["log_dirs"]
            finally:
                kadmin.close()
            on_disk = sorted(p["partition_index"] for d in dirs if d["log_dir"] == mounts[0]
                             for t in d["topics"] if t["name"] == topic for p in t["partitions"])
            assert on_disk, dirs
            _shutdown_fs(mounts[0])
            # Writes reach broker 2's replicas on the disk (as leader or as
            # follower) and fail there; leadership moves to broker 1.
            deadline = time.monotonic() + 30
            while True:
                for p in range(4):
                    _produce_cluster(cluster, topic, p, 5)
                md = admin.list_topics(topic, timeout=10).topics[topic].partitions
                moved = all(md[p].leader == 1 and 2 not in md[p].isrs for p in on_disk)
                if moved:
                    break
                assert time.monotonic() < deadline, {p: (md[p].leader, md[p].isrs) for p in md}
                time.sleep(0.5)
            for p in range(4):
                acked, errors = _produce_cluster(cluster, topic, p, 50)
                assert not errors and len(acked) == 50, (p, errors[:3])
            log = cluster.node(2).log_path.read_text()
            assert "reported to the controller" in log, log[-3000:]
    finally:
        _unmount(mounts)


def _produce_cluster(cluster, topic: str, partition: int, n: int):
    p = ck.Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all",
                     "enable.idempotence": True, "message.timeout.ms": 15000})
    acked, errors = [], []
    for i in range(n):
        p.produce(topic, value=b"v%d" % i, partition=partition,
                  on_delivery=lambda e, m: (errors if e else acked).append(e or m.offset()))
    p.flush(30)
    return acked, errors
