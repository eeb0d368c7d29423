// Settings of the transaction coordinator (Kafka's transaction.* and
// transactional.id.* broker properties). docs/transactions.md lists them.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "broker/config/config_table.h"

namespace headrace::broker::txn {

struct TxnConfig {
  // transaction.max.timeout.ms: largest transaction.timeout.ms a producer
  // may ask for (INVALID_TRANSACTION_TIMEOUT above it).
  int32_t max_timeout_ms = 900000;
  // transactional.id.expiration.ms: an id with no transaction open and no
  // activity for this long is removed.
  int64_t id_expiration_ms = 604800000;
  // transaction.abort.timed.out.transaction.cleanup.interval.ms: how often
  // transactions open longer than their timeout are aborted.
  int32_t abort_check_interval_ms = 10000;
  // transaction.remove.expired.transaction.cleanup.interval.ms.
  int32_t expire_check_interval_ms = 3600000;
  // transaction.state.log.*: the coordinators' logs. In a cluster they are
  // the partitions of the replicated __transaction_state topic
  // (num.partitions of them, fixed when the topic is created; a
  // transactional id's coordinator leads abs(hashCode(id)) % partitions);
  // segment.bytes is also the compaction step.
  int32_t log_replication_factor = 3;
  int32_t log_num_partitions = 50;
  int32_t log_min_isr = 2;
  int64_t log_segment_bytes = 104857600;

  Status Set(const std::string& key, const std::string& value);
  std::vector<SettingDoc> Describe() const;
  // Moves every transaction setting out of `props`. Errors as Set.
  Status Extract(std::map<std::string, std::string>& props);
};

}  // namespace headrace::broker::txn
