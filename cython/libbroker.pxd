# Raw declarations of headrace/broker.h (the whole broker) and
# headrace/broker_settings.h (every setting with its default).
from libc.stdint cimport int32_t, int64_t, uint64_t
from libcpp cimport bool as cbool
from libcpp.map cimport map
from libcpp.memory cimport unique_ptr
from libcpp.string cimport string
from libcpp.vector cimport vector

from libheadrace cimport CStatus, Result


cdef extern from "headrace/broker.h" namespace "headrace" nogil:
    cdef cppclass CBroker "headrace::Broker":
        @staticmethod
        Result[unique_ptr[CBroker]] Create(const map[string, string]& settings)
        CStatus Start()
        CStatus Stop()
        string listen_address() const
        string advertised_address() const
        string advertised_endpoints() const
        string listener_protocols() const
        int32_t node_id() const
        string data_dir() const
        string network_backend() const
        string cluster_id() const
        string MetricsText()
        string ReadinessProblem()
        CStatus Authorize(const string& principal, const string& host, const string& operation,
                          const string& resource_type, const string& name, cbool* allowed) const
        string http_listen() const
        CStatus ApplyClusterState(const string& state_json, vector[string]* report)
        string TakeIsrChanges()
        string OfflineReplicas()
        bint NextControlRequest(int64_t timeout_ms, uint64_t* id, string* kind, string* payload)
        bint CompleteControlRequest(uint64_t id, const string& result_json)


    string CertificatePrincipal "headrace::CertificatePrincipal"(const string& der)


cdef extern from "headrace/broker_settings.h" namespace "headrace" nogil:
    cdef cppclass CBrokerSetting "headrace::BrokerSetting":
        string name
        string value
        string default_value
        string doc
        string set_by

    Result[vector[CBrokerSetting]] DescribeBrokerSettings(const map[string, string]& settings)
    string BrokerConfigDocs()
