#include "broker/base/kafka_error.h"

namespace headrace::broker {

const char* KafkaErrorName(KafkaError e) {
  switch (e) {
    case KafkaError::kUnknownServerError: return "UNKNOWN_SERVER_ERROR";
    case KafkaError::kNone: return "NONE";
    case KafkaError::kOffsetOutOfRange: return "OFFSET_OUT_OF_RANGE";
    case KafkaError::kCorruptMessage: return "CORRUPT_MESSAGE";
    case KafkaError::kUnknownTopicOrPartition: return "UNKNOWN_TOPIC_OR_PARTITION";
    case KafkaError::kInvalidFetchSize: return "INVALID_FETCH_SIZE";
    case KafkaError::kLeaderNotAvailable: return "LEADER_NOT_AVAILABLE";
    case KafkaError::kNotLeaderOrFollower: return "NOT_LEADER_OR_FOLLOWER";
    case KafkaError::kRequestTimedOut: return "REQUEST_TIMED_OUT";
    case KafkaError::kReplicaNotAvailable: return "REPLICA_NOT_AVAILABLE";
    case KafkaError::kMessageTooLarge: return "MESSAGE_TOO_LARGE";
    case KafkaError::kInvalidTopicException: return "INVALID_TOPIC_EXCEPTION";
    case KafkaError::kRecordListTooLarge: return "RECORD_LIST_TOO_LARGE";
    case KafkaError::kNotEnoughReplicas: return "NOT_ENOUGH_REPLICAS";
    case KafkaError::kNotEnoughReplicasAfterAppend: return "NOT_ENOUGH_REPLICAS_AFTER_APPEND";
    case KafkaError::kInvalidRequiredAcks: return "INVALID_REQUIRED_ACKS";
    case KafkaError::kInvalidTimestamp: return "INVALID_TIMESTAMP";
    case KafkaError::kUnsupportedVersion: return "UNSUPPORTED_VERSION";
    case KafkaError::kUnsupportedSaslMechanism: return "UNSUPPORTED_SASL_MECHANISM";
    case KafkaError::kIllegalSaslState: return "ILLEGAL_SASL_STATE";
    case KafkaError::kSaslAuthenticationFailed: return "SASL_AUTHENTICATION_FAILED";
    case KafkaError::kResourceNotFound: return "RESOURCE_NOT_FOUND";
    case KafkaError::kDuplicateResource: return "DUPLICATE_RESOURCE";
    case KafkaError::kUnacceptableCredential: return "UNACCEPTABLE_CREDENTIAL";
    case KafkaError::kTopicAlreadyExists: return "TOPIC_ALREADY_EXISTS";
    case KafkaError::kInvalidPartitions: return "INVALID_PARTITIONS";
    case KafkaError::kInvalidReplicationFactor: return "INVALID_REPLICATION_FACTOR";
    case KafkaError::kInvalidReplicaAssignment: return "INVALID_REPLICA_ASSIGNMENT";
    case KafkaError::kInvalidConfig: return "INVALID_CONFIG";
    case KafkaError::kInvalidRequest: return "INVALID_REQUEST";
    case KafkaError::kTopicAuthorizationFailed: return "TOPIC_AUTHORIZATION_FAILED";
    case KafkaError::kGroupAuthorizationFailed: return "GROUP_AUTHORIZATION_FAILED";
    case KafkaError::kClusterAuthorizationFailed: return "CLUSTER_AUTHORIZATION_FAILED";
    case KafkaError::kSecurityDisabled: return "SECURITY_DISABLED";
    case KafkaError::kUnsupportedForMessageFormat: return "UNSUPPORTED_FOR_MESSAGE_FORMAT";
    case KafkaError::kPolicyViolation: return "POLICY_VIOLATION";
    case KafkaError::kKafkaStorageError: return "KAFKA_STORAGE_ERROR";
    case KafkaError::kLogDirNotFound: return "LOG_DIR_NOT_FOUND";
    case KafkaError::kFencedLeaderEpoch: return "FENCED_LEADER_EPOCH";
    case KafkaError::kUnknownLeaderEpoch: return "UNKNOWN_LEADER_EPOCH";
    case KafkaError::kUnsupportedCompressionType: return "UNSUPPORTED_COMPRESSION_TYPE";
    case KafkaError::kInvalidRecord: return "INVALID_RECORD";
    case KafkaError::kUnknownTopicId: return "UNKNOWN_TOPIC_ID";
    case KafkaError::kFetchSessionIdNotFound: return "FETCH_SESSION_ID_NOT_FOUND";
    case KafkaError::kInvalidFetchSessionEpoch: return "INVALID_FETCH_SESSION_EPOCH";
    case KafkaError::kFetchSessionTopicIdError: return "FETCH_SESSION_TOPIC_ID_ERROR";
    case KafkaError::kInconsistentTopicId: return "INCONSISTENT_TOPIC_ID";
    case KafkaError::kInconsistentClusterId: return "INCONSISTENT_CLUSTER_ID";
    case KafkaError::kMismatchedEndpointType: return "MISMATCHED_ENDPOINT_TYPE";
    case KafkaError::kUnsupportedEndpointType: return "UNSUPPORTED_ENDPOINT_TYPE";
    // Consumer groups (cpp/broker/coordinator/group/).
    case KafkaError::kOffsetMetadataTooLarge: return "OFFSET_METADATA_TOO_LARGE";
    case KafkaError::kCoordinatorLoadInProgress: return "COORDINATOR_LOAD_IN_PROGRESS";
    case KafkaError::kCoordinatorNotAvailable: return "COORDINATOR_NOT_AVAILABLE";
    case KafkaError::kNotCoordinator: return "NOT_COORDINATOR";
    case KafkaError::kIllegalGeneration: return "ILLEGAL_GENERATION";
    case KafkaError::kInconsistentGroupProtocol: return "INCONSISTENT_GROUP_PROTOCOL";
    case KafkaError::kInvalidGroupId: return "INVALID_GROUP_ID";
    case KafkaError::kUnknownMemberId: return "UNKNOWN_MEMBER_ID";
    case KafkaError::kInvalidSessionTimeout: return "INVALID_SESSION_TIMEOUT";
    case KafkaError::kRebalanceInProgress: return "REBALANCE_IN_PROGRESS";
    case KafkaError::kInvalidCommitOffsetSize: return "INVALID_COMMIT_OFFSET_SIZE";
    case KafkaError::kNonEmptyGroup: return "NON_EMPTY_GROUP";
    case KafkaError::kGroupIdNotFound: return "GROUP_ID_NOT_FOUND";
    case KafkaError::kMemberIdRequired: return "MEMBER_ID_REQUIRED";
    case KafkaError::kPreferredLeaderNotAvailable: return "PREFERRED_LEADER_NOT_AVAILABLE";
    case KafkaError::kGroupMaxSizeReached: return "GROUP_MAX_SIZE_REACHED";
    case KafkaError::kFencedMemberEpoch: return "FENCED_MEMBER_EPOCH";
    case KafkaError::kUnreleasedInstanceId: return "UNRELEASED_INSTANCE_ID";
    case KafkaError::kUnsupportedAssignor: return "UNSUPPORTED_ASSIGNOR";
    case KafkaError::kStaleMemberEpoch: return "STALE_MEMBER_EPOCH";
    case KafkaError::kInvalidRegularExpression: return "INVALID_REGULAR_EXPRESSION";
    case KafkaError::kInvalidRecordState: return "INVALID_RECORD_STATE";
    case KafkaError::kShareSessionNotFound: return "SHARE_SESSION_NOT_FOUND";
    case KafkaError::kInvalidShareSessionEpoch: return "INVALID_SHARE_SESSION_EPOCH";
    case KafkaError::kFencedStateEpoch: return "FENCED_STATE_EPOCH";
    case KafkaError::kShareSessionLimitReached: return "SHARE_SESSION_LIMIT_REACHED";
    case KafkaError::kFencedInstanceId: return "FENCED_INSTANCE_ID";
    case KafkaError::kStaleBrokerEpoch: return "STALE_BROKER_EPOCH";
    case KafkaError::kEligibleLeadersNotAvailable: return "ELIGIBLE_LEADERS_NOT_AVAILABLE";
    case KafkaError::kElectionNotNeeded: return "ELECTION_NOT_NEEDED";
    case KafkaError::kNoReassignmentInProgress: return "NO_REASSIGNMENT_IN_PROGRESS";
    case KafkaError::kGroupSubscribedToTopic: return "GROUP_SUBSCRIBED_TO_TOPIC";
    // Idempotent producers (producer_state.h, api/init_producer_id.cc).
    case KafkaError::kOutOfOrderSequenceNumber: return "OUT_OF_ORDER_SEQUENCE_NUMBER";
    case KafkaError::kDuplicateSequenceNumber: return "DUPLICATE_SEQUENCE_NUMBER";
    case KafkaError::kInvalidProducerEpoch: return "INVALID_PRODUCER_EPOCH";
    case KafkaError::kInvalidTxnState: return "INVALID_TXN_STATE";
    case KafkaError::kInvalidProducerIdMapping: return "INVALID_PRODUCER_ID_MAPPING";
    case KafkaError::kInvalidTransactionTimeout: return "INVALID_TRANSACTION_TIMEOUT";
    case KafkaError::kConcurrentTransactions: return "CONCURRENT_TRANSACTIONS";
    case KafkaError::kTransactionCoordinatorFenced: return "TRANSACTION_COORDINATOR_FENCED";
    case KafkaError::kUnknownProducerId: return "UNKNOWN_PRODUCER_ID";
    case KafkaError::kOperationNotAttempted: return "OPERATION_NOT_ATTEMPTED";
    case KafkaError::kUnstableOffsetCommit: return "UNSTABLE_OFFSET_COMMIT";
    case KafkaError::kProducerFenced: return "PRODUCER_FENCED";
    case KafkaError::kTransactionalIdNotFound: return "TRANSACTIONAL_ID_NOT_FOUND";
    case KafkaError::kTransactionalIdAuthorizationFailed: return "TRANSACTIONAL_ID_AUTHORIZATION_FAILED";
  }
  return "UNKNOWN";
}

namespace {

// The generic StatusCode closest to a Kafka error, so that code that only
// looks at Status::code() (logs, the Python binding) still sees sense.
StatusCode GenericCodeFor(KafkaError e) {
  switch (e) {
    case KafkaError::kUnknownTopicOrPartition:
    case KafkaError::kUnknownTopicId:
      return StatusCode::kNotFound;
    case KafkaError::kTopicAlreadyExists: return StatusCode::kAlreadyExists;
    case KafkaError::kOffsetOutOfRange: return StatusCode::kOutOfRange;
    case KafkaError::kCorruptMessage:
    case KafkaError::kInvalidRecord:
      return StatusCode::kCorruption;
    case KafkaError::kMessageTooLarge:
    case KafkaError::kRecordListTooLarge:
      return StatusCode::kTooLarge;
    case KafkaError::kKafkaStorageError:
    case KafkaError::kUnknownServerError:
      return StatusCode::kIOError;
    case KafkaError::kUnsupportedVersion:
    case KafkaError::kUnsupportedCompressionType:
      return StatusCode::kUnsupported;
    case KafkaError::kNotLeaderOrFollower:
    case KafkaError::kLeaderNotAvailable:
      return StatusCode::kClosed;
    default:
      return StatusCode::kInvalidArgument;
  }
}

Status MakeGeneric(StatusCode c, std::string m) {
  switch (c) {
    case StatusCode::kNotFound: return Status::NotFound(std::move(m));
    case StatusCode::kAlreadyExists: return Status::AlreadyExists(std::move(m));
    case StatusCode::kOutOfRange: return Status::OutOfRange(std::move(m));
    case StatusCode::kCorruption: return Status::Corruption(std::move(m));
    case StatusCode::kTooLarge: return Status::TooLarge(std::move(m));
    case StatusCode::kIOError: return Status::IOError(std::move(m));
    case StatusCode::kUnsupported: return Status::Unsupported(std::move(m));
    case StatusCode::kClosed: return Status::Closed(std::move(m));
    default: return Status::InvalidArgument(std::move(m));
  }
}

}  // namespace

Status KafkaStatus(KafkaError e, std::string message) {
  assert(e != KafkaError::kNone);
  return MakeGeneric(GenericCodeFor(e), std::move(message)).WithDetail(Code(e));
}

KafkaError ToKafkaError(const Status& s) {
  if (s.ok()) return KafkaError::kNone;
  if (s.detail() != 0) return static_cast<KafkaError>(s.detail());
  switch (s.code()) {
    case StatusCode::kOk: return KafkaError::kNone;
    case StatusCode::kNotFound: return KafkaError::kUnknownTopicOrPartition;
    case StatusCode::kCorruption: return KafkaError::kCorruptMessage;
    case StatusCode::kInvalidArgument: return KafkaError::kInvalidRequest;
    case StatusCode::kIOError: return KafkaError::kKafkaStorageError;
    case StatusCode::kOutOfRange: return KafkaError::kOffsetOutOfRange;
    case StatusCode::kAlreadyExists: return KafkaError::kTopicAlreadyExists;
    case StatusCode::kTooLarge: return KafkaError::kMessageTooLarge;
    case StatusCode::kClosed: return KafkaError::kNotLeaderOrFollower;
    case StatusCode::kUnsupported: return KafkaError::kUnsupportedVersion;
  }
  return KafkaError::kUnknownServerError;
}

}  // namespace headrace::broker
