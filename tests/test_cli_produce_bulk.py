"""`headrace produce`'s two paths against a real broker process: plain values
go through headrace._core.LineProducer (one call per chunk), everything else
— and everything with HEADRACE_CLI_PRODUCER=python — through
confluent_kafka's Producer (one call per record). Both must store the same
records, count the same failures with the same words, and survive a full
local queue."""
from __future__ import annotations

import pytest

from cli_run import headrace, ok, one_error_line

pytestmark = pytest.mark.timeout(120)

PATHS = {"bulk": {}, "per-record": {"HEADRACE_CLI_PRODUCER": "python"}}


def _topic(b, name, *config):
    args = ["topic", "create", name, "--partitions", "1"]
    for c in config:
        args += ["--config", c]
    ok(headrace(*args, brokers=b))
    return name


def _consume_raw(b, topic) -> bytes:
    """Every value of partition 0, each followed by NUL (values hold newlines)."""
    r = headrace("consume", topic, "--partition", "0", "--delimiter", "", brokers=b)
    ok(r)
    return r.stdout.encode()


@pytest.mark.parametrize("path", PATHS)
def test_both_paths_store_the_same_records(module_broker, path):
    """CRLF lines, an empty line, a last line without delimiter, a NUL
    delimiter with newlines inside values, and --partition: the stored values
    and the summary are the same on both paths."""
    b = module_broker.bootstrap
    env = PATHS[path]
    t = _topic(b, f"bulk-lines-{path}")
    r = ok(headrace("produce", t, input="a\r\nb\n\nlast", brokers=b, env=env))
    assert "produced 4 of 4 records" in r.stderr and "0:4" in r.stderr, r.stderr
    r = ok(headrace("produce", t, "-D", "\\0", "--partition", "0",
                    input=b"x\ny\x00z\x00", brokers=b, env=env))
    assert "produced 2 of 2 records" in r.stderr, r.stderr
    assert _consume_raw(b, t) == b"a\x00b\x00\x00last\x00x\ny\x00z\x00"


@pytest.mark.parametrize("path", PATHS)
def test_a_full_local_queue_loses_and_reorders_nothing(module_broker, path):
    """A local queue of 1,000 records and 30,000 lines: the producer waits
    for deliveries and resumes where it stopped."""
    b = module_broker.bootstrap
    t = _topic(b, f"bulk-queue-{path}")
    lines = "".join(f"q-{i}\n" for i in range(30000))
    r = ok(headrace("produce", t, "-X", "queue.buffering.max.messages=1000", input=lines,
                    brokers=b, env=PATHS[path]))
    assert "produced 30000 of 30000 records" in r.stderr, r.stderr
    out = ok(headrace("consume", t, brokers=b)).stdout.splitlines()
    assert out == [f"q-{i}" for i in range(30000)]


@pytest.mark.parametrize("path", PATHS)
def test_refused_records_are_counted_and_named(module_broker, path):
    """The broker refuses records over the topic's max.message.bytes
    (MESSAGE_TOO_LARGE): every one is counted failed, the error names the
    reason, nothing is stored; a topic that accepts them stores them all."""
    b = module_broker.bootstrap
    small = _topic(b, f"bulk-small-{path}", "max.message.bytes=200")
    big = "v" * 400 + "\n"
    r = headrace("produce", small, "--timeout", "10", input=big * 5, brokers=b,
                 env=PATHS[path])
    one_error_line(r, "5 of 5 records failed (0 acknowledged)", "too large")
    assert _consume_raw(b, small) == b""
    roomy = _topic(b, f"bulk-roomy-{path}")
    ok(headrace("produce", roomy, input=big * 5, brokers=b, env=PATHS[path]))
    assert _consume_raw(b, roomy) == (big[:-1].encode() + b"\x00") * 5


def test_keyed_input_takes_the_per_record_path(module_broker):
    """-K (and any key, header, encoding or null value) is not the bulk
    path's: keys still arrive."""
    b = module_broker.bootstrap
    t = _topic(b, "bulk-keyed")
    ok(headrace("produce", t, "-K", ":", input="k1:v1\nk2:v2\n", brokers=b))
    out = ok(headrace("consume", t, "--format", "%k=%s\\n", brokers=b)).stdout
    assert out.splitlines() == ["k1=v1", "k2=v2"]


def test_the_bulk_path_loads_confluent_kafkas_librdkafka():
    """The bulk path is really taken: LineProducer resolves librdkafka from
    the copy confluent_kafka mapped into the process (no fallback), and a bad
    property is an InvalidArgumentError naming it."""
    import confluent_kafka

    from headrace import _core
    from headrace.errors import InvalidArgumentError

    lp = _core.LineProducer({"bootstrap.servers": "127.0.0.1:1"}, "t")
    # Nothing produced, nothing failed. (Not len(lp) == 0: the queue length
    # also counts librdkafka's own events, e.g. the refused connection to
    # port 1, which can already be queued here under load.)
    assert lp.failed == 0
    maps = open("/proc/self/maps").read()
    libs = {line.split()[-1] for line in maps.splitlines() if "librdkafka" in line}
    assert len(libs) == 1, libs  # one librdkafka in the process: confluent_kafka's
    assert confluent_kafka.libversion()[0]
    with pytest.raises(InvalidArgumentError, match="no.such.property"):
        _core.LineProducer({"no.such.property": "1"}, "t")


def test_the_tools_variables_are_not_broker_settings():
    """HEADRACE_CLI_PRODUCER (and `headrace user`'s HEADRACE_USER_PASSWORD)
    configure tools: a broker started with them set must not read them as
    the unknown settings `cli.producer` / `user.password`."""
    from headrace import settings

    env = {"HEADRACE_CLI_PRODUCER": "python", "HEADRACE_USER_PASSWORD": "pw",
           "HEADRACE_LOG_RETENTION_MS": "1000"}
    assert settings.from_environ(env) == {"log.retention.ms": "1000"}
