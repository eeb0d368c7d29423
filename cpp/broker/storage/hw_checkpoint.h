// The high-watermark checkpoint of one log directory (cluster mode only):
// <log dir>/replication-offset-checkpoint, Kafka's file (docs/log-format.md):
//
//   0                          format version
//   <n>                        number of entries
//   <topic> <partition> <hw>   n lines, one per partition of the directory
//
// Written atomically (a temp file, fsync, rename, directory fsync) every
// replica.high.watermark.checkpoint.interval.ms by the maintenance thread
// and at clean shutdown (BrokerState); read once at start, where a
// partition's HW starts at min(checkpointed HW, log end), 0 when absent
// (Partition::StartHighWatermarkAt). A single node does not write it: its
// HW is the fsync point (docs/durability.md).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/file_env.h"
#include "headrace/status.h"
#include "headrace/types.h"

namespace headrace::broker {

class LogDirs;
class Partition;

inline constexpr const char* kHwCheckpointName = "replication-offset-checkpoint";

// (topic, partition) -> high watermark.
using HwCheckpoint = std::map<std::pair<std::string, int32_t>, Offset>;

std::string FormatHwCheckpoint(const HwCheckpoint& entries);
// Errors: Corruption naming `path` (unknown version, bad count, a bad or
// missing entry, trailing data).
Result<HwCheckpoint> ParseHwCheckpoint(std::string_view text, const std::string& path);

// <dir>/replication-offset-checkpoint; empty when the file does not exist.
// Errors: IOError, Corruption.
Result<HwCheckpoint> ReadHwCheckpoint(FileEnv& env, const std::string& dir);
// Replaces <dir>/replication-offset-checkpoint atomically and durably.
Status WriteHwCheckpoint(FileEnv& env, const std::string& dir, const HwCheckpoint& entries);

// Writes the checkpoint of every online directory of `dirs` with the HW of
// each of `partitions` that lives in it and is not offline (a directory
// holding none gets an empty file, as Kafka's). Returns the first error
// (the others are still attempted); never takes a directory offline.
Status CheckpointHighWatermarks(LogDirs& dirs,
                                const std::vector<std::shared_ptr<Partition>>& partitions);

}  // namespace headrace::broker
