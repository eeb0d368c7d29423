// How the transaction coordinator ends a transaction in its partitions:
// Kafka's transaction markers (COMMIT / ABORT control batches, KIP-98).
//
// The coordinator hands one TxnMarkerSpec per completing transaction to a
// TxnMarkerWriter and records the transaction COMPLETE once `done` reports
// every partition written. The local writer (api/txn_marker_local.h) appends
// to partitions this broker leads and hands partitions of
// __consumer_offsets to the group coordinator (transactional offset
// commits); the WriteTxnMarkers API (27) uses the same writer.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "broker/base/kafka_error.h"

namespace headrace::broker::txn {

struct TxnMarkerSpec {
  int64_t producer_id = -1;
  int16_t producer_epoch = -1;
  int32_t coordinator_epoch = 0;
  bool commit = false;  // COMMIT, else ABORT
  std::vector<std::pair<std::string, int32_t>> partitions;
};

// One error per partition of the spec, in order: NONE once the marker is
// committed (below the partition's high watermark, so acks=all durable), or
// the partition's error (NOT_LEADER_OR_FOLLOWER, UNKNOWN_TOPIC_OR_PARTITION,
// KAFKA_STORAGE_ERROR, REQUEST_TIMED_OUT, INVALID_PRODUCER_EPOCH ...).
// Retriable errors are retried by the coordinator; a partition that no
// longer exists (UNKNOWN_TOPIC_OR_PARTITION) counts as written.
using MarkersDone = std::function<void(std::vector<KafkaError>)>;

class TxnMarkerWriter {
 public:
  virtual ~TxnMarkerWriter() = default;
  // Writes the markers of `spec`; calls `done` exactly once, on any thread,
  // with no coordinator lock held by the writer.
  virtual void Write(TxnMarkerSpec spec, MarkersDone done) = 0;
};

}  // namespace headrace::broker::txn
