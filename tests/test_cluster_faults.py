"""Jepsen-style fault runs on a 3-broker cluster (tests/cluster_faults.py).

Idempotent acks=all producers write to an RF=3, min.insync.replicas=2
topic of 3 partitions while a seeded nemesis kills, pauses, stops and
network-partitions brokers (one network namespace per broker). After the
faults heal, everything is read back: no acknowledged record may be lost,
duplicated, reordered or found at another offset than the one acknowledged,
and the replicas' segment files must be byte-identical.

Default run: about two minutes (60 s of faults). The long run (10+ minutes
of faults, every fault kind) is marked slow:

    pytest tests/test_cluster_faults.py -m slow -s
    FAULTS_SEED=7 FAULTS_SECONDS=1200 pytest ... -m slow -s

Needs root (ip netns, nft). (Not HEADRACE_* variables: brokers read those as settings.)
"""
from __future__ import annotations

import json
import os
import shutil
import time

import pytest

pytest.importorskip("confluent_kafka")

import cluster_faults as cf  # noqa: E402

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("nft") is None or shutil.which("ip") is None,
    reason="the fault runner needs root, iproute2 and nftables (network namespaces)")


def _run_and_check(tmp_path, seed: int, seconds: float, min_acked: int):
    history = cf.run_faults(tmp_path / "cluster", seed, seconds)
    print()
    for e in history.get("faults", []):
        print(f"  [{e['start']:8.2f}s] {e['kind']:22s} broker {e['node']} ({e['roles']}) "
              f"healed {e.get('healed')}s recovered {e.get('recovered_at')}s")
    print(cf.summary(history))
    print(f"history: {tmp_path / 'cluster' / 'history.json'}")
    check = history["check"]
    total = check["total"]
    problems = json.dumps({"examples": check["examples"],
                           "producer_fatal_errors": history["workload"]["producer_fatal_errors"][:5],
                           "unrecovered": history["unrecovered_faults"][:3]}, default=str)[:3000]
    assert history["faults"], "no fault was injected"
    assert total["acknowledged"] >= min_acked, cf.summary(history)
    assert (total["lost"], total["duplicated"], total["reordered"]) == (0, 0, 0), \
        f"{cf.summary(history)}\n{problems}"
    assert total["acked_offset_moved"] == 0, f"{cf.summary(history)}\n{problems}"
    # An acknowledgement must name the record's offset (issue 37).
    assert total["acked_without_offset"] == 0, f"{cf.summary(history)}\n{problems}"
    assert total["replicas_identical"], json.dumps(check["partitions"], default=str)
    assert check["isr"] is True, check["isr"]
    assert not history["unrecovered_faults"], problems
    # A correct broker never makes an idempotent producer fail fatally
    # (OUT_OF_ORDER_SEQUENCE_NUMBER, UNKNOWN_PRODUCER_ID, ...).
    assert not history["workload"]["producer_fatal_errors"], f"{cf.summary(history)}\n{problems}"
    return history


@pytest.mark.timeout(600)
def test_faults_two_minutes(tmp_path):
    seed = int(os.environ.get("FAULTS_SEED", "14"))
    _run_and_check(tmp_path, seed, float(os.environ.get("FAULTS_SECONDS", "60")),
                   min_acked=5000)


@pytest.mark.slow
@pytest.mark.timeout(3600)
def test_faults_long(tmp_path):
    seed = int(os.environ.get("FAULTS_SEED", "1414"))
    history = _run_and_check(tmp_path, seed,
                             float(os.environ.get("FAULTS_SECONDS", "660")),
                             min_acked=50000)
    kinds = {e["kind"] for e in history["faults"]}
    assert kinds == set(cf.FAULT_KINDS), f"fault kinds not drawn: {set(cf.FAULT_KINDS) - kinds}"


def test_producer_ids_are_unique_across_brokers(tmp_path):
    """Found by the fault runner (and fixed on main meanwhile by c3336ce,
    "producer ids striped by node id"): each broker handed out producer ids
    from its own counter (<data_dir>/producer_id_block, starting at 0), so two
    idempotent producers whose InitProducerId went to different brokers get
    the same id and epoch. The partition leader then takes the second
    producer's first batch (sequence 0) for a retry of the first one's: it
    answers success with the first record's offset and stores nothing, an
    acknowledged record silently lost (with other sequence numbers:
    OUT_OF_ORDER_SEQUENCE_NUMBER, fatal for the producer).

    Over the raw wire: InitProducerId at each broker, then one batch
    (sequence 0) per producer id to the partition's leader; every answer
    must be a success at a distinct offset (three producers per broker)."""
    from broker_wire import Connection
    from test_broker_idempotence import idempotent_batch, init_producer_id, produce_v3
    from confluent_kafka.admin import AdminClient, NewTopic

    from headrace import EmbeddedCluster

    with EmbeddedCluster(3, {"zookeeper.session.timeout.ms": 6000},
                         data_dir=str(tmp_path / "cluster")) as c:
        admin = AdminClient({"bootstrap.servers": c.bootstrap_servers})
        admin.create_topics([NewTopic("pids", 1, 3, config={"min.insync.replicas": "2"})]
                            )["pids"].result(30)
        leader = c.wait_for_leaders("pids")[0]
        time.sleep(1)  # every broker applied the state
        ids = {}
        for n, node in sorted(c.nodes.items()):
            with Connection((node.host, node.port)) as conn:
                for k in range(3):  # three producers per broker
                    err, pid, epoch = init_producer_id(conn)
                    assert err == 0
                    ids[(n, k)] = (pid, epoch)
        answers = []
        lead = c.nodes[leader]
        with Connection((lead.host, lead.port)) as conn:
            for (n, k), (pid, epoch) in sorted(ids.items()):
                value = b"producer-%d-from-broker-%d" % (k, n)
                answers.append(((n, k), value, produce_v3(conn, "pids", 0,
                                                     idempotent_batch([value], pid, epoch, 0))))
    assert len(set(ids.values())) == len(ids), \
        f"brokers handed out the same producer id: {ids}; produce answers (broker, value, " \
        f"(error, base offset)): {answers}"
    assert all(err == 0 for _, _, (err, _) in answers), answers
    assert len({off for _, _, (_, off) in answers}) == len(answers), answers



@pytest.mark.timeout(300)
def test_controller_bounce_with_its_unsynced_tail_cut_loses_nothing(tmp_path):
    """Issue 37: the controller SIGKILLed and restarted within its ZooKeeper
    session, its log tails cut while it is down (a power loss with fsync
    off: acknowledged = on every ISR member, not fsynced). The next
    controller must see the bounce (broker epochs): the partitions it led get
    a new leader epoch, and no acknowledged record is lost."""
    history = cf.run_faults(tmp_path / "cluster", 37, 12.0, kinds=("kill_controller_cut_tail",),
                            settings={"headrace.acks.all.fsync": "false"})
    print(cf.summary(history))
    check = history["check"]["total"]
    assert (check["lost"], check["duplicated"], check["acked_offset_moved"],
            check["acked_without_offset"]) == (0, 0, 0, 0), \
        cf.summary(history)
    moved = 0
    for ev in history["faults"]:
        assert ev["kind"] == "kill_controller_cut_tail" and ev["cut_bytes"], ev
        for p, before in ev["states_before"].items():
            after = ev["states_after"][p]
            if before[0] == ev["node"]:  # it led p: a new leader epoch
                assert after[1] > before[1], (p, before, after)
                moved += 1
    assert moved, "the killed controller led no watched partition"


@pytest.mark.timeout(300)
def test_pauses_past_the_lag_time_fail_no_produce_of_a_plain_producer(tmp_path):
    """Issue 37: a broker paused longer than replica.lag.time.max.ms but
    within its session leaves the ISRs it follows in, and no leadership
    moves. Under acks=all producers without idempotence (retries on), that
    ISR change must fail no parked produce: any NOT_LEADER_OR_FOLLOWER would
    make the producer resend a stored batch, a duplicate or a reordering."""
    history = cf.run_faults(tmp_path / "cluster", 38, 20.0, kinds=("pause_past_lag",),
                            idempotent=False, settings={"replica.lag.time.max.ms": 2000})
    print(cf.summary(history))
    total = history["check"]["total"]
    assert total["acknowledged"] >= 3000, cf.summary(history)
    assert (total["lost"], total["duplicated"], total["reordered"],
            total["acked_offset_moved"]) == (0, 0, 0, 0), cf.summary(history)
    assert history["workload"]["delivery_errors"] == {}, cf.summary(history)
    assert history["check"]["isr"] is True
    shrunk = 0
    for ev in history["faults"]:
        assert 2.0 < ev["duration_s"] <= 3.0, ev  # past the lag time, within half the session
        for p, before in ev["states_before"].items():
            during = ev["states_paused"][p]
            assert during[:2] == before[:2], (p, before, during)  # same leader and epoch
            if before[0] != ev["node"] and ev["node"] not in during[2]:
                shrunk += 1
    assert shrunk, "no pause took the broker out of an ISR it follows"
