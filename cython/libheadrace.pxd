# Raw declarations of the public C++ API (cpp/include/headrace/*.h) for
# Cython. Nothing here has behaviour of its own; cython/log.pxi wraps it.
# Everything is declared nogil: none of it touches Python objects.
from libc.stdint cimport int8_t, int16_t, int32_t, int64_t, uint8_t, uint32_t
from libcpp.memory cimport shared_ptr, unique_ptr
from libcpp.optional cimport optional
from libcpp.pair cimport pair
from libcpp.span cimport span
from libcpp.string cimport string
from libcpp.vector cimport vector


cdef extern from "headrace/status.h" namespace "headrace" nogil:
    cdef enum class StatusCode(int):
        kOk
        kNotFound
        kCorruption
        kInvalidArgument
        kIOError
        kOutOfRange
        kAlreadyExists
        kTooLarge
        kClosed
        kUnsupported

    cdef cppclass CStatus "headrace::Status":
        CStatus()
        bint ok()
        StatusCode code()
        const string& message()
        string ToString()

        @staticmethod
        CStatus OK()
        @staticmethod
        CStatus InvalidArgument(string)
        @staticmethod
        CStatus Closed(string)

    # Result<T>: has no default constructor, so Cython never declares one as
    # a local; results are moved out with MoveResult (headrace_binding.h)
    # inside the expression that produced them.
    cdef cppclass Result[T]:
        bint ok()
        const CStatus& status()
        T& value()


cdef extern from "headrace/types.h" namespace "headrace" nogil:
    # The StrongInt instantiations: construct with Offset(n), read value().
    cdef cppclass Offset:
        Offset()
        Offset(int64_t)
        int64_t value()

    cdef cppclass FilePosition:
        FilePosition()
        FilePosition(int64_t)
        int64_t value()

    cdef cppclass TimestampMs:
        TimestampMs()
        TimestampMs(int64_t)
        int64_t value()

    cdef TimestampMs kNoTimestamp

    cdef cppclass FileSlice:
        int fd
        FilePosition position
        int64_t length
        shared_ptr[const void] keepalive


cdef extern from "headrace/log.h" namespace "headrace" nogil:
    cdef enum class TimestampType(int8_t):
        kCreateTime
        kLogAppendTime

    cdef cppclass LogConfig:
        int64_t segment_bytes
        int64_t segment_ms
        int64_t retention_ms
        int64_t retention_bytes
        int32_t index_interval_bytes
        int32_t max_index_bytes
        int32_t max_message_bytes
        int64_t flush_interval_messages
        int64_t flush_interval_ms
        TimestampType timestamp_type
        bint preallocate_indexes

    cdef cppclass AppendInfo:
        Offset base_offset
        Offset last_offset
        TimestampMs max_timestamp
        Offset offset_of_max_timestamp
        TimestampMs log_append_time
        int32_t record_count
        int32_t batch_count
        int64_t bytes

    cdef cppclass ReadResult:
        vector[FileSlice] slices
        int64_t bytes
        Offset first_batch_base

    cdef cppclass RecoveryReport:
        int segments
        int64_t truncated_bytes
        Offset truncated_at
        string reason
        bint indexes_rebuilt

    cdef cppclass RetentionReport:
        int segments_deleted
        int64_t bytes_deleted
        Offset new_start_offset

    cdef cppclass CLog "headrace::Log":
        @staticmethod
        Result[unique_ptr[CLog]] Open(const string& dir, const LogConfig& config)
        Result[AppendInfo] Append(span[uint8_t] batches)
        Result[ReadResult] Read(Offset offset, int64_t max_bytes, Offset upper_bound,
                                bint min_one_batch) const
        Result[pair[Offset, TimestampMs]] OffsetForTime(TimestampMs ts) const
        Result[pair[TimestampMs, Offset]] MaxTimestamp() const
        CStatus Flush()
        CStatus MaybeFlush()
        CStatus Truncate(Offset offset)
        Result[RetentionReport] ApplyRetention(TimestampMs now)
        CStatus DeleteRecordsBefore(Offset offset)
        CStatus MaybeRoll(TimestampMs now)
        void SetConfig(const LogConfig& config)
        CStatus Close()
        Offset start_offset() const
        Offset end_offset() const
        Offset flushed_offset() const
        int64_t size_bytes() const
        int segment_count() const
        const RecoveryReport& recovery_report() const
        const string& dir() const


cdef extern from "headrace/record_batch.h" namespace "headrace" nogil:
    cdef int kBatchHeaderSize
    cdef int kBatchLogOverhead

    cdef cppclass RecordHeader:
        string key
        optional[string] value

    cdef cppclass RecordInput:
        optional[string] key
        optional[string] value
        vector[RecordHeader] headers
        TimestampMs timestamp

    cdef cppclass CRecord "headrace::Record":
        Offset offset
        TimestampMs timestamp
        optional[string] key
        optional[string] value
        vector[RecordHeader] headers

    cdef cppclass BatchHeader:
        Offset base_offset
        int32_t batch_length
        int32_t partition_leader_epoch
        int8_t magic
        uint32_t crc
        int16_t attributes
        int32_t last_offset_delta
        TimestampMs base_timestamp
        TimestampMs max_timestamp
        int64_t producer_id
        int16_t producer_epoch
        int32_t base_sequence
        int32_t record_count
        int64_t total_size() const
        Offset last_offset() const
        bint is_transactional() const
        bint is_control() const

    Result[BatchHeader] ParseBatchHeader(span[uint8_t] bytes)
    Result[BatchHeader] ValidateBatch(span[uint8_t] bytes)
    Result[BatchHeader] ValidateStoredBatch(span[uint8_t] bytes)

    string BuildBatch(const vector[RecordInput]& records)
    # Declared with span<uint8_t>; C++ converts it to span<const uint8_t>.
    Result[vector[CRecord]] DecodeRecords(span[uint8_t] bytes)


cdef extern from "headrace_binding.h" namespace "headrace::binding" nogil:
    # Moves the value out of `result` into *out, or returns its error.
    CStatus MoveResult[T](Result[T] result, T* out)
    # Appends the bytes of `slices` to *out, read with pread.
    CStatus ReadSlices(const vector[FileSlice]& slices, string* out)
    # Sleeps for `micros` microseconds (used while waiting for in-flight calls).
    void SleepMicros(int64_t micros)
