// Test helpers shared by the partition and replication tests: record
// batches as a producer sends them and as a leader wrote them. Test-only.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <vector>

#include "headrace/record_batch.h"

namespace headrace::broker::testing {

// One batch of `records` records with values tag0, tag1, ...
inline std::string ProducerBatch(int records, const std::string& tag = "v") {
  std::vector<RecordInput> in;
  for (int i = 0; i < records; ++i) {
    in.push_back({std::nullopt, tag + std::to_string(i), {}, TimestampMs(1000 + i)});
  }
  return BuildBatch(in);
}

inline std::span<uint8_t> MutableBytes(std::string& s) {
  return {reinterpret_cast<uint8_t*>(s.data()), s.size()};
}

// A batch as a leader wrote it: offsets from `base`, stamped with `epoch`.
inline std::string LeaderWrittenBatch(int64_t base, int records, int32_t epoch,
                                      const std::string& tag = "v") {
  std::string b = ProducerBatch(records, tag);
  SetBaseOffset(MutableBytes(b), Offset(base));
  SetPartitionLeaderEpoch(MutableBytes(b), LeaderEpoch(epoch));
  return b;
}

}  // namespace headrace::broker::testing
