// The one place that builds and parses the names of a log's files:
//
//   <20-digit zero-padded base offset>.log | .index | .timeindex
//   the same + ".deleted"     a segment file being deleted (rename, unlink)
//   log.checkpoint            log start offset + flush point (checkpoint.h)
//   log.checkpoint.tmp        a checkpoint being written (rename target)
//   <base>.log.cleaned|.swap  the log cleaner's replacement segment (cleaner.h)
//   cleaner.checkpoint        the log cleaner's progress (cleaner.h)
// and the files a partition keeps beside its segments (the Log ignores them):
//   <20-digit segment base>.txnindex   aborted transactions of the segment
//   <20-digit offset>.snapshot         producer state below that offset
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "headrace/types.h"

namespace headrace::filename {

enum class FileKind { kLog, kOffsetIndex, kTimeIndex };

inline constexpr std::string_view kDeletedSuffix = ".deleted";
// The log cleaner's files (cleaner.h): "<base>.log.cleaned" being written,
// "<base>.log.swap" complete and replacing the segments it covers.
inline constexpr std::string_view kCleanedSuffix = ".cleaned";
inline constexpr std::string_view kSwapSuffix = ".swap";

// "00000000000000000042.log" for base 42. REQUIRES: base >= 0.
std::string SegmentFileName(Offset base, FileKind kind);
// dir + "/" + SegmentFileName(base, kind).
std::string SegmentPath(const std::string& dir, Offset base, FileKind kind);
// `path` + ".deleted".
std::string DeletedPath(const std::string& path);

// The checkpoint file and the temp file it is written to before the rename
// (WriteFileAtomically's <name>.tmp).
inline constexpr std::string_view kCheckpointName = "log.checkpoint";
inline constexpr std::string_view kCheckpointTempName = "log.checkpoint.tmp";
std::string CheckpointPath(const std::string& dir);
std::string CheckpointTempPath(const std::string& dir);

// The partition's own files (broker/partition/txn_index.h, broker/partition/producer_snapshot.h).
inline constexpr std::string_view kTxnIndexExtension = ".txnindex";
inline constexpr std::string_view kSnapshotExtension = ".snapshot";
// "<20-digit offset><extension>". REQUIRES: offset >= 0.
std::string OffsetFileName(Offset offset, std::string_view extension);
// The offset of a name "<20 digits><extension>"; nullopt for other names.
std::optional<Offset> ParseOffsetFileName(std::string_view name, std::string_view extension);

// What a directory entry is.
struct ParsedName {
  enum class Type { kSegmentFile, kCheckpoint, kCheckpointTemp };
  Type type = Type::kSegmentFile;
  Offset base{0};            // for segment files
  FileKind kind = FileKind::kLog;
  bool deleted = false;      // has the ".deleted" suffix
};

// Parses a directory entry name (not a path); nullopt for foreign names.
std::optional<ParsedName> Parse(std::string_view name);

}  // namespace headrace::filename
