"""headrace.spark's pure planning functions: option parsing, admission
control shares and offset ranges (no Spark session, no broker)."""
from __future__ import annotations

import pytest

pytest.importorskip("pyspark", minversion="4.2")

from headrace.spark.offsets import (plan_ranges, positions_from_json,  # noqa: E402
                                    positions_to_json, rate_limit)
from headrace.spark.options import parse_source_options  # noqa: E402

BS = {"kafka.bootstrap.servers": "127.0.0.1:1"}


def test_checkpoint_json_round_trips_in_sparks_kafka_form():
    pos = {("b", 1): 7, ("a", 0): 3, ("a", 10): 5}
    assert positions_to_json(pos) == {"a": {"0": 3, "10": 5}, "b": {"1": 7}}
    assert positions_from_json(positions_to_json(pos)) == pos


def test_rate_limit_shares_in_proportion_and_admits_exactly_the_limit():
    start = {("t", 0): 0, ("t", 1): 100, ("t", 2): 5}
    end = {("t", 0): 300, ("t", 1): 200, ("t", 2): 5}   # backlogs 300, 100, 0
    got = rate_limit(start, end, 40)
    assert got == {("t", 0): 30, ("t", 1): 110, ("t", 2): 5}
    assert rate_limit(start, end, 7) == rate_limit(start, end, 7)   # deterministic
    assert sum(rate_limit(start, end, 7)[tp] - start[tp] for tp in start) == 7
    assert rate_limit(start, end, 1000) == end                      # under the limit
    # A partition new to the query (absent from start) starts at 0.
    assert rate_limit({}, {("n", 0): 10}, 4) == {("n", 0): 4}


def test_plan_ranges_skips_empty_partitions_and_honours_min_partitions():
    start = {("t", 0): 10, ("t", 1): 4}
    end = {("t", 0): 20, ("t", 1): 4, ("u", 0): 3}
    ranges = plan_ranges(start, end, None)
    assert [(r.topic, r.partition, r.from_offset, r.until_offset) for r in ranges] == \
        [("t", 0, 10, 20), ("u", 0, 0, 3)]
    split = plan_ranges(start, end, 5)
    assert len(split) >= 5
    covered = sorted((r.topic, r.partition, o) for r in split
                     for o in range(r.from_offset, r.until_offset))
    assert covered == sorted([("t", 0, o) for o in range(10, 20)] + [("u", 0, o) for o in range(3)])


def test_source_option_defaults_follow_sparks_kafka_source():
    stream = parse_source_options({**BS, "subscribe": "a, b"}, streaming=True)
    batch = parse_source_options({**BS, "subscribe": "a"}, streaming=False)
    assert stream.topics.value == ("a", "b")
    assert (stream.starting, stream.ending) == ("latest", None)
    assert (batch.starting, batch.ending) == ("earliest", "latest")
    assert stream.fail_on_data_loss and not stream.include_headers
    # Spark's isolation default, made explicit (librdkafka's is read_committed).
    assert stream.kafka_conf == {"bootstrap.servers": "127.0.0.1:1",
                                 "isolation.level": "read_uncommitted"}


@pytest.mark.parametrize("options, streaming, message", [
    ({"subscribe": "a"}, True, "kafka.bootstrap.servers"),
    ({**BS}, True, "Exactly one of"),
    ({**BS, "subscribe": "a", "endingOffsets": "latest"}, True, "not supported for streaming"),
    ({**BS, "assign": "[1,2]"}, False, "assign"),
    ({**BS, "subscribePattern": "("}, False, "regular expression"),
    ({**BS, "subscribe": "a", "maxOffsetsPerTrigger": "0"}, True, "positive integer"),
    ({**BS, "subscribe": "a", "failOnDataLoss": "maybe"}, True, "'true' or 'false'"),
    ({**BS, "subscribe": "a", "kafka.enable.auto.commit": "true"}, True, "enable.auto.commit"),
])
def test_bad_source_options_are_refused(options, streaming, message):
    with pytest.raises(ValueError, match=message):
        parse_source_options(options, streaming=streaming)
