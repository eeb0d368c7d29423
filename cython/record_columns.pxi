# headrace._core.RecordColumns: fetched record batches into Arrow columns
# (cpp/include/headrace/record_columns.h). One call per Fetch response
# partition, never per record; the decoding runs without the GIL. The rows
# leave as one pyarrow.RecordBatch through the Arrow C data interface:
# pyarrow takes over the buffers (no copy) and frees them by the release
# callback.
from cpython.buffer cimport PyObject_GetBuffer, PyBuffer_Release, PyBUF_SIMPLE
from libc.stdlib cimport free, malloc
from libc.stdint cimport uintptr_t


cdef extern from "headrace/arrow_c.h" nogil:
    cdef struct ArrowArray:
        int64_t length
        void (*release)(ArrowArray*)


cdef extern from "headrace/record_columns.h" namespace "headrace" nogil:
    cdef cppclass CAbortedTransaction "headrace::AbortedTransaction":
        int64_t producer_id
        int64_t first_offset

    cdef cppclass CAppendResult "headrace::AppendResult":
        int64_t next_offset
        int64_t rows

    cdef cppclass CRecordColumns "headrace::RecordColumns":
        CRecordColumns(string topic, int32_t partition, bint include_headers)
        Result[CAppendResult] Append(span[uint8_t] records, int64_t from_, int64_t until,
                                     bint read_committed, span[CAbortedTransaction] aborted)
        int64_t num_rows()
        int64_t num_bytes()
        void Export(ArrowArray* out)


cdef class RecordColumns:
    """Rows of one partition's fetched records, collected column by column.

    ``RecordColumns(topic, partition, include_headers)``; ``append`` takes
    one Fetch response partition's records (any bytes-like object) and
    returns ``(next_offset, rows_added)``; ``take(schema)`` returns the rows
    collected so far as a pyarrow.RecordBatch in ``schema`` (the source's
    Arrow schema: key, value, topic, partition, offset, timestamp,
    timestampType[, headers]) and starts empty again. Raises
    CorruptRecordError for a bad batch, UnsupportedError for message
    format v0/v1."""
    cdef CRecordColumns* _c

    def __cinit__(self, str topic, int partition, bint include_headers):
        self._c = new CRecordColumns(topic.encode(), partition, include_headers)

    def __dealloc__(self):
        del self._c

    def append(self, records, long long from_offset, long long until_offset,
               bint read_committed=False, aborted=()):
        """``aborted``: the response's aborted transactions, as
        (producer id, first offset) pairs (read_committed only)."""
        cdef vector[CAbortedTransaction] c_aborted
        cdef CAbortedTransaction a
        for pid, first in aborted:
            a.producer_id = pid
            a.first_offset = first
            c_aborted.push_back(a)
        cdef Py_buffer view
        PyObject_GetBuffer(records, &view, PyBUF_SIMPLE)
        cdef CStatus st
        cdef CAppendResult res
        try:
            with nogil:
                st = MoveResult(self._c.Append(
                    span[uint8_t](<uint8_t*>view.buf, <size_t>view.len),
                    from_offset, until_offset, read_committed,
                    span[CAbortedTransaction](c_aborted.data(), c_aborted.size())), &res)
        finally:
            PyBuffer_Release(&view)
        check_status(st)
        return res.next_offset, res.rows

    @property
    def num_rows(self):
        return self._c.num_rows()

    @property
    def num_bytes(self):
        return self._c.num_bytes()

    def take(self, schema):
        """The rows so far as a pyarrow.RecordBatch of ``schema``."""
        import pyarrow as pa
        cdef ArrowArray* arr = <ArrowArray*>malloc(sizeof(ArrowArray))
        if arr == NULL:
            raise MemoryError()
        with nogil:
            self._c.Export(arr)
        try:
            return pa.RecordBatch._import_from_c(<uintptr_t>arr, schema)
        finally:
            if arr.release != NULL:   # the import failed before taking it over
                arr.release(arr)
            free(arr)
