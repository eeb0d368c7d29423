// Kafka protocol error codes used by the broker, and the one mapping from
// headrace::Status to them. Numbers are the protocol guide's
// ("Error Codes" table); they are response data, never exceptions.
//
// How a Status carries a Kafka error: the broker state layer builds its
// errors with KafkaStatus(KafkaError, message), which picks the closest
// generic StatusCode and records the exact Kafka code in Status::detail().
// Statuses from lower layers (the log) carry no detail and are mapped by
// their StatusCode. Handlers call ToKafkaError(status) and send
// status.message() as the error message.
#pragma once

#include <cstdint>
#include <string>

#include "headrace/status.h"

namespace headrace::broker {

enum class KafkaError : int16_t {
  kUnknownServerError = -1,
  kNone = 0,
  kOffsetOutOfRange = 1,
  kCorruptMessage = 2,
  kUnknownTopicOrPartition = 3,
  kInvalidFetchSize = 4,
  kLeaderNotAvailable = 5,
  kNotLeaderOrFollower = 6,
  kRequestTimedOut = 7,
  kReplicaNotAvailable = 9,
  kMessageTooLarge = 10,
  kOffsetMetadataTooLarge = 12,
  kCoordinatorLoadInProgress = 14,
  kCoordinatorNotAvailable = 15,
  kNotCoordinator = 16,
  kInvalidTopicException = 17,
  kRecordListTooLarge = 18,
  kNotEnoughReplicas = 19,
  kNotEnoughReplicasAfterAppend = 20,
  kInvalidRequiredAcks = 21,
  kIllegalGeneration = 22,
  kInconsistentGroupProtocol = 23,
  kInvalidGroupId = 24,
  kUnknownMemberId = 25,
  kInvalidSessionTimeout = 26,
  kRebalanceInProgress = 27,
  kInvalidCommitOffsetSize = 28,
  kTopicAuthorizationFailed = 29,    // ACLs (broker/security/auth/)
  kGroupAuthorizationFailed = 30,
  kClusterAuthorizationFailed = 31,
  kInvalidTimestamp = 32,
  kUnsupportedSaslMechanism = 33,  // SASL (broker/security/sasl/)
  kIllegalSaslState = 34,          // SASL
  kUnsupportedVersion = 35,
  kTopicAlreadyExists = 36,
  kInvalidPartitions = 37,
  kInvalidReplicationFactor = 38,
  kInvalidReplicaAssignment = 39,
  kInvalidConfig = 40,
  kInvalidRequest = 42,
  kUnsupportedForMessageFormat = 43,
  kPolicyViolation = 44,
  kOutOfOrderSequenceNumber = 45,   // idempotent producers (producer_state.h)
  kDuplicateSequenceNumber = 46,
  kInvalidProducerEpoch = 47,
  kInvalidTxnState = 48,
  kInvalidProducerIdMapping = 49,
  kInvalidTransactionTimeout = 50,
  kConcurrentTransactions = 51,
  kTransactionCoordinatorFenced = 52,
  kTransactionalIdAuthorizationFailed = 53,
  kSecurityDisabled = 54,  // ACL APIs without an authorizer
  kOperationNotAttempted = 55,
  kKafkaStorageError = 56,
  kLogDirNotFound = 57,
  kSaslAuthenticationFailed = 58,  // SASL
  kUnknownProducerId = 59,
  kNonEmptyGroup = 68,
  kGroupIdNotFound = 69,
  kFetchSessionIdNotFound = 70,    // KIP-227
  kInvalidFetchSessionEpoch = 71,  // KIP-227
  kFencedLeaderEpoch = 74,
  kUnknownLeaderEpoch = 75,
  kUnsupportedCompressionType = 76,
  kStaleBrokerEpoch = 77,  // KIP-380: a request from an earlier incarnation of a broker
  kMemberIdRequired = 79,
  kPreferredLeaderNotAvailable = 80,
  kGroupMaxSizeReached = 81,
  kFencedInstanceId = 82,
  kEligibleLeadersNotAvailable = 83,
  kElectionNotNeeded = 84,
  kNoReassignmentInProgress = 85,
  kGroupSubscribedToTopic = 86,
  kInvalidRecord = 87,
  kUnstableOffsetCommit = 88,
  kProducerFenced = 90,
  kResourceNotFound = 91,         // SCRAM credentials (Describe/AlterUserScramCredentials)
  kDuplicateResource = 92,        // SCRAM credentials
  kUnacceptableCredential = 93,   // SCRAM credentials
  kUnknownTopicId = 100,
  kInconsistentTopicId = 103,
  kInconsistentClusterId = 104,
  kTransactionalIdNotFound = 105,
  kFetchSessionTopicIdError = 106,  // KIP-227 sessions by name vs by id
  kMismatchedEndpointType = 114,   // DescribeCluster v1 (KIP-919)
  kUnsupportedEndpointType = 115,  // DescribeCluster v1 (KIP-919)
  // KIP-848 consumer groups (broker/coordinator/group/consumer_group_coordinator.cc).
  kFencedMemberEpoch = 110,     // KIP-848 consumer groups
  kUnreleasedInstanceId = 111,  // KIP-848
  kUnsupportedAssignor = 112,   // KIP-848
  kStaleMemberEpoch = 113,      // KIP-848 (OffsetCommit/OffsetFetch v9)
  kInvalidRegularExpression = 128,  // ConsumerGroupHeartbeat v1 (Kafka 4.0)
  // KIP-932 share groups (Errors.java; names as librdkafka 2.16 spells them).
  kInvalidRecordState = 121,         // acknowledging a record this member has not acquired
  kShareSessionNotFound = 122,       // ShareFetch/ShareAcknowledge: no such share session
  kInvalidShareSessionEpoch = 123,   // share session epoch out of sequence
  kFencedStateEpoch = 124,           // share coordinator: stale share-partition state epoch
  kShareSessionLimitReached = 133,   // the broker holds its maximum number of share sessions
};

inline int16_t Code(KafkaError e) { return static_cast<int16_t>(e); }

// "UNKNOWN_TOPIC_OR_PARTITION" etc., as the protocol guide spells them.
const char* KafkaErrorName(KafkaError e);

// A non-OK Status that maps to `e`. REQUIRES: e != kNone.
Status KafkaStatus(KafkaError e, std::string message);

// The one mapping. OK -> kNone; a Status with a Kafka detail -> that code;
// otherwise by StatusCode:
//   NotFound -> UNKNOWN_TOPIC_OR_PARTITION   Corruption -> CORRUPT_MESSAGE
//   InvalidArgument -> INVALID_REQUEST        IOError -> KAFKA_STORAGE_ERROR
//   OutOfRange -> OFFSET_OUT_OF_RANGE         AlreadyExists -> TOPIC_ALREADY_EXISTS
//   TooLarge -> MESSAGE_TOO_LARGE             Closed -> NOT_LEADER_OR_FOLLOWER
//   Unsupported -> UNSUPPORTED_VERSION
// (Closed means the partition went away under the request, e.g. a deleted
// topic or a shutting-down broker: clients refresh metadata and retry.)
KafkaError ToKafkaError(const Status& s);

}  // namespace headrace::broker
