// The list of Kafka APIs this broker implements. Adding an API = adding its
// handler file and one line here.
#include <algorithm>
#include <array>

#include "broker/api/handler.h"

namespace headrace::broker {

extern const ApiHandler kProduceHandler;
extern const ApiHandler kFetchHandler;
extern const ApiHandler kListOffsetsHandler;
extern const ApiHandler kMetadataHandler;
extern const ApiHandler kApiVersionsHandler;
extern const ApiHandler kCreateTopicsHandler;
extern const ApiHandler kDeleteTopicsHandler;
extern const ApiHandler kDeleteRecordsHandler;
extern const ApiHandler kInitProducerIdHandler;
extern const ApiHandler kDescribeAclsHandler;  // ACLs (broker/security/auth/)
extern const ApiHandler kCreateAclsHandler;
extern const ApiHandler kDeleteAclsHandler;
extern const ApiHandler kDescribeConfigsHandler;
extern const ApiHandler kAlterConfigsHandler;
extern const ApiHandler kAlterReplicaLogDirsHandler;
extern const ApiHandler kDescribeLogDirsHandler;
extern const ApiHandler kCreatePartitionsHandler;
extern const ApiHandler kIncrementalAlterConfigsHandler;
extern const ApiHandler kDescribeClusterHandler;
extern const ApiHandler kElectLeadersHandler;
extern const ApiHandler kAlterPartitionReassignmentsHandler;
extern const ApiHandler kListPartitionReassignmentsHandler;
// Client quotas (broker/security/quota/).
extern const ApiHandler kDescribeClientQuotasHandler;
extern const ApiHandler kAlterClientQuotasHandler;
// Consumer groups (broker/coordinator/group/).
extern const ApiHandler kOffsetCommitHandler;
extern const ApiHandler kOffsetFetchHandler;
extern const ApiHandler kFindCoordinatorHandler;
extern const ApiHandler kJoinGroupHandler;
extern const ApiHandler kHeartbeatHandler;
extern const ApiHandler kLeaveGroupHandler;
extern const ApiHandler kSyncGroupHandler;
extern const ApiHandler kDescribeGroupsHandler;
extern const ApiHandler kListGroupsHandler;
extern const ApiHandler kDeleteGroupsHandler;
extern const ApiHandler kOffsetDeleteHandler;
extern const ApiHandler kOffsetForLeaderEpochHandler;
extern const ApiHandler kConsumerGroupHeartbeatHandler;  // KIP-848
extern const ApiHandler kConsumerGroupDescribeHandler;   // KIP-848
extern const ApiHandler kShareGroupHeartbeatHandler;     // KIP-932
extern const ApiHandler kShareGroupDescribeHandler;      // KIP-932
extern const ApiHandler kShareFetchHandler;              // KIP-932
extern const ApiHandler kShareAcknowledgeHandler;        // KIP-932
// The share coordinator's inter-broker RPCs (KIP-932; coordinator/share/).
extern const ApiHandler kInitializeShareGroupStateHandler;
extern const ApiHandler kReadShareGroupStateHandler;
extern const ApiHandler kWriteShareGroupStateHandler;
extern const ApiHandler kDeleteShareGroupStateHandler;
extern const ApiHandler kReadShareGroupStateSummaryHandler;
extern const ApiHandler kDescribeShareGroupOffsetsHandler;  // KIP-932 admin
extern const ApiHandler kAlterShareGroupOffsetsHandler;     // KIP-932 admin
extern const ApiHandler kDeleteShareGroupOffsetsHandler;    // KIP-932 admin
// Transactions: the coordinator (broker/coordinator/txn/) and the data plane
// (broker/partition/partition_txn.cc).
extern const ApiHandler kAddPartitionsToTxnHandler;
extern const ApiHandler kAddOffsetsToTxnHandler;
extern const ApiHandler kEndTxnHandler;
extern const ApiHandler kDescribeTransactionsHandler;
extern const ApiHandler kListTransactionsHandler;
extern const ApiHandler kWriteTxnMarkersHandler;
extern const ApiHandler kDescribeProducersHandler;
extern const ApiHandler kTxnOffsetCommitHandler;
// SASL (broker/security/sasl/) and its SCRAM credentials.
extern const ApiHandler kSaslHandshakeHandler;
extern const ApiHandler kSaslAuthenticateHandler;
extern const ApiHandler kDescribeUserScramCredentialsHandler;
extern const ApiHandler kAlterUserScramCredentialsHandler;

namespace {

// Sorted by API key.
constexpr std::array kHandlers = {
    &kProduceHandler,      // 0
    &kFetchHandler,        // 1
    &kListOffsetsHandler,  // 2
    &kMetadataHandler,     // 3
    &kOffsetCommitHandler,     // 8
    &kOffsetFetchHandler,      // 9
    &kFindCoordinatorHandler,  // 10
    &kJoinGroupHandler,        // 11
    &kHeartbeatHandler,        // 12
    &kLeaveGroupHandler,       // 13
    &kSyncGroupHandler,        // 14
    &kDescribeGroupsHandler,   // 15
    &kListGroupsHandler,       // 16
    &kSaslHandshakeHandler,    // 17
    &kApiVersionsHandler,
    &kCreateTopicsHandler,             // 19
    &kDeleteTopicsHandler,             // 20
    &kDeleteRecordsHandler,            // 21
    &kInitProducerIdHandler,           // 22
    &kOffsetForLeaderEpochHandler,     // 23
    &kAddPartitionsToTxnHandler,       // 24
    &kAddOffsetsToTxnHandler,          // 25
    &kEndTxnHandler,                   // 26
    &kWriteTxnMarkersHandler,          // 27
    &kTxnOffsetCommitHandler,          // 28
    &kDescribeAclsHandler,             // 29
    &kCreateAclsHandler,               // 30
    &kDeleteAclsHandler,               // 31
    &kDescribeConfigsHandler,          // 32
    &kAlterConfigsHandler,             // 33
    &kAlterReplicaLogDirsHandler,      // 34
    &kDescribeLogDirsHandler,          // 35
    &kSaslAuthenticateHandler,         // 36
    &kCreatePartitionsHandler,         // 37
    &kDeleteGroupsHandler,             // 42
    &kElectLeadersHandler,             // 43
    &kIncrementalAlterConfigsHandler,  // 44
    &kAlterPartitionReassignmentsHandler,  // 45
    &kListPartitionReassignmentsHandler,   // 46
    &kOffsetDeleteHandler,             // 47
    &kDescribeClientQuotasHandler,     // 48
    &kAlterClientQuotasHandler,        // 49
    &kDescribeUserScramCredentialsHandler,  // 50
    &kAlterUserScramCredentialsHandler,     // 51
    &kDescribeClusterHandler,          // 60
    &kDescribeProducersHandler,        // 61
    &kDescribeTransactionsHandler,     // 65
    &kListTransactionsHandler,         // 66
    &kConsumerGroupHeartbeatHandler,   // 68
    &kConsumerGroupDescribeHandler,    // 69
    &kShareGroupHeartbeatHandler,      // 76
    &kShareGroupDescribeHandler,       // 77
    &kShareFetchHandler,               // 78
    &kShareAcknowledgeHandler,         // 79
    &kInitializeShareGroupStateHandler,   // 83
    &kReadShareGroupStateHandler,         // 84
    &kWriteShareGroupStateHandler,        // 85
    &kDeleteShareGroupStateHandler,       // 86
    &kReadShareGroupStateSummaryHandler,  // 87
    &kDescribeShareGroupOffsetsHandler,   // 90
    &kAlterShareGroupOffsetsHandler,      // 91
    &kDeleteShareGroupOffsetsHandler,     // 92
};

}  // namespace

std::span<const ApiHandler* const> AllHandlers() { return kHandlers; }

const ApiHandler* FindHandler(int16_t api_key) {
  for (const ApiHandler* h : kHandlers)
    if (h->api_key == api_key) return h;
  return nullptr;
}

}  // namespace headrace::broker
