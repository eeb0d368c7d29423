"""Replica placement for new topics and partitions: Kafka's
``AdminUtils.assignReplicasToBrokers``, rack-aware when every broker has a
rack, and the validation of an explicit assignment.

Rack-unaware: the first replica of partition p is broker
``(p + start_index) % n`` of the sorted broker list; the followers follow it
at a shift that grows by one every n partitions, so that leaders and
followers both spread evenly. Rack-aware: the same walk over a list that
alternates racks (r1, r2, r3, r1, ...), skipping a broker whose rack already
holds a replica of the partition until every rack has one.
"""
from __future__ import annotations

import random
from typing import Iterable, Mapping, Sequence


class PlacementError(ValueError):
    """Placement impossible or an assignment invalid; ``error_code`` is the
    Kafka error code a CreateTopics/CreatePartitions answer carries."""

    def __init__(self, error_code: int, message: str):
        super().__init__(message)
        self.error_code = error_code


INVALID_PARTITIONS = 37
INVALID_REPLICATION_FACTOR = 38
INVALID_REPLICA_ASSIGNMENT = 39


def _replica_index(first: int, second_shift: int, replica: int, n: int) -> int:
    shift = 1 + (second_shift + replica) % (n - 1)
    return (first + shift) % n


def rack_alternated(brokers: Mapping[int, str]) -> list[int]:
    """[(1,a),(2,a),(3,b),(4,c)] -> [1, 3, 4, 2]: one broker per rack in turn,
    racks and brokers within a rack sorted (Kafka's getRackAlternatedBrokerList)."""
    by_rack: dict[str, list[int]] = {}
    for b, rack in sorted(brokers.items()):
        by_rack.setdefault(rack, []).append(b)
    racks = sorted(by_rack)
    out: list[int] = []
    for k in range(max(len(v) for v in by_rack.values()) if by_rack else 0):
        for rack in racks:
            if k < len(by_rack[rack]):
                out.append(by_rack[rack][k])
    return out


def assign_replicas(brokers: Mapping[int, str | None], num_partitions: int,
                    replication_factor: int, start_index: int | None = None,
                    start_partition_id: int = 0, next_replica_shift: int | None = None,
                    rng: random.Random | None = None) -> dict[int, list[int]]:
    """{partition: [broker ids]} for partitions ``start_partition_id ..
    start_partition_id + num_partitions - 1`` over ``brokers`` ({id: rack or
    None}). ``start_index``/``next_replica_shift`` default to random, as in
    Kafka (so that topics do not all lead on the same broker)."""
    if num_partitions <= 0:
        raise PlacementError(INVALID_PARTITIONS, "Number of partitions must be larger than 0.")
    if replication_factor <= 0:
        raise PlacementError(INVALID_REPLICATION_FACTOR,
                             "Replication factor must be larger than 0.")
    if replication_factor > len(brokers):
        raise PlacementError(INVALID_REPLICATION_FACTOR,
                             f"Replication factor: {replication_factor} larger than available "
                             f"brokers: {len(brokers)}.")
    rng = rng or random.Random()
    racks = {b: r for b, r in brokers.items() if r is not None}
    if racks and len(racks) != len(brokers):
        raise PlacementError(INVALID_REPLICA_ASSIGNMENT,
                             "Not all brokers have rack information for replica rack aware "
                             "assignment.")
    if racks:
        ordered = rack_alternated(racks)
        rack_of = racks
        num_racks = len(set(racks.values()))
    else:
        ordered = sorted(brokers)
        rack_of = None
        num_racks = 0
    n = len(ordered)
    start = start_index if start_index is not None and start_index >= 0 else rng.randrange(n)
    shift = next_replica_shift if next_replica_shift is not None and next_replica_shift >= 0 \
        else rng.randrange(n)
    out: dict[int, list[int]] = {}
    pid = start_partition_id
    for _ in range(num_partitions):
        if pid > 0 and pid % n == 0:
            shift += 1
        first = (pid + start) % n
        leader = ordered[first]
        replicas = [leader]
        if rack_of is None:
            for j in range(replication_factor - 1):
                replicas.append(ordered[_replica_index(first, shift, j, n)])
        else:
            used_racks = {rack_of[leader]}
            used = {leader}
            k = 0
            for _ in range(replication_factor - 1):
                while True:
                    b = ordered[_replica_index(first, shift * num_racks, k, n)]
                    k += 1
                    rack_ok = rack_of[b] not in used_racks or len(used_racks) == num_racks
                    broker_ok = b not in used or len(used) == n
                    if rack_ok and broker_ok:
                        replicas.append(b)
                        used_racks.add(rack_of[b])
                        used.add(b)
                        break
        out[pid] = replicas
        pid += 1
    return out


def validate_assignment(assignment: Mapping[int, Sequence[int]], known_brokers: Iterable[int],
                        first_partition: int = 0) -> dict[int, list[int]]:
    """Checks an explicit assignment as Kafka's CreateTopics does: partitions
    ``first_partition..`` consecutive, each replica list non-empty, without
    duplicates, of one size, naming registered brokers only. Returns it with
    int keys; raises PlacementError(INVALID_REPLICA_ASSIGNMENT)."""
    known = set(known_brokers)
    try:
        parts = {int(p): [int(b) for b in r] for p, r in assignment.items()}
    except (TypeError, ValueError):
        raise PlacementError(INVALID_REPLICA_ASSIGNMENT,
                             "Partition ids and broker ids must be integers.") from None
    if not parts:
        raise PlacementError(INVALID_REPLICA_ASSIGNMENT, "The assignment is empty.")
    expected = list(range(first_partition, first_partition + len(parts)))
    if sorted(parts) != expected:
        raise PlacementError(INVALID_REPLICA_ASSIGNMENT,
                             f"Partitions should be a consecutive 0-based integer sequence "
                             f"(expected {expected[0]}..{expected[-1]}), got {sorted(parts)}.")
    sizes = set()
    for p, replicas in sorted(parts.items()):
        if not replicas:
            raise PlacementError(INVALID_REPLICA_ASSIGNMENT,
                                 f"Replica list of partition {p} is empty.")
        if len(set(replicas)) != len(replicas):
            raise PlacementError(INVALID_REPLICA_ASSIGNMENT,
                                 f"Duplicate brokers not allowed in replica assignment: "
                                 f"{replicas} for partition {p}.")
        unknown = [b for b in replicas if b not in known]
        if unknown:
            raise PlacementError(INVALID_REPLICA_ASSIGNMENT,
                                 f"Unknown broker(s) {unknown} in the replica assignment of "
                                 f"partition {p}.")
        sizes.add(len(replicas))
    if len(sizes) > 1:
        raise PlacementError(INVALID_REPLICA_ASSIGNMENT,
                             "All partitions should have the same number of replicas.")
    return parts
