"""events -> upper-case -> events-upper, at least once.

Everything headrace needs is in the topology's Storm configuration; the
spout and bolt are the library's classes, used as they are:

    sparse run                      # local mode
    sparse submit -e prod           # a real cluster
"""
from streamparse import Grouping, Topology

from bolts.upper import UpperBolt
from headrace.storm import KafkaBolt, KafkaSpout


class TopicCopy(Topology):
    config = {
        "headrace.brokers": "broker1:9092,broker2:9092",
        "headrace.group": "topic-copy",
        "headrace.guarantee": "at_least_once",
        "headrace.first_poll": "uncommitted_earliest",
        "headrace.max_uncommitted": 10000,
        "headrace.commit_period_ms": 5000,
        "topology.max.spout.pending": 2000,
        "topology.message.timeout.secs": 60,
    }

    # Two spout tasks share the topic's partitions through the consumer group.
    events = KafkaSpout.spec(name="events", par=2, config={"headrace.topics": ["events"]})
    upper = UpperBolt.spec(inputs={events: Grouping.SHUFFLE}, par=2)
    sink = KafkaBolt.spec(name="sink", inputs={upper: Grouping.SHUFFLE}, par=2,
                          config={"headrace.topic": "events-upper"})
