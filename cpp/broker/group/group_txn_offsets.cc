// Transactional offset commits (TxnOffsetCommit, KIP-98/447). Placeholder
// until the group coordinator keeps pending offsets per producer.
#include "broker/group/group_coordinator.h"

namespace headrace::broker::group {

std::vector<KafkaError> GroupCoordinator::CommitTxnOffsets(const TxnCommitRequest& req) {
  return std::vector<KafkaError>(req.partitions.size(), KafkaError::kUnknownServerError);
}

Status GroupCoordinator::CompleteTxn(int64_t, bool) { return Status::OK(); }

bool GroupCoordinator::HasPendingTxnOffsets(const std::string&) { return false; }

}  // namespace headrace::broker::group
