// Kafka's read_committed rule (KIP-98), as a consumer applies it to the
// batches of one partition's Fetch response: a producer's transactional
// batches are aborted from the first offset its aborted transaction wrote
// until its ABORT marker. Used where headrace decides which records a
// read_committed reader gets without the client's help: the Arrow decoder
// (pipeline/record_columns.cc) and share fetches, whose acquired records
// must not include aborted ones (broker/api/share_partition_ops.cc).
//
// Threading: not thread-safe; one filter per pass over one partition's
// batches.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <unordered_set>
#include <vector>

#include "headrace/record_batch.h"

namespace headrace {

class AbortedFilter {
 public:
  // `aborted`: the aborted transactions overlapping the batches to come (a
  // Fetch response's list; any order).
  explicit AbortedFilter(std::span<const AbortedTransaction> aborted);

  // Call for each batch in offset order. `batch` is the whole batch when
  // `h` is a control batch (its marker is read), else may be just the
  // header. True when its records are not read: a control batch, or a
  // transactional batch of a producer whose aborted transaction is open.
  // An ABORT marker closes its producer's aborted transaction.
  bool Skip(std::span<const uint8_t> batch, const BatchHeader& h);

 private:
  std::vector<AbortedTransaction> pending_;  // by first offset
  size_t next_ = 0;                          // first of pending_ not yet opened
  std::unordered_set<int64_t> open_;         // producers inside an aborted transaction
};

}  // namespace headrace
