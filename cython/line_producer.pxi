# headrace._core.LineProducer: the bulk path of `headrace produce`
# (cpp/include/headrace/line_producer.h). One call per list of values, not
# per record; the CLI (headrace.cli.produce) decides when it applies.
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE
from libcpp.string_view cimport string_view


cdef extern from "headrace/line_producer.h" namespace "headrace" nogil:
    cdef cppclass CProduceFailure "headrace::ProduceFailure":
        int code
        string name
        string text

    cdef cppclass CProduceTopicInfo "headrace::ProduceTopicInfo":
        int error
        string error_text
        vector[int32_t] partitions

    cdef cppclass CLineProducer "headrace::LineProducer":
        @staticmethod
        Result[unique_ptr[CLineProducer]] Open(
            const vector[pair[string, string]]& conf, const string& topic)
        CProduceTopicInfo Describe(int timeout_ms)
        size_t Produce(const vector[string_view]& values, int32_t partition)
        void Poll(int timeout_ms)
        int Flush(int timeout_ms)
        int QueueLength()
        int64_t failed()
        const vector[CProduceFailure]& failures()


cdef class LineProducer:
    """A librdkafka producer for one topic fed whole lists of values.

    ``conf``: librdkafka properties as strings. Raises InvalidArgumentError
    for a bad property, UnsupportedError when no librdkafka is loadable."""
    cdef unique_ptr[CLineProducer] _p
    cdef vector[string_view] _values

    def __init__(self, dict conf, str topic):
        cdef vector[pair[string, string]] c_conf
        for k, v in conf.items():
            c_conf.push_back(pair[string, string](str(k).encode(), str(v).encode()))
        cdef string c_topic = topic.encode()
        cdef CStatus st
        with nogil:
            st = MoveResult(CLineProducer.Open(c_conf, c_topic), &self._p)
        check_status(st)

    def describe(self, double timeout):
        """(error code, error text, partition ids) of the topic; code 0 = ok."""
        cdef CProduceTopicInfo info
        cdef int ms = <int>(timeout * 1000)
        with nogil:
            info = self._p.get().Describe(ms)
        return info.error, info.error_text.decode("utf-8", "replace"), list(info.partitions)

    def produce(self, list values, int start=0, int partition=-1):
        """Queues values[start:] (bytes each); returns the index after the
        last one queued (< len(values) when the local queue is full)."""
        cdef Py_ssize_t i, n = len(values)
        cdef bytes v
        self._values.clear()
        self._values.reserve(n - start)
        for i in range(start, n):
            v = values[i]
            if v is None:
                raise TypeError("values must be bytes")
            self._values.push_back(string_view(PyBytes_AS_STRING(v), PyBytes_GET_SIZE(v)))
        cdef size_t done
        with nogil:
            done = self._p.get().Produce(self._values, partition)
        return start + <Py_ssize_t>done

    def poll(self, double timeout):
        cdef int ms = <int>(timeout * 1000)
        with nogil:
            self._p.get().Poll(ms)

    def flush(self, double timeout):
        """Waits for every queued record; returns how many are still queued."""
        cdef int ms = <int>(timeout * 1000)
        cdef int left
        with nogil:
            left = self._p.get().Flush(ms)
        return left

    def __len__(self):
        return self._p.get().QueueLength()

    @property
    def failed(self):
        """Records refused or reported failed."""
        return self._p.get().failed()

    @property
    def failures(self):
        """The first few failures: (code, name, text) each."""
        cdef vector[CProduceFailure] fs = self._p.get().failures()
        return [(f.code, f.name.decode(), f.text.decode("utf-8", "replace")) for f in fs]
