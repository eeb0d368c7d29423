"""A plain streamparse bolt between the Kafka spout and the Kafka bolt: it
upper-cases each record's value and passes the key on, anchored to its input
(streamparse's default), so an acked input means the copy was written."""
from streamparse import Bolt


class UpperBolt(Bolt):
    outputs = ["key", "message"]

    def process(self, tup):
        self.emit([tup.values.key, (tup.values.value or "").upper()])
