"""Multi-lang messages written without a flush each (the components' hot
paths: a spout's emits, a bolt's acks).

pystorm's ``Serializer.send_message`` flushes the output stream before and
after every message: one ``write`` system call per emit or ack. Storm reads
the stream, not writes, so messages may share a write.

Contract: :func:`write` appends a message to the component's output stream
under pystorm's writer lock, in order with every other message; it reaches
Storm at the latest with the component's next ``send_message`` (pystorm
flushes before writing, so e.g. the ``sync`` that ends a spout command
carries the emits before it) or :func:`flush`. A caller that has no such
message coming (a bolt's delivery-report thread) calls :func:`flush` itself.

JSON messages are encoded by the standard library's C encoder (the same
JSON as pystorm's simplejson, faster); values it cannot encode, and other
serializers (msgpack), go through the serializer's own ``serialize_dict``.
"""
from __future__ import annotations

import json
from typing import Any

from pystorm.exceptions import StormWentAwayError
from pystorm.serializers.json_serializer import JSONSerializer

_encode = json.JSONEncoder(separators=(", ", ": ")).encode


def _serialize(serializer: Any, msg: dict) -> Any:
    if type(serializer) is JSONSerializer:
        try:
            return _encode(msg) + "\nend\n"
        except (TypeError, ValueError):
            pass
    return serializer.serialize_dict(msg)


def write(component: Any, msg: dict) -> None:
    """Appends ``msg`` to the output stream without flushing (see the module doc)."""
    ser = component.serializer
    data = _serialize(ser, msg)
    with ser._writer_lock:
        try:
            ser.output_stream.write(data)
        except (IOError, ValueError):
            raise StormWentAwayError() from None


def write_all(component: Any, msgs: list[dict]) -> None:
    """Writes ``msgs`` in order and flushes once."""
    ser = component.serializer
    data = [_serialize(ser, m) for m in msgs]
    with ser._writer_lock:
        try:
            for d in data:
                ser.output_stream.write(d)
            ser.output_stream.flush()
        except (IOError, ValueError):
            raise StormWentAwayError() from None


def send(component: Any, msg: dict) -> None:
    """pystorm's ``send_message`` in one system call: what :func:`write`
    left and ``msg`` leave together (e.g. a spout's emits and its ``sync``)."""
    write_all(component, [msg])


def flush(component: Any) -> None:
    """Sends what :func:`write` left in the stream's buffer."""
    ser = component.serializer
    with ser._writer_lock:
        try:
            ser.output_stream.flush()
        except (IOError, ValueError):
            raise StormWentAwayError() from None
