// Producer state snapshots, in Kafka's .snapshot format: the producer state
// of a partition below an offset, <dir>/<20-digit offset>.snapshot, so that
// opening a partition replays only the log after the newest snapshot.
//
//   int16 version (1) | uint32 CRC-32C of everything after it |
//   int32 entry count | entries, each:
//     int64 producer id | int16 epoch | int32 last sequence |
//     int64 last offset | int32 offset delta (last - first of the last
//     batch) | int64 timestamp | int32 coordinator epoch |
//     int64 current transaction first offset (-1 = none)
//
// (docs/transactions.md, "On-disk formats"). Written by Partition at a
// segment roll (by the flusher, once the log below the snapshot's offset is
// flushed) and at a clean Close; the newest kSnapshotsKept are kept. A file
// whose CRC or size does not match is ignored with a warning.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "broker/partition/producer_state.h"
#include "headrace/status.h"
#include "headrace/types.h"

namespace headrace {
class FileEnv;
}

namespace headrace::broker {

inline constexpr int kSnapshotsKept = 2;

// The bytes of a snapshot of `table`.
std::string EncodeProducerSnapshot(const ProducerStateTable& table);
// Restores the entries of `bytes` into `table` (ProducerStateTable::Restore).
// Errors: Corruption (size, version, CRC).
Status DecodeProducerSnapshot(std::string_view bytes, ProducerStateTable* table);

// The offsets of the snapshot files in `dir`, ascending.
Result<std::vector<Offset>> ListProducerSnapshots(FileEnv& env, const std::string& dir);
// Writes the snapshot at `offset` atomically and durably, then deletes all
// but the newest kSnapshotsKept.
Status WriteProducerSnapshot(FileEnv& env, const std::string& dir, Offset offset,
                             std::string_view bytes);
// Deletes the snapshots above `offset` (truncation).
Status DeleteProducerSnapshotsAbove(FileEnv& env, const std::string& dir, Offset offset);
// Loads the newest valid snapshot at or below `max_offset` into `table`
// (cleared first); returns its offset, or -1 when there is none (`table`
// is then empty). Garbled files are skipped with a warning.
Result<Offset> LoadNewestProducerSnapshot(FileEnv& env, const std::string& dir, Offset max_offset,
                                          ProducerStateTable* table);

}  // namespace headrace::broker
