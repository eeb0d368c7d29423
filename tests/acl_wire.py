"""Kafka requests of any API over a raw socket (the authorisation tests, and
protocol races no client lets a test time).

Messages are kafka-python's schema-driven classes (kafka.protocol.*), so
every API and version the 3.9 schemas define can be sent, including ones no
client exposes (WriteTxnMarkers, OffsetForLeaderEpoch, ...). The KIP-848
and KIP-932 APIs kafka-python does not ship are loaded from the pinned
schemas.

``source`` binds the client end of the socket, so a test can speak from
127.0.0.2: the broker sees another client IP (the ACL host), not another
principal.
"""
from __future__ import annotations

import importlib
import itertools
import socket
import struct
import sys
import tempfile
from pathlib import Path

SCHEMAS = Path("/work/shared/kafka-protocol/message")
_ids = itertools.count(1)


def _kip848_classes():
    """ConsumerGroupHeartbeat / ConsumerGroupDescribe (KIP-848) and
    ShareGroupHeartbeat / ShareGroupDescribe / ShareFetch / ShareAcknowledge
    and the share-state RPCs 83-87 (KIP-932) request+response classes."""
    from kafka.protocol.api_message import ApiMessage

    pkg_root = Path(tempfile.mkdtemp(prefix="hr-acl-schemas-"))
    pkg = pkg_root / "hr_acl_schemas"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    here = Path(__file__).resolve().parents[1] / "cpp" / "protocol" / "schemas"
    names = ("ConsumerGroupHeartbeatRequest", "ConsumerGroupHeartbeatResponse",
             "ConsumerGroupDescribeRequest", "ConsumerGroupDescribeResponse",
             "ShareGroupHeartbeatRequest", "ShareGroupHeartbeatResponse",
             "ShareGroupDescribeRequest", "ShareGroupDescribeResponse",
             "ShareFetchRequest", "ShareFetchResponse",
             "ShareAcknowledgeRequest", "ShareAcknowledgeResponse",
             "InitializeShareGroupStateRequest", "InitializeShareGroupStateResponse",
             "ReadShareGroupStateRequest", "ReadShareGroupStateResponse",
             "WriteShareGroupStateRequest", "WriteShareGroupStateResponse",
             "DeleteShareGroupStateRequest", "DeleteShareGroupStateResponse",
             "ReadShareGroupStateSummaryRequest", "ReadShareGroupStateSummaryResponse",
             "DescribeShareGroupOffsetsRequest", "DescribeShareGroupOffsetsResponse",
             "AlterShareGroupOffsetsRequest", "AlterShareGroupOffsetsResponse",
             "DeleteShareGroupOffsetsRequest", "DeleteShareGroupOffsetsResponse")
    for n in names:
        src = here / f"{n}.json"
        if not src.exists():
            src = SCHEMAS / f"{n}.json"
        (pkg / f"{n}.json").write_text(src.read_text())
    sys.path.insert(0, str(pkg_root))
    module = importlib.import_module("hr_acl_schemas")
    return {n: type(n, (ApiMessage,), {}, load_json=module) for n in names}


KIP848 = _kip848_classes()


def build(cls, data: dict):
    """A kafka-python message from plain dicts (nested structs as dicts)."""
    kwargs = {}
    for k, v in data.items():
        f = cls.fields[k]
        if v is None:
            pass
        elif f.is_struct_array():
            v = [build(f.data_class, x) for x in v]
        elif f.is_struct():
            v = build(f.data_class, v)
        kwargs[k] = v
    return cls(**kwargs)


def msg(module: str, name: str, version: int, **data):
    """Request `name` v`version` of kafka.protocol.`module` (or a KIP-848 one)."""
    cls = KIP848[name] if name in KIP848 else \
        getattr(importlib.import_module(f"kafka.protocol.{module}"), name)
    return build(cls[version], data)


def response_class(request):
    from kafka.protocol.api_header import ResponseClassRegistry

    name = request.name.replace("Request", "Response")
    if name in KIP848:
        return KIP848[name]
    cls = ResponseClassRegistry._response_class_registry.get(request.API_KEY)
    return cls if cls is not None else _find_response(name)


def _find_response(name):
    import kafka.protocol as kp
    import pkgutil

    for m in pkgutil.walk_packages(kp.__path__, "kafka.protocol."):
        mod = importlib.import_module(m.name)
        if hasattr(mod, name):
            return getattr(mod, name)
    raise LookupError(name)


class Conn:
    """One connection; ``call(request)`` sends and returns the decoded response."""

    def __init__(self, address: tuple[str, int], source: str | None = None,
                 timeout: float = 30.0):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.settimeout(timeout)
        if source:
            self.sock.bind((source, 0))
        self.sock.connect(address)

    def close(self):
        self.sock.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _recv(self, n: int) -> bytes:
        out = bytearray()
        while len(out) < n:
            chunk = self.sock.recv(n - len(out))
            if not chunk:
                raise ConnectionError("closed by the broker")
            out += chunk
        return bytes(out)

    def call(self, request):
        cid = next(_ids)
        request.with_header(correlation_id=cid, client_id="acl-test")
        self.sock.sendall(request.encode(header=True, framed=True))
        size = struct.unpack(">i", self._recv(4))[0]
        data = self._recv(size)
        resp_cls = response_class(request)
        version = request.API_VERSION
        flexible = resp_cls.flexible_version_q(version) and request.API_KEY != 18
        # Response header: correlation id (+ tagged fields when flexible).
        got = struct.unpack(">i", data[:4])[0]
        assert got == cid, (got, cid)
        body = data[4:]
        if flexible:
            body = body[1:]  # an empty tagged-field section (the broker never sends tags)
        return resp_cls.decode(body, version=version)
