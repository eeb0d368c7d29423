# headrace._core.Broker: a thin wrapper over headrace::Broker. Start and
# Stop release the GIL; the broker's own threads never take it.
# describe_settings: every broker setting with its default and effective value.
from libcpp cimport bool as cbool
from libcpp.map cimport map
from libcpp.memory cimport unique_ptr
from libcpp.string cimport string
from libcpp.vector cimport vector
from libc.stdint cimport int64_t, uint64_t
from libbroker cimport (BrokerConfigDocs, CBroker, CBrokerSetting, CertificatePrincipal,
                        DescribeBrokerSettings)


cdef map[string, string] _settings_map(settings) except *:
    """{key: value} -> std::map of UTF-8 strings (values through str())."""
    cdef map[string, string] props
    for key, value in (settings or {}).items():
        props[str(key).encode("utf-8")] = str(value).encode("utf-8")
    return props


cdef class Broker:
    """A single-node broker. `settings` maps Kafka broker config keys to
    values (str); see docs/configuration.md."""

    cdef unique_ptr[CBroker] _broker

    def __cinit__(self, settings=None):
        check_status(MoveResult(CBroker.Create(_settings_map(settings)), &self._broker))

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
    def advertised_endpoints(self) -> str:
        """Every listener's advertised endpoint, "NAME://host:port,..."."""
        return self._broker.get().advertised_endpoints().decode()

    @property
    def listener_protocols(self) -> str:
        """Each listener's security protocol, "NAME:PROTOCOL,..."."""
        return self._broker.get().listener_protocols().decode()

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

    @property
    def http_listen(self) -> str:
        """headrace.http.listen: HOST:PORT of the HTTP listener ("" = off)."""
        return self._broker.get().http_listen().decode()

    # --- observability (docs/metrics.md): called by the HTTP listener ---

    def metrics_text(self):
        """The /metrics page (Prometheus text 0.0.4), rendered in C++ without
        the GIL; "" when the broker is not started (or busy starting or
        stopping)."""
        cdef string out
        with nogil:
            out = self._broker.get().MetricsText()
        return out.decode("utf-8", "replace")

    def readiness_problem(self):
        """Why the broker is not ready to serve (one line), or "" when it is.
        Probes each data directory with a small write + fsync at most once a
        second (without the GIL)."""
        cdef string out
        with nogil:
            out = self._broker.get().ReadinessProblem()
        return out.decode("utf-8", "replace")

    # --- the web console's checks (docs/console.md "Mutual TLS") ---

    def authorize(self, principal, host, operation, resource_type, name):
        """Whether ``principal`` ("User:...") from ``host`` (an IP address)
        may do ``operation`` ("Read", "Describe", ...) on ``resource_type``
        ("Topic", "Group", "Cluster", "TransactionalId") ``name``, as the
        broker's authorizer decides for a Kafka request (True without one).
        ValueError for an unknown operation or resource type."""
        cdef string p = principal.encode(), h = host.encode(), op = operation.encode()
        cdef string rt = resource_type.encode(), n = name.encode()
        cdef cbool allowed = False
        cdef CStatus st
        with nogil:
            st = self._broker.get().Authorize(p, h, op, rt, n, &allowed)
        check_status(st)
        return bool(allowed)

    # --- cluster mode (docs/cluster.md): called by the control plane ---

    def apply_cluster(self, state_json):
        """Applies the control plane's view of the cluster (JSON str).
        Returns the per-partition failures as "topic-p: why" lines."""
        cdef string doc = state_json.encode("utf-8")
        cdef vector[string] report
        cdef CStatus st
        with nogil:
            st = self._broker.get().ApplyClusterState(doc, &report)
        check_status(st)
        return [line.decode() for line in report]

    def isr_changes(self):
        """ISR changes the local leaders propose, as a JSON array (str)."""
        cdef string out
        with nogil:
            out = self._broker.get().TakeIsrChanges()
        return out.decode()

    def offline_replicas(self):
        """Local replicas offline because their log directory failed, as a
        JSON array of {"topic", "partition"} (str)."""
        cdef string out
        with nogil:
            out = self._broker.get().OfflineReplicas()
        return out.decode()

    def next_control_request(self, timeout_s):
        """(id, kind, payload_json) of the next admin request for the
        control plane, or None after `timeout_s` seconds without one."""
        cdef int64_t ms = max(0, int(timeout_s * 1000))
        cdef uint64_t rid = 0
        cdef string kind
        cdef string payload
        cdef bint got
        with nogil:
            got = self._broker.get().NextControlRequest(ms, &rid, &kind, &payload)
        if not got:
            return None
        return (rid, kind.decode(), payload.decode())

    def complete_control_request(self, request_id, result_json):
        """Answers a control request; False if it timed out meanwhile."""
        cdef uint64_t rid = request_id
        cdef string result = result_json.encode("utf-8")
        cdef bint done
        with nogil:
            done = self._broker.get().CompleteControlRequest(rid, result)
        return bool(done)

    def __dealloc__(self):
        if self._broker.get() != NULL:
            with nogil:
                self._broker.get().Stop()


def describe_settings(settings=None):
    """Every broker setting, sorted by name, as tuples (name, value,
    default, doc, set_by): `value` once `settings` ({key: str}) are applied,
    `set_by` the key of `settings` that gave it ("" = built-in default).
    Raises like Broker(settings) for an unknown key or a bad value."""
    cdef map[string, string] props = _settings_map(settings)
    cdef vector[CBrokerSetting] rows
    cdef CStatus st
    with nogil:
        st = MoveResult(DescribeBrokerSettings(props), &rows)
    check_status(st)
    return [(r.name.decode(), r.value.decode(), r.default_value.decode(), r.doc.decode(),
             r.set_by.decode()) for r in rows]


def config_docs():
    """The generated key reference of docs/configuration.md (Markdown, with
    its BEGIN/END markers), from the broker and topic key tables."""
    return BrokerConfigDocs().decode()


def certificate_principal(der):
    """The principal an SSL listener with client authentication gives a
    client presenting the DER certificate ``der`` (bytes):
    "User:CN=a,OU=b,O=c", the subject in RFC 2253 as the broker names it;
    "" if ``der`` is not a certificate. It does not verify the certificate."""
    cdef string d = bytes(der)
    return CertificatePrincipal(d).decode("utf-8", "replace")
