"""A thin helper over confluent_kafka's AdminClient.

Every call waits at most ``timeout`` seconds and turns a Kafka error into
:class:`AdminError` (a :class:`headrace.HeadraceError`) with a one-line
message, so tools can print it as is. librdkafka's own log lines are
silenced: callers see errors as exceptions only.

confluent-kafka 2.16 has no DescribeLogDirs, ListTransactions or
DescribeTransactions call, so :meth:`Admin.log_dirs` and the transaction
calls send those requests themselves (:mod:`headrace.admin_wire`), to the
brokers that Metadata lists.

One concept, the administration client the CLI and the console share, in
one class (~720 lines): the AdminClient calls, and the degraded reads
(``probe_brokers`` ... ``configs_from``: every broker asked separately
within a deadline, so that one dead broker costs only its own part). Split
it along that line when it grows further.
"""
from __future__ import annotations

import contextlib
import logging
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping

from confluent_kafka import KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import (AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource,
                                   NewPartitions, NewTopic, OffsetSpec)

from headrace.errors import HeadraceError

DEFAULT_BROKERS = "127.0.0.1:9092"
DEFAULT_TIMEOUT_S = 10.0
# Degraded reads (Admin.probe_brokers, offsets_by_leader, sizes_by_broker):
# what one broker may take to answer before it is reported as not
# answering, and what all the per-broker steps of one read may take
# together, so that a describe with a broker down answers in < 5 s.
BROKER_ANSWER_S = 2.0
DEGRADED_READ_S = 4.0

_SILENT = logging.getLogger("headrace.librdkafka")
_SILENT.addHandler(logging.NullHandler())
_SILENT.propagate = False


class AdminError(HeadraceError):
    """A request the cluster refused or did not answer in time."""


@dataclass
class LogDir:
    """One log directory of one broker (DescribeLogDirs)."""

    broker: int
    path: str
    total_bytes: int = -1   # size of its volume; -1 if the broker does not say
    usable_bytes: int = -1  # what is left for writers; -1 if unknown
    # {(topic, partition): bytes of its segment files}
    sizes: dict[tuple[str, int], int] = field(default_factory=dict)
    # Kafka's error name when the directory is offline (KAFKA_STORAGE_ERROR),
    # else None; an offline directory lists no partitions.
    error: str | None = None
    # {(topic, partition): bytes} of copies being moved here
    # (AlterReplicaLogDirs, DescribeLogDirs' is_future_key); not in `sizes`.
    future: dict[tuple[str, int], int] = field(default_factory=dict)


@dataclass
class Transaction:
    """One transactional id as its coordinator reports it (ListTransactions,
    completed by DescribeTransactions where it answered)."""

    transactional_id: str
    producer_id: int
    state: str                       # Kafka's name: Ongoing, CompleteCommit, ...
    producer_epoch: int | None = None
    timeout_ms: int | None = None
    start_time_ms: int | None = None  # -1 when no transaction is in progress
    partitions: list[tuple[str, int]] = field(default_factory=list)  # sorted
    coordinator: int | None = None


def client_config(brokers: str, **extra: Any) -> dict[str, Any]:
    """librdkafka settings shared by every headrace tool: bootstrap servers,
    no log lines on stderr (errors surface as exceptions)."""
    conf = {"bootstrap.servers": brokers, "logger": _SILENT, "error_cb": lambda err: None,
            "log.connection.close": False,
            # Connect to the bootstrap brokers at once: with sparse
            # connections librdkafka paces its first connect by half of
            # reconnect.backoff.ms, ~50 ms of every command's start.
            "enable.sparse.connections": False}
    conf.update(extra)
    return conf


def describe_error(e: BaseException) -> str:
    """One line for a KafkaException / KafkaError / anything else."""
    err = e.args[0] if isinstance(e, KafkaException) and e.args else e
    if isinstance(e, TimeoutError) and not str(e):
        return "no answer in time (TimeoutError)"
    if isinstance(err, KafkaError):
        text = err.str() or err.name()
        if err.code() in (KafkaError._TRANSPORT, KafkaError._TIMED_OUT,
                          KafkaError._ALL_BROKERS_DOWN):
            return f"broker unreachable or not answering ({text})"
        return f"{text} ({err.name()})" if err.name() not in text else text
    text = str(e).strip()
    return text.splitlines()[0] if text else type(e).__name__


def _why_down(text: str, wait: float) -> str:
    """A WireError's text -> why the broker is not answering, short."""
    low = text.lower()
    if "refused" in low:
        return "connection refused"
    if "timed out" in low or "timeout" in low:
        return f"no answer within {wait:g}s"
    if "closed" in low or "reset" in low:
        return "connection closed"
    return text.split(": ", 1)[-1] if ": " in text else text


def _wait(future, timeout: float, what: str):
    try:
        return future.result(timeout=timeout)
    except KafkaException as e:
        raise AdminError(f"{what}: {describe_error(e)}") from None
    except TimeoutError:
        raise AdminError(f"{what}: broker unreachable or not answering within "
                         f"{timeout:g}s") from None


class Admin:
    """Cluster administration over one AdminClient.

    REQUIRES: ``brokers`` is ``HOST:PORT[,HOST:PORT...]``.
    """

    def __init__(self, brokers: str = DEFAULT_BROKERS, timeout: float = DEFAULT_TIMEOUT_S,
                 settings: Mapping[str, str] | None = None):
        """``settings``: librdkafka client properties (security.protocol,
        sasl.*, ssl.*; headrace.client_settings) for every connection."""
        self.brokers = brokers
        self.timeout = timeout
        self.settings = dict(settings or {})
        self.client = AdminClient(client_config(brokers, **self.settings))

    # -- degraded reads: what the reachable brokers say, and who is down ------
    def read_deadline(self) -> float:
        """The monotonic time by which the per-broker steps of one read end."""
        import time

        return time.monotonic() + min(self.timeout, DEGRADED_READ_S)

    def _ask_each(self, brokers: list[tuple[int, str, int]], wait: float, end: float,
                  request: Callable[[Any], Any], missing: str
                  ) -> tuple[dict[int, Any], dict[int, str]]:
        """``request(connection)`` at each of ``brokers`` ((id, host, port))
        in parallel, each connection given ``wait`` s, waited for until the
        monotonic time ``end``: ({node: answer}, {node: why not}); a broker
        still silent at ``end`` is ``missing``. The one fan-out of the
        degraded reads below."""
        import threading
        import time

        from headrace.admin_wire import Connection, WireError

        out: dict[int, Any] = {}
        errors: dict[int, str] = {}
        lock = threading.Lock()

        def ask(node: int, host: str, port: int) -> None:
            try:
                conn = Connection(host, port, wait, self.settings)
                try:
                    answer = request(conn)
                finally:
                    conn.close()
                with lock:
                    out[node] = answer
            except (WireError, OSError) as e:
                with lock:
                    errors[node] = _why_down(str(e), wait)
            except Exception as e:  # noqa: BLE001 - any failure means "not answering"
                with lock:
                    errors[node] = describe_error(e)

        threads = [threading.Thread(target=ask, args=b, daemon=True) for b in brokers]
        for t in threads:
            t.start()
        for t in threads:
            t.join(max(0.0, end - time.monotonic()))
        with lock:
            for node, _, _ in brokers:
                if node not in out:
                    errors.setdefault(node, missing)
            return dict(out), dict(errors)

    def ask_each(self, brokers: list[tuple[int, str, int]], deadline: float,
                 request: Callable[[Any], Any]) -> tuple[dict[int, Any], dict[int, str]]:
        """``request(connection)`` at each of ``brokers`` in parallel by
        ``deadline``: ({node: answer}, {node: why not})."""
        import time

        wait = max(0.05, deadline - time.monotonic())
        return self._ask_each(brokers, wait, deadline, request, "no answer in time")

    def probe_brokers(self, brokers: Iterable[tuple[int, str, int]],
                      deadline: float | None = None) -> dict[int, str | None]:
        """{node id: None when it answers ApiVersions, else why not} for
        ``brokers`` ((id, host, port)), asked in parallel with the client
        settings, each given BROKER_ANSWER_S (and no more than ``deadline``).
        A SIGKILLed broker is "connection refused" within milliseconds; a
        stopped one (SIGSTOP, a hung host) "no answer within 2s"."""
        import time

        from headrace.admin_wire import api_versions

        brokers = list(brokers)
        wait = min(self.timeout, BROKER_ANSWER_S)
        if deadline is not None:
            wait = max(0.05, min(wait, deadline - time.monotonic()))
        _, errors = self._ask_each(brokers, wait, time.monotonic() + wait + 0.5, api_versions,
                                   f"no answer within {wait:g}s")
        return {node: errors.get(node) for node, _, _ in brokers}

    def offsets_by_leader(self, leaders: Mapping[tuple[str, int], int], spec: str,
                          deadline: float) -> tuple[dict[tuple[str, int], int],
                                                    dict[tuple[str, int], str]]:
        """ListOffsets ("earliest" / "latest") of each (topic, partition),
        one request per leader so that one broker's silence costs only its
        partitions: ({(topic, partition): offset}, {(topic, partition): why
        not}), returned by ``deadline``."""
        import time

        by_leader: dict[int, list[TopicPartition]] = {}
        for (t, p), leader in leaders.items():
            by_leader.setdefault(leader, []).append(TopicPartition(t, p))
        s = OffsetSpec.earliest() if spec == "earliest" else OffsetSpec.latest()
        wait = max(0.05, deadline - time.monotonic())
        pending = []
        for leader, tps in sorted(by_leader.items()):
            fs = self.client.list_offsets({tp: s for tp in tps}, request_timeout=wait)
            pending += [(leader, tp, f) for tp, f in fs.items()]
        out: dict[tuple[str, int], int] = {}
        errors: dict[tuple[str, int], str] = {}
        for leader, tp, f in pending:
            key = (tp.topic, tp.partition)
            try:
                out[key] = f.result(timeout=max(0.01, deadline - time.monotonic())).offset
            except KafkaException as e:
                errors[key] = f"leader {leader}: {describe_error(e)}"
            except Exception:  # noqa: BLE001 - concurrent.futures.TimeoutError
                errors[key] = f"leader {leader}: no answer in time"
        return out, errors

    def sizes_by_broker(self, brokers: Iterable[tuple[int, str, int]], topic: str,
                        partitions: list[int], deadline: float
                        ) -> tuple[dict[int, dict[int, int]], dict[int, str]]:
        """DescribeLogDirs of one topic at each broker, in parallel:
        ({broker: {partition: bytes over its online dirs}}, {broker: why
        not}), returned by ``deadline``."""
        import time

        from headrace.admin_wire import describe_log_dirs

        wait = max(0.05, deadline - time.monotonic())
        answers, errors = self._ask_each(
            list(brokers), wait, deadline,
            lambda conn: describe_log_dirs(conn, {topic: partitions}), "no answer in time")
        out: dict[int, dict[int, int]] = {}
        for node, dirs in answers.items():
            sizes = out.setdefault(node, {})
            for a in dirs:
                if a.error_code:
                    continue
                for (t, p), size in a.sizes.items():
                    if t == topic:
                        sizes[p] = sizes.get(p, 0) + size
        return out, errors

    def log_dirs_at(self, brokers: Iterable[tuple[int, str, int]], deadline: float
                    ) -> tuple[list[LogDir], dict[int, str]]:
        """DescribeLogDirs (every partition) at each of ``brokers`` in
        parallel, as :meth:`sizes_by_broker` but whole: ([LogDir] of the
        brokers that answered, {broker: why not}), returned by ``deadline``."""
        from headrace.admin_wire import describe_log_dirs, error_name

        answers, errors = self.ask_each(list(brokers), deadline,
                                        lambda conn: describe_log_dirs(conn, None))
        out = [LogDir(node, a.path, a.total_bytes, a.usable_bytes, a.sizes,
                      error_name(a.error_code) if a.error_code else None, a.future)
               for node, dirs in answers.items() for a in dirs]
        return sorted(out, key=lambda d: (d.broker, d.path)), errors

    def groups_from(self, brokers: Iterable[tuple[int, str, int]], deadline: float
                    ) -> tuple[list[tuple[str, str]], dict[int, str]]:
        """ListGroups at each of ``brokers`` in parallel (each lists the
        groups it coordinates): ([(group id, state as librdkafka names it,
        e.g. EMPTY)] sorted, {broker: why not}), returned by ``deadline``."""
        import re

        from headrace.admin_wire import CONSUMER_GROUP_TYPES, list_groups

        answers, errors = self.ask_each(list(brokers), deadline,
                                        lambda conn: list_groups(conn, CONSUMER_GROUP_TYPES))
        found: dict[str, str] = {}
        for listed in answers.values():
            for gid, _, state in listed:
                found[gid] = re.sub(r"(?<!^)(?=[A-Z])", "_", state or "Unknown").upper()
        return sorted(found.items()), errors

    def group_coordinator(self, group: str, brokers: Iterable[tuple[int, str, int]],
                          deadline: float) -> tuple[int, str, int]:
        """FindCoordinator of ``group`` asked of the first of ``brokers``
        that answers: (node, host, port); AdminError naming Kafka's error
        (e.g. COORDINATOR_NOT_AVAILABLE) or the brokers' silence."""
        import time

        from headrace.admin_wire import Connection, WireError, find_coordinator

        why = "no broker to ask"
        for _, host, port in brokers:
            wait = deadline - time.monotonic()
            if wait <= 0:
                break
            try:
                conn = Connection(host, port, wait, self.settings)
                try:
                    return find_coordinator(conn, group, 0)
                finally:
                    conn.close()
            except WireError as e:
                why = str(e)
                if "find coordinator" in why:
                    break  # the broker answered with an error
        raise AdminError(f"cannot find the coordinator of group {group!r}: {why}")

    def configs_from(self, brokers: Iterable[tuple[int, str, int]], resource_type: int,
                     name: str, deadline: float | None = None,
                     keys: list[str] | None = None):
        """DescribeConfigs of one resource (headrace.admin_wire.RESOURCE_*)
        asked of the first of ``brokers`` that answers: [ConfigAnswer]
        sorted by key; AdminError with Kafka's error, or the brokers'
        silence."""
        import time

        from headrace.admin_wire import Connection, WireError, describe_configs

        why = "no broker to ask"
        for node, host, port in brokers:
            wait = self.timeout if deadline is None else deadline - time.monotonic()
            if wait <= 0:
                why = f"{why}; out of time"
                break
            try:
                conn = Connection(host, port, wait, self.settings)
            except WireError as e:
                why = f"broker {node}: {_why_down(str(e), wait)}"
                continue
            try:
                return sorted(describe_configs(conn, resource_type, name, keys),
                              key=lambda c: c.name)
            except WireError as e:
                if f"broker {host}:{port}" in str(e):
                    why = f"broker {node}: {_why_down(str(e), wait)}"
                    continue
                raise AdminError(f"cannot describe configs: {e}") from None
            finally:
                conn.close()
        raise AdminError(f"cannot describe configs: {why}")

    def alter_configs_at(self, broker: tuple[int, str, int], resource_type: int, name: str,
                         ops: list[tuple[str, str | None]], validate_only: bool = False) -> None:
        """IncrementalAlterConfigs of one resource sent to ``broker``: SET
        (value) / DELETE (None) per key; AdminError with Kafka's error."""
        from headrace.admin_wire import Connection, WireError, incremental_alter_configs

        node, host, port = broker
        with self._wire(host, port, "alter configs") as conn:
            try:
                incremental_alter_configs(conn, resource_type, name, ops, validate_only)
            except WireError as e:
                raise AdminError(f"cannot alter configs: {e}") from None

    # -- metadata ------------------------------------------------------------
    def metadata(self, topic: str | None = None):
        """ClusterMetadata of every topic (no auto-creation); raises AdminError
        if no broker answers within the timeout.

        Asked in attempts of BROKER_ANSWER_S: a Metadata request librdkafka
        sent to (or queued for) a broker that has just died waits its whole
        timeout (seen: 5 s, once, right after a SIGKILL), where asking again
        reaches a live broker at once."""
        import time

        deadline = time.monotonic() + self.timeout
        while True:
            left = deadline - time.monotonic()
            try:
                return self.client.list_topics(timeout=max(0.05, min(BROKER_ANSWER_S, left)))
            except KafkaException as e:
                err = e.args[0] if e.args else None
                retriable = isinstance(err, KafkaError) and err.code() in (
                    KafkaError._TIMED_OUT, KafkaError._TRANSPORT, KafkaError._ALL_BROKERS_DOWN)
                if not retriable or deadline - time.monotonic() < 0.1:
                    raise AdminError(describe_error(e)) from None

    def topic_metadata(self, topic: str):
        """TopicMetadata of an existing topic; AdminError if it is unknown."""
        md = self.metadata().topics.get(topic)
        if md is None or md.error is not None and md.error.code() == \
                KafkaError.UNKNOWN_TOPIC_OR_PART:
            raise AdminError(f"unknown topic {topic!r}")
        return md

    def topics(self) -> list[str]:
        return sorted(self.metadata().topics)

    def elect_leaders(self, topic: str, partitions: list[int] | None = None,
                      unclean: bool = False) -> dict[int, str | None]:
        """ElectLeaders (preferred, or unclean) for `partitions` of `topic`
        (None: all of them): {partition: None (elected) or the error's name,
        e.g. ELECTION_NOT_NEEDED}."""
        from confluent_kafka import ElectionType

        if partitions is None:
            partitions = sorted(self.topic_metadata(topic).partitions)
        tps = [TopicPartition(topic, p) for p in partitions]
        kind = ElectionType.UNCLEAN if unclean else ElectionType.PREFERRED
        result = _wait(self.client.elect_leaders(kind, tps),
                       self.timeout, f"elect leaders of {topic}")
        out: dict[int, str | None] = {}
        for tp, err in result.items():
            out[tp.partition] = None if err is None else (err.name() if hasattr(err, "name")
                                                          else str(err))
        return out

    # -- topics --------------------------------------------------------------
    def create_topic(self, name: str, partitions: int, replication_factor: int = 1,
                     config: Mapping[str, str] | None = None) -> None:
        nt = NewTopic(name, num_partitions=partitions, replication_factor=replication_factor,
                      config=dict(config or {}))
        fs = self.client.create_topics([nt], operation_timeout=self.timeout)
        _wait(fs[name], self.timeout, f"cannot create topic {name!r}")

    def delete_topic(self, name: str) -> None:
        self.topic_metadata(name)
        fs = self.client.delete_topics([name], operation_timeout=self.timeout)
        _wait(fs[name], self.timeout, f"cannot delete topic {name!r}")

    def add_partitions(self, name: str, new_total: int) -> None:
        fs = self.client.create_partitions([NewPartitions(name, new_total)],
                                           operation_timeout=self.timeout)
        _wait(fs[name], self.timeout, f"cannot add partitions to {name!r}")

    def topic_config(self, name: str, timeout: float | None = None) -> dict[str, Any]:
        """{key: ConfigEntry} of a topic (``timeout``: instead of the Admin's)."""
        timeout = self.timeout if timeout is None else timeout
        res = ConfigResource(ConfigResource.Type.TOPIC, name)
        fs = self.client.describe_configs([res], request_timeout=timeout)
        return _wait(fs[res], timeout, f"cannot describe configs of {name!r}")

    def alter_topic_config(self, name: str, set_: Mapping[str, str],
                           delete: Iterable[str] = ()) -> None:
        """Incremental: sets ``set_`` keys, resets ``delete`` keys to default."""
        self._alter_config(ConfigResource.Type.TOPIC, name, set_, delete)

    def alter_broker_config(self, node_id: int, set_: Mapping[str, str],
                            delete: Iterable[str] = ()) -> None:
        """Dynamic configs of broker ``node_id``, incrementally as
        :meth:`alter_topic_config`."""
        self._alter_config(ConfigResource.Type.BROKER, str(node_id), set_, delete)

    def _alter_config(self, kind, name: str, set_: Mapping[str, str],
                      delete: Iterable[str]) -> None:
        entries = [ConfigEntry(k, v, incremental_operation=AlterConfigOpType.SET)
                   for k, v in set_.items()]
        entries += [ConfigEntry(k, None, incremental_operation=AlterConfigOpType.DELETE)
                    for k in delete]
        res = ConfigResource(kind, name, incremental_configs=entries)
        fs = self.client.incremental_alter_configs([res], request_timeout=self.timeout)
        _wait(fs[res], self.timeout, f"cannot alter configs of {name!r}")

    # -- offsets -------------------------------------------------------------
    def list_offsets(self, partitions: Iterable[TopicPartition], spec: str | int
                     ) -> dict[tuple[str, int], int]:
        """Offsets by ``spec``: "earliest", "latest" or a timestamp in ms
        (the first offset at/after it; the end offset if none)."""
        if spec == "earliest":
            s = OffsetSpec.earliest()
        elif spec == "latest":
            s = OffsetSpec.latest()
        else:
            s = OffsetSpec.for_timestamp(int(spec))
        req = {TopicPartition(tp.topic, tp.partition): s for tp in partitions}
        if not req:
            return {}
        fs = self.client.list_offsets(req, request_timeout=self.timeout)
        out = {}
        for tp, f in fs.items():
            out[(tp.topic, tp.partition)] = _wait(f, self.timeout, "cannot list offsets").offset
        if spec not in ("earliest", "latest"):
            missing = [tp for tp in req if out[(tp.topic, tp.partition)] < 0]
            if missing:
                ends = self.list_offsets(missing, "latest")
                out.update(ends)
        return out

    def delete_records(self, topic: str, before: Mapping[int, int]) -> dict[int, int]:
        """DeleteRecords: for each {partition: offset} deletes the records
        below offset (-1: below the high watermark, i.e. all); returns
        {partition: the new log start offset (low watermark)}."""
        tps = [TopicPartition(topic, p, o) for p, o in sorted(before.items())]
        fs = self.client.delete_records(tps, request_timeout=self.timeout,
                                        operation_timeout=self.timeout)
        return {tp.partition: _wait(f, self.timeout, f"cannot delete records of "
                                    f"{topic}[{tp.partition}]").low_watermark
                for tp, f in fs.items()}

    def describe_cluster(self) -> dict[str, Any]:
        """DescribeCluster: {"cluster_id", "controller" (id or -1), "brokers":
        [{"id", "host", "port", "rack"}] sorted by id}."""
        res = _wait(self.client.describe_cluster(request_timeout=self.timeout),
                    self.timeout, "cannot describe cluster")
        nodes = sorted(res.nodes, key=lambda n: n.id)
        return {"cluster_id": res.cluster_id,
                "controller": res.controller.id if res.controller is not None else -1,
                "brokers": [{"id": n.id, "host": n.host, "port": n.port, "rack": n.rack}
                            for n in nodes]}

    # -- groups --------------------------------------------------------------
    def groups(self) -> list[Any]:
        """ConsumerGroupListing of every consumer group (classic and
        KIP-848; not share groups: `headrace share-group`)."""
        from confluent_kafka import ConsumerGroupType

        types = {ConsumerGroupType.CONSUMER, ConsumerGroupType.CLASSIC}
        res = _wait(self.client.list_consumer_groups(request_timeout=self.timeout, types=types),
                    self.timeout, "cannot list groups")
        if res.errors:
            raise AdminError(f"cannot list groups: {describe_error(res.errors[0])}")
        if not res.valid:
            # librdkafka answers "no groups" when it reached no broker at all:
            # tell that apart from an empty cluster.
            try:
                self.metadata()
            except AdminError as e:
                raise AdminError(f"cannot list groups: {e}") from None
        return sorted(res.valid, key=lambda g: g.group_id)

    def describe_group(self, group: str):
        fs = self.client.describe_consumer_groups([group], request_timeout=self.timeout)
        return _wait(fs[group], self.timeout, f"cannot describe group {group!r}")

    def committed(self, group: str) -> dict[tuple[str, int], int]:
        """{(topic, partition): committed offset} of a group."""
        from confluent_kafka import ConsumerGroupTopicPartitions
        fs = self.client.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)],
                                                     request_timeout=self.timeout)
        res = _wait(fs[group], self.timeout, f"cannot fetch offsets of group {group!r}")
        return {(tp.topic, tp.partition): tp.offset for tp in res.topic_partitions
                if tp.offset >= 0}

    def alter_committed(self, group: str, offsets: Mapping[tuple[str, int], int]) -> None:
        from confluent_kafka import ConsumerGroupTopicPartitions
        tps = [TopicPartition(t, p, o) for (t, p), o in sorted(offsets.items())]
        fs = self.client.alter_consumer_group_offsets(
            [ConsumerGroupTopicPartitions(group, tps)], request_timeout=self.timeout)
        res = _wait(fs[group], self.timeout, f"cannot set offsets of group {group!r}")
        for tp in res.topic_partitions:
            if tp.error is not None:
                raise AdminError(f"cannot set offset of {tp.topic}[{tp.partition}]: "
                                 f"{describe_error(tp.error)}")

    def delete_group(self, group: str) -> None:
        fs = self.client.delete_consumer_groups([group], request_timeout=self.timeout)
        _wait(fs[group], self.timeout, f"cannot delete group {group!r}")

    # -- raw requests for what confluent-kafka lacks (headrace.admin_wire) ---
    @contextlib.contextmanager
    def _wire(self, host: str, port: int, what: str):
        """A Connection to one broker, closed on exit; its errors become
        AdminError("cannot <what>: ...")."""
        from headrace.admin_wire import Connection, WireError

        try:
            conn = Connection(host, port, self.timeout, self.settings)
        except WireError as e:
            raise AdminError(f"cannot {what}: {e}") from None
        try:
            yield conn
        except WireError as e:
            raise AdminError(f"cannot {what}: {e}") from None
        finally:
            conn.close()

    # -- client quotas (DescribeClientQuotas 48, AlterClientQuotas 49) -----------
    def describe_quotas(self, components: list[tuple[str, int, str | None]] = (),
                        strict: bool = False
                        ) -> list[tuple[list[tuple[str, str | None]], dict[str, float]]]:
        """[(entity [(type, name or None for the default)], {key: value})]
        matching ``components`` ((entity_type, 0 exact / 1 default / 2 any,
        name)); AdminError with Kafka's error otherwise."""
        from headrace.admin_wire import describe_client_quotas

        _, host, port = self._brokers()[0]
        with self._wire(host, port, "describe quotas") as conn:
            return describe_client_quotas(conn, list(components), strict)

    def alter_quotas(self, entity: list[tuple[str, str | None]],
                     values: Mapping[str, float | None], validate_only: bool = False) -> None:
        """Sets (a number) or removes (None) quota keys of one entity."""
        from headrace.admin_wire import alter_client_quotas, error_name

        _, host, port = self._brokers()[0]
        with self._wire(host, port, "alter quotas") as conn:
            [(code, message)] = alter_client_quotas(conn, [(entity, list(values.items()))],
                                                    validate_only)
        if code:
            raise AdminError(f"cannot alter quotas: {message or error_name(code)} "
                             f"({error_name(code)})")

    def _brokers(self) -> list[tuple[int, str, int]]:
        md = self.metadata()
        return sorted((b.id, b.host, b.port) for b in md.brokers.values())

    # -- log dirs -----------------------------------------------------------
    def log_dirs(self, topics: Iterable[str] | None = None) -> list[LogDir]:
        """Every broker's log directories with the size of each partition in
        them; ``topics`` limits the partitions to those topics (None = all).
        An offline directory is listed with ``error`` set (Kafka's name, e.g.
        KAFKA_STORAGE_ERROR). Raises AdminError if a broker does not answer."""
        from headrace.admin_wire import describe_log_dirs, error_name

        md = self.metadata()
        spec = None
        if topics is not None:
            spec = {t: sorted(md.topics[t].partitions) for t in topics if t in md.topics}
        out = []
        for node, host, port in sorted((b.id, b.host, b.port) for b in md.brokers.values()):
            with self._wire(host, port, "describe log dirs") as conn:
                answers = describe_log_dirs(conn, spec)
            for a in answers:
                out.append(LogDir(node, a.path, a.total_bytes, a.usable_bytes, a.sizes,
                                  error_name(a.error_code) if a.error_code else None,
                                  a.future))
        return out

    # -- partition reassignments (AlterPartitionReassignments 45, List 46) --
    def reassign(self, targets: Mapping[tuple[str, int], list[int] | None]
                 ) -> dict[tuple[str, int], str | None]:
        """Starts (target replicas) or cancels (None) reassignments:
        {(topic, partition): None (accepted) or the error's name}. Any
        broker hands the request to the controller."""
        from headrace.admin_wire import alter_partition_reassignments, error_name

        _, host, port = self._brokers()[0]
        with self._wire(host, port, "reassign partitions") as conn:
            answers = alter_partition_reassignments(conn, dict(targets),
                                                    int(self.timeout * 1000))
        return {tp: None if code == 0 else error_name(code) + (f": {m}" if m else "")
                for tp, (code, m) in answers.items()}

    def reassignments(self) -> dict[tuple[str, int], tuple[list[int], list[int], list[int]]]:
        """The reassignments in progress: {(topic, partition): (replicas,
        adding, removing)}."""
        from headrace.admin_wire import list_partition_reassignments

        _, host, port = self._brokers()[0]
        with self._wire(host, port, "list reassignments") as conn:
            return list_partition_reassignments(conn, int(self.timeout * 1000))

    # -- transactions (ListTransactions 66, DescribeTransactions 65) --------
    def transactions(self, states: Iterable[str] = ()) -> list[Transaction]:
        """Every transactional id of every broker's coordinator (``states``:
        only those in these states, Kafka's names), each completed by
        DescribeTransactions (epoch, timeout, start time, partitions) unless
        it vanished in between. Sorted by transactional id."""
        from headrace.admin_wire import list_transactions

        brokers = self._brokers()
        found: dict[str, Transaction] = {}
        for _, host, port in brokers:
            with self._wire(host, port, "list transactions") as conn:
                for tid, pid, state in list_transactions(conn, list(states)):
                    found[tid] = Transaction(tid, pid, state)
        found.update({t.transactional_id: t for t in self._describe(sorted(found), brokers)
                      if not isinstance(t, str)})
        return [found[k] for k in sorted(found)]

    def describe_transaction(self, transactional_id: str) -> Transaction:
        """DescribeTransactions of one id; AdminError (naming Kafka's error,
        e.g. TRANSACTIONAL_ID_NOT_FOUND) when its coordinator has none."""
        [t] = self._describe([transactional_id], self._brokers())
        if isinstance(t, str):
            raise AdminError(f"cannot describe transaction {transactional_id!r}: {t}")
        return t

    def _describe(self, ids: list[str], brokers) -> list[Transaction | str]:
        """DescribeTransactions of ``ids``, each at its coordinator
        (FindCoordinator through the first broker): a Transaction, or the
        Kafka error name where the coordinator has none."""
        from headrace.admin_wire import (describe_transactions, error_name,
                                         find_transaction_coordinator)

        if not ids:
            return []
        by_node: dict[tuple[int, str, int], list[str]] = {}
        _, host, port = brokers[0]
        with self._wire(host, port, "find transaction coordinators") as conn:
            for tid in ids:
                by_node.setdefault(find_transaction_coordinator(conn, tid), []).append(tid)
        answers: dict[str, Transaction | str] = {}
        for (node, host, port), group in by_node.items():
            with self._wire(host, port, "describe transactions") as conn:
                for a in describe_transactions(conn, group):
                    answers[a.transactional_id] = error_name(a.error_code) if a.error_code \
                        else Transaction(a.transactional_id, a.producer_id, a.state,
                                         a.producer_epoch, a.timeout_ms, a.start_time_ms,
                                         a.partitions, node)
        return [answers.get(tid, "no answer") for tid in ids]

    def partition_sizes(self, topic: str, leaders: Mapping[int, int] | None = None
                        ) -> dict[int, int]:
        """{partition: bytes} of one topic, summed over log dirs and brokers;
        with `leaders` ({partition: broker}), only the leader replica's."""
        out: dict[int, int] = {}
        for d in self.log_dirs([topic]):
            if d.error:
                continue
            for (t, p), size in d.sizes.items():
                if leaders is not None and leaders.get(p) != d.broker:
                    continue
                if t == topic:
                    out[p] = out.get(p, 0) + size
        return out
