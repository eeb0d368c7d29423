// Broker-wide producer ids for idempotent producers (InitProducerId).
//
// Ids are handed out from blocks of kBlockSize. Before the first id of a
// block is given out, the end of the block is written durably to
// <data_dir>/producer_id_block (one decimal number and a newline, replaced
// atomically with WriteFileAtomically). After a restart allocation resumes
// at that number, so an id is never handed out twice, even after a crash
// (at most one block of ids is skipped).
//
// The allocator also remembers (in memory only) the current epoch of each
// id it gave out, for KIP-360 epoch bumps: a producer that presents its
// current id and epoch gets the epoch + 1; anything else gets a new id.
//
// In a cluster every broker allocates on its own, so ids are striped by
// node id (SetClusterStripe): broker N hands out n * kClusterStride + N for
// its local counter n, and no two brokers ever give out the same id
// (Kafka's ZooKeeper mode reserves blocks in /latest_producer_id_block
// instead; the stripe needs no coordination and leaves 2^47 ids per broker).
//
// Threading: all methods are thread-safe (one internal mutex).
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "common/file_env.h"
#include "headrace/status.h"

namespace headrace::broker {

struct ProducerIdAndEpoch {
  int64_t producer_id = -1;
  int16_t epoch = -1;
};

class ProducerIdAllocator {
 public:
  static constexpr int64_t kBlockSize = 1000;
  static constexpr const char* kFileName = "producer_id_block";

  // Reads the block file in `data_dir` (missing = start at 0).
  // Errors: IOError; Corruption when the file does not hold a number >= 0.
  // File operations go through `env` (null = the OS), which must outlive it.
  static Result<std::unique_ptr<ProducerIdAllocator>> Open(const std::string& data_dir,
                                                           FileEnv* env = nullptr);

  // Cluster mode: ids become n * kClusterStride + node_id (see above).
  // REQUIRES: 0 <= node_id < kClusterStride; called before any allocation.
  static constexpr int64_t kClusterStride = 65536;
  void SetClusterStripe(int32_t node_id) {
    std::lock_guard<std::mutex> lock(mu_);
    stride_ = kClusterStride;
    stripe_ = node_id;
  }

  // A new producer id with epoch 0. Errors: IOError writing the block file.
  Result<ProducerIdAndEpoch> Allocate();

  // KIP-360: if `current` is an id this allocator gave out and its epoch
  // is the one we know, returns it with epoch + 1 (a new id with epoch 0
  // when the epoch would pass INT16_MAX); otherwise a new id (e.g. after a
  // restart, when the epochs are forgotten).
  Result<ProducerIdAndEpoch> BumpOrAllocate(ProducerIdAndEpoch current);

 private:
  ProducerIdAllocator(std::string data_dir, FileEnv* env, int64_t next)
      : data_dir_(std::move(data_dir)), env_(env), next_(next), block_end_(next) {}
  // REQUIRES: mu_ held.
  Result<ProducerIdAndEpoch> AllocateLocked();

  const std::string data_dir_;
  FileEnv* const env_;
  std::mutex mu_;                                 // guards everything below
  int64_t next_;                                  // next id to hand out
  int64_t block_end_;                             // ids < block_end_ are reserved on disk
  std::unordered_map<int64_t, int16_t> epochs_;   // id -> current epoch
  int64_t stride_ = 1;                            // id = counter * stride_ + stripe_
  int64_t stripe_ = 0;
};

}  // namespace headrace::broker
