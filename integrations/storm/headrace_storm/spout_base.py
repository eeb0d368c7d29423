"""What the two spouts (KafkaSpout, ShareSpout) share as Storm shell
components: emits written unflushed and sent with the ``sync`` that ends the
command (multilang_out.py), a configuration error reported to Storm before
the process exits, and key/value bytes turned into tuple text
(``headrace.encoding``)."""
from __future__ import annotations

import base64

from streamparse.storm.spout import Spout

from . import multilang_out


class StormSpout(Spout):
    """Base of the headrace spouts; not a component by itself."""

    def send_message(self, message: dict) -> None:
        """pystorm's send_message (the ``sync`` ending a command, logs,
        errors), sent in one write with the emits written before it."""
        if not isinstance(message, dict):
            return super().send_message(message)   # pystorm logs the misuse
        multilang_out.send(self, message)

    def emit(self, tup, tup_id=None, stream=None, direct_task=None, need_task_ids=False):
        """pystorm's emit, written unflushed (it reaches Storm with the
        ``sync`` ending this command); asking for task ids takes pystorm's
        path."""
        if need_task_ids or direct_task is not None or stream is not None:
            return super().emit(tup, tup_id=tup_id, stream=stream, direct_task=direct_task,
                                need_task_ids=need_task_ids)
        if not isinstance(tup, (list, tuple)):
            raise TypeError(f"All Tuples must be either lists or tuples, received "
                            f"{type(tup)!r} instead.")
        msg = {"command": "emit", "tuple": tup, "need_task_ids": False}
        if tup_id is not None:
            msg["id"] = tup_id
        multilang_out.write(self, msg)
        return None

    def _fail_fast(self, e: Exception) -> None:
        """Reports a configuration error to the worker log and Storm's UI, then exits."""
        msg = f"{type(self).__name__} configuration error: {e}"
        self.log(msg, level="error")
        self.send_message({"command": "error", "msg": msg})
        self._exit(1)

    @staticmethod
    def decoder(encoding: str):
        """Key or value bytes -> tuple text: ``utf-8`` (undecodable bytes
        replaced) or ``base64`` (exact); None stays None."""
        return _text_base64 if encoding == "base64" else _text_utf8


def _text_utf8(data: bytes | None) -> str | None:
    return None if data is None else data.decode("utf-8", "replace")


def _text_base64(data: bytes | None) -> str | None:
    return None if data is None else base64.b64encode(data).decode("ascii")
