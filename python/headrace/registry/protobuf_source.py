"""``.proto`` source text compiled to a FileDescriptorProto by protoc
(``grpcio-tools``' bundled compiler, with its well-known types such as
``google/protobuf/timestamp.proto``), run as a child process: its errors
are captured whole and a crash or hang cannot touch the broker.

References are imports: each referenced schema is written under its
reference name (``"name": "other.proto"``) for protoc to find; one held as
a serialized descriptor (base64) is handed over with
``--descriptor_set_in``.
"""
from __future__ import annotations

import base64
import binascii
import importlib.resources
import os
import subprocess
import sys
import tempfile

PROTOC_TIMEOUT_S = 20.0
MAIN = "__headrace_schema__.proto"


class ProtoSourceError(ValueError):
    """The text does not compile (protoc's first error line)."""


def _safe_name(name: str) -> str:
    norm = os.path.normpath(name)
    if os.path.isabs(norm) or norm.startswith("..") or not norm.endswith(".proto"):
        raise ProtoSourceError(f"reference name {name!r} is not a relative .proto path")
    return norm


def compile_source(text: str, dependencies) -> "descriptor_pb2.FileDescriptorProto":  # noqa: F821
    """``text`` compiled; ``dependencies``: (name, type, text) of the
    schemas it imports, PROTOBUF ones used."""
    from google.protobuf import descriptor_pb2

    try:
        include = str(importlib.resources.files("grpc_tools") / "_proto")
    except ModuleNotFoundError:
        raise ProtoSourceError(".proto source needs the grpcio-tools package") from None
    with tempfile.TemporaryDirectory(prefix="headrace-proto-") as d:
        given = descriptor_pb2.FileDescriptorSet()
        for name, dep_type, dep_text in dependencies:
            if dep_type != "PROTOBUF":
                continue
            try:
                given.file.append(descriptor_pb2.FileDescriptorProto.FromString(
                    base64.b64decode(dep_text.strip(), validate=True)))
                given.file[-1].name = _safe_name(name)
                continue
            except (binascii.Error, ValueError):
                pass
            path = os.path.join(d, _safe_name(name))
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w", encoding="utf-8") as f:
                f.write(dep_text)
        with open(os.path.join(d, MAIN), "w", encoding="utf-8") as f:
            f.write(text)
        out = os.path.join(d, "out.pb")
        argv = [sys.executable, "-m", "grpc_tools.protoc", f"-I{d}", f"-I{include}",
                f"--descriptor_set_out={out}", MAIN]
        if given.file:
            with open(os.path.join(d, "given.pb"), "wb") as f:
                f.write(given.SerializeToString())
            argv.insert(3, f"--descriptor_set_in={os.path.join(d, 'given.pb')}")
        try:
            r = subprocess.run(argv, cwd=d, capture_output=True, text=True,
                               timeout=PROTOC_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            raise ProtoSourceError(f"protoc did not finish within {PROTOC_TIMEOUT_S:g}s") \
                from None
        if r.returncode != 0:
            lines = [ln.replace(d + os.sep, "").replace(MAIN, "schema")
                     for ln in r.stderr.splitlines() if ln.strip()]
            raise ProtoSourceError(lines[0] if lines else f"protoc exit code {r.returncode}")
        with open(out, "rb") as f:
            result = descriptor_pb2.FileDescriptorSet.FromString(f.read())
    for fd in result.file:
        if fd.name == MAIN:
            fd.name = "schema.proto"
            return fd
    raise ProtoSourceError("protoc produced no descriptor")
