// One transactional id's state in the transaction coordinator (KIP-98), and
// the record that stores it in the coordinator's log.
//
// States (Kafka's numbering, also the on-disk byte):
//   Empty(0)             no transaction open; InitProducerId done or expired
//   Ongoing(1)           AddPartitionsToTxn/AddOffsetsToTxn added partitions
//   PrepareCommit(2)     EndTxn(commit) accepted: the decision is durable,
//   PrepareAbort(3)      markers are being written to every partition
//   CompleteCommit(4)    every marker written; partitions cleared
//   CompleteAbort(5)
//   Dead(6)              expired (transactional.id.expiration.ms); removed
//   PrepareEpochFence(7) Kafka's step before fencing an Ongoing transaction;
//                        headrace goes straight to PrepareAbort with the
//                        bumped epoch and never holds this state
//
// Record (the coordinator's log, docs/transactions.md "On-disk formats"),
// Kafka's __transaction_state layout, big-endian:
//   key:   int16 version (0), string transactional id
//   value: int16 version (0), int64 producer id, int16 producer epoch,
//          int32 timeout ms, int8 state, int32 partition-topic count (-1 =
//          none) then per topic: string topic, int32 count, int32 partitions;
//          int64 last update ms, int64 start ms (-1 when not Ongoing or later)
//   A null value (tombstone) removes the id.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>

#include "headrace/status.h"

namespace headrace::broker::txn {

enum class TxnState : int8_t {
  kEmpty = 0,
  kOngoing = 1,
  kPrepareCommit = 2,
  kPrepareAbort = 3,
  kCompleteCommit = 4,
  kCompleteAbort = 5,
  kDead = 6,
  kPrepareEpochFence = 7,
};

inline bool IsPrepareState(TxnState s) {
  return s == TxnState::kPrepareCommit || s == TxnState::kPrepareAbort;
}
inline bool IsCompleteState(TxnState s) {
  return s == TxnState::kCompleteCommit || s == TxnState::kCompleteAbort;
}

// "Empty", "Ongoing", ... as Kafka's ListTransactions/DescribeTransactions
// spell them.
const char* TxnStateName(TxnState s);
// Case-insensitive inverse of TxnStateName; nullopt for an unknown name.
std::optional<TxnState> TxnStateFromName(std::string_view name);

using TxnPartition = std::pair<std::string, int32_t>;

struct TxnMetadata {
  std::string transactional_id;
  int64_t producer_id = -1;
  int16_t producer_epoch = -1;
  int32_t timeout_ms = 60000;
  TxnState state = TxnState::kEmpty;
  std::set<TxnPartition> partitions;  // those the open transaction touched
  int64_t update_ms = 0;              // last state change
  int64_t start_ms = -1;              // when the transaction became Ongoing

  // In memory only. The id and epoch handed out before the last bump
  // (KIP-360: a client retrying InitProducerId with them gets the current
  // ones again).
  int64_t last_producer_id = -1;
  int16_t last_producer_epoch = -1;
  // A PrepareCommit/PrepareAbort whose markers are being written.
  bool markers_pending = false;
};

std::string EncodeTxnKey(const std::string& transactional_id);
std::string EncodeTxnValue(const TxnMetadata& m);
// Errors: Corruption for truncated or unknown layouts.
Result<std::string> DecodeTxnKey(std::string_view bytes);
Result<TxnMetadata> DecodeTxnValue(std::string_view bytes);

}  // namespace headrace::broker::txn
