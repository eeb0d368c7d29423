# headrace._core.Broker: a thin wrapper over headrace::Broker. Start and
# Stop release the GIL; the broker's own threads never take it.
from libcpp.map cimport map
from libcpp.memory cimport unique_ptr
from libcpp.string cimport string
from libbroker cimport CBroker


cdef class Broker:
    """A single-node broker. `settings` maps Kafka broker config keys to
    values (str); see docs/configuration.md."""

    cdef unique_ptr[CBroker] _broker

    def __cinit__(self, settings=None):
        cdef map[string, string] props
        for key, value in (settings or {}).items():
            props[str(key).encode("utf-8")] = str(value).encode("utf-8")
        check_status(MoveResult(CBroker.Create(props), &self._broker))

    def start(self):
        """Opens the data directory (recovering logs) and starts serving."""
        cdef CStatus st
        with nogil:
            st = self._broker.get().Start()
        check_status(st)

    def stop(self):
        """Stops accepting, finishes in-flight requests, flushes and closes
        every log. Idempotent."""
        cdef CStatus st
        with nogil:
            st = self._broker.get().Stop()
        check_status(st)

    @property
    def listen_address(self) -> str:
        return self._broker.get().listen_address().decode()

    @property
    def advertised_address(self) -> str:
        return self._broker.get().advertised_address().decode()

    @property
    def node_id(self) -> int:
        return self._broker.get().node_id()

    @property
    def data_dir(self) -> str:
        return self._broker.get().data_dir().decode()

    @property
    def network_backend(self) -> str:
        return self._broker.get().network_backend().decode()

    @property
    def cluster_id(self) -> str:
        return self._broker.get().cluster_id().decode()

    def __dealloc__(self):
        if self._broker.get() != NULL:
            with nogil:
                self._broker.get().Stop()
