"""headrace.storm: Apache Storm components (streamparse) reading and writing
Kafka topics on headrace or any Kafka-compatible cluster.

- :class:`KafkaSpout`: consumer-group spout with AT_MOST_ONCE, AT_LEAST_ONCE
  and NONE processing guarantees (storm-kafka-client's model), and
  EXACTLY_ONCE together with a transactional KafkaBolt.
- :class:`ShareSpout`: a spout on a share group (KIP-932): each tuple's ack
  and fail are its record's ACCEPT and RELEASE (or REJECT) at the broker,
  which redelivers what is failed or held too long, to any task; more tasks
  than partitions read together.
- :class:`KafkaBolt`: writes tuples as records, acked when the broker
  acknowledged them, or fire-and-forget, or (transactional) in transactions
  that commit the source offsets into the spout's group.

Both run as Storm shell components: ``streamparse_run headrace.storm.KafkaSpout``
(what ``KafkaSpout.spec()`` declares). See docs/storm.md.
"""
from .bolt import KafkaBolt
from .config import ConfigError, FirstPollOffsetStrategy, ProcessingGuarantee
from .share_spout import ShareSpout
from .spout import KafkaSpout

__all__ = ["KafkaSpout", "ShareSpout", "KafkaBolt", "ProcessingGuarantee", "FirstPollOffsetStrategy",
           "ConfigError"]
