# CoreLog: a thin owner of one headrace::Log. The friendly API and argument
# normalisation live in python/headrace/log.py; this layer converts types,
# releases the GIL around every call that may do I/O, and keeps the Log alive
# while any call is in flight.
import os

from cython.operator cimport dereference as deref
from libc.stdint cimport INT32_MAX, INT64_MAX

# Config keys (Kafka's names, dots as underscores) -> (width of the C++
# field, smallest value accepted). The minimums follow Kafka's validators,
# with -1 meaning "no limit"/"never" where log.h says so.
_INT_CONFIG_KEYS = {
    "segment_bytes": (64, 14),
    "segment_ms": (64, 1),
    "retention_ms": (64, -1),
    "retention_bytes": (64, -1),
    "index_interval_bytes": (32, 0),
    "max_index_bytes": (32, 4),         # segment.index.bytes
    "max_message_bytes": (32, 0),
    "flush_messages": (64, -1),         # flush.messages (0 = every append)
    "flush_ms": (64, -1),               # flush.ms
}
CONFIG_KEYS = frozenset(_INT_CONFIG_KEYS) | {"message_timestamp_type", "preallocate_indexes"}


cdef int64_t _config_int(str key, object value) except? -1:
    if isinstance(value, bool) or not isinstance(value, int):
        raise_invalid_argument(f"log config {key!r} must be an int, not {type(value).__name__}")
    bits, minimum = _INT_CONFIG_KEYS[key]
    if not minimum <= value <= (INT32_MAX if bits == 32 else INT64_MAX):
        raise_invalid_argument(f"log config {key!r} = {value} is out of range (minimum {minimum})")
    return value


cdef LogConfig _log_config(dict options) except *:
    """Builds a LogConfig from Kafka-named options; unknown keys are errors."""
    cdef LogConfig c
    for key, value in options.items():
        if key == "message_timestamp_type":
            if value == "CreateTime":
                c.timestamp_type = TimestampType.kCreateTime
            elif value == "LogAppendTime":
                c.timestamp_type = TimestampType.kLogAppendTime
            else:
                raise_invalid_argument(
                    f"message_timestamp_type must be 'CreateTime' or 'LogAppendTime', not {value!r}")
        elif key == "preallocate_indexes":
            c.preallocate_indexes = bool(value)
        elif key not in _INT_CONFIG_KEYS:
            raise_invalid_argument(
                f"unknown log config key {key!r}; known keys: {', '.join(sorted(CONFIG_KEYS))}")
        elif key == "segment_bytes":
            c.segment_bytes = _config_int(key, value)
        elif key == "segment_ms":
            c.segment_ms = _config_int(key, value)
        elif key == "retention_ms":
            c.retention_ms = _config_int(key, value)
        elif key == "retention_bytes":
            c.retention_bytes = _config_int(key, value)
        elif key == "index_interval_bytes":
            c.index_interval_bytes = <int32_t>_config_int(key, value)
        elif key == "max_index_bytes":
            c.max_index_bytes = <int32_t>_config_int(key, value)
        elif key == "max_message_bytes":
            c.max_message_bytes = <int32_t>_config_int(key, value)
        elif key == "flush_messages":
            c.flush_interval_messages = _config_int(key, value)
        elif key == "flush_ms":
            c.flush_interval_ms = _config_int(key, value)
    return c


cdef object _optional_bytes(const optional[string]& v):
    if not v.has_value():
        return None
    return deref(v)


cdef object _record_tuple(const CRecord& r):
    cdef size_t i
    headers = []
    for i in range(r.headers.size()):
        headers.append((r.headers[i].key.decode("utf-8", "surrogateescape"),
                        _optional_bytes(r.headers[i].value)))
    return (r.offset.value(), _optional_bytes(r.key), _optional_bytes(r.value), headers,
            r.timestamp.value())


cdef vector[RecordInput] _record_inputs(list records) except *:
    """records: tuples (key, value, headers, timestamp) already normalised by
    headrace.log: key/value bytes or None, headers [(bytes, bytes|None)],
    timestamp an int (-1 = now)."""
    cdef vector[RecordInput] inputs
    cdef RecordInput ri
    cdef RecordHeader rh
    cdef string s
    inputs.reserve(len(records))
    for key, value, headers, timestamp in records:
        ri.key.reset()
        ri.value.reset()
        ri.headers.clear()
        if key is not None:
            s = key
            ri.key = s
        if value is not None:
            s = value
            ri.value = s
        for hkey, hvalue in headers:
            rh.key = hkey
            rh.value.reset()
            if hvalue is not None:
                s = hvalue
                rh.value = s
            ri.headers.push_back(rh)
        ri.timestamp = TimestampMs(<int64_t>timestamp)
        inputs.push_back(ri)
    return inputs


cdef class CoreLog:
    """Owns one headrace::Log. Use headrace.Log, which wraps this.

    Invariant: _log is non-null until close() has finished; _users counts the
    calls that are running with the GIL released (close() waits for them).
    Both are only touched with the GIL held.
    """
    cdef unique_ptr[CLog] _log
    cdef int _users
    cdef bint _closed

    def __cinit__(self, path, dict config):
        cdef string c_dir = os.fsencode(path)
        cdef LogConfig c_config = _log_config(config)
        cdef CStatus st
        with nogil:
            st = MoveResult(CLog.Open(c_dir, c_config), &self._log)
        check_status(st)

    def __dealloc__(self):
        cdef CStatus st
        if self._log.get() != NULL:
            with nogil:
                st = self._log.get().Close()
            self._log.reset()

    cdef CLog* _enter(self) except NULL:
        """Marks a call in flight; raises LogClosedError after close()."""
        if self._closed or self._log.get() == NULL:
            check_status(CStatus.Closed(b"the log is closed"))
        self._users += 1
        return self._log.get()

    cdef void _leave(self) noexcept:
        self._users -= 1

    cdef CLog* _live(self) except NULL:
        """The log for a GIL-held accessor; raises LogClosedError after close()."""
        if self._closed or self._log.get() == NULL:
            check_status(CStatus.Closed(b"the log is closed"))
        return self._log.get()

    @property
    def closed(self):
        return self._closed

    def append_raw(self, const uint8_t[::1] data not None):
        """Appends RecordBatch v2 bytes (one or more batches; copied, since
        offsets are assigned in place). Returns (base_offset, last_offset)."""
        cdef AppendInfo info
        cdef CStatus st
        cdef string buf
        cdef const char* src = <const char*>&data[0] if data.shape[0] > 0 else NULL
        cdef size_t n = data.shape[0]
        cdef CLog* log = self._enter()
        try:
            with nogil:
                if n > 0:
                    buf.assign(src, n)
                st = MoveResult(log.Append(span[uint8_t](<uint8_t*>buf.data(), buf.size())), &info)
        finally:
            self._leave()
        check_status(st)
        return info.base_offset.value(), info.last_offset.value()

    def append_records(self, list records):
        """Builds one batch from normalised record tuples (see _record_inputs)
        and appends it. Returns (base_offset, last_offset)."""
        cdef AppendInfo info
        cdef CStatus st
        cdef string buf
        if not records:
            raise_invalid_argument("append needs at least one record")
        cdef vector[RecordInput] inputs = _record_inputs(records)
        cdef CLog* log = self._enter()
        try:
            with nogil:
                buf = BuildBatch(inputs)
                inputs.clear()
                st = MoveResult(log.Append(span[uint8_t](<uint8_t*>buf.data(), buf.size())), &info)
        finally:
            self._leave()
        check_status(st)
        return info.base_offset.value(), info.last_offset.value()

    def read(self, int64_t offset, int64_t max_bytes):
        """Records with offset >= `offset` from whole batches totalling about
        max_bytes (at least one batch), as tuples
        (offset, key, value, headers, timestamp)."""
        cdef ReadResult rr
        cdef string buf
        cdef vector[CRecord] records
        cdef CStatus st
        cdef CLog* log = self._enter()
        try:
            with nogil:
                st = MoveResult(log.Read(Offset(offset), max_bytes, log.end_offset(), True), &rr)
                if st.ok():
                    st = ReadSlices(rr.slices, &buf)
                    rr.slices.clear()
                if st.ok():
                    st = MoveResult(DecodeRecords(span[uint8_t](<uint8_t*>buf.data(), buf.size())),
                                    &records)
        finally:
            self._leave()
        check_status(st)
        cdef size_t i
        out = []
        for i in range(records.size()):
            if records[i].offset.value() >= offset:
                out.append(_record_tuple(records[i]))
        return out

    def offset_for_time(self, int64_t timestamp_ms):
        """The offset of the first record whose timestamp is >= timestamp_ms,
        or None when there is none."""
        cdef pair[Offset, TimestampMs] found
        cdef CStatus st
        cdef CLog* log = self._enter()
        try:
            with nogil:
                st = MoveResult(log.OffsetForTime(TimestampMs(timestamp_ms)), &found)
        finally:
            self._leave()
        if st.code() == StatusCode.kNotFound:
            return None
        check_status(st)
        return found.first.value()

    def flush(self):
        cdef CStatus st
        cdef CLog* log = self._enter()
        try:
            with nogil:
                st = log.Flush()
        finally:
            self._leave()
        check_status(st)

    def truncate(self, int64_t offset):
        cdef CStatus st
        cdef CLog* log = self._enter()
        try:
            with nogil:
                st = log.Truncate(Offset(offset))
        finally:
            self._leave()
        check_status(st)

    def apply_retention(self, int64_t now_ms):
        """Returns (segments_deleted, bytes_deleted, new_start_offset)."""
        cdef RetentionReport report
        cdef CStatus st
        cdef CLog* log = self._enter()
        try:
            with nogil:
                st = MoveResult(log.ApplyRetention(TimestampMs(now_ms)), &report)
        finally:
            self._leave()
        check_status(st)
        return report.segments_deleted, report.bytes_deleted, report.new_start_offset.value()

    def close(self):
        """Flushes and closes the log after in-flight calls finish. Idempotent."""
        cdef CStatus st
        if self._closed:
            return
        self._closed = True
        while self._users > 0:
            with nogil:
                SleepMicros(1000)
        with nogil:
            st = self._log.get().Close()
        self._log.reset()
        check_status(st)

    @property
    def start_offset(self):
        return self._live().start_offset().value()

    @property
    def end_offset(self):
        return self._live().end_offset().value()

    @property
    def flushed_offset(self):
        return self._live().flushed_offset().value()

    @property
    def size_bytes(self):
        return self._live().size_bytes()

    @property
    def segment_count(self):
        return self._live().segment_count()

    @property
    def recovery_report(self):
        cdef const RecoveryReport* r = &self._live().recovery_report()
        truncated_at = r.truncated_at.value()
        return {
            "segments": r.segments,
            "truncated_bytes": r.truncated_bytes,
            "truncated_at": None if truncated_at < 0 else truncated_at,
            "reason": r.reason.decode("utf-8", "replace"),
            "indexes_rebuilt": bool(r.indexes_rebuilt),
        }
