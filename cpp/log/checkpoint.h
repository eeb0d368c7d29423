// The log's small metadata file, <dir>/log.checkpoint (docs/log-format.md):
// the log start offset and the flush point, replaced atomically by writing
// log.checkpoint.tmp and renaming it over the old one.
#pragma once

#include <optional>
#include <string>

#include "common/file_env.h"
#include "headrace/status.h"
#include "headrace/types.h"

namespace headrace {

struct Checkpoint {
  Offset log_start_offset{0};
  // Flush point: every batch below recovery_offset is fsynced. It lies in
  // the segment based at recovery_segment, at byte recovery_position (the
  // flushed size of that segment).
  Offset recovery_offset{0};
  Offset recovery_segment{0};
  int64_t recovery_position = 0;
  // True only when written by Close() after everything was flushed and the
  // indexes trimmed: then recovery trusts every segment.
  bool clean_shutdown = false;
};

// nullopt when the file does not exist; Corruption when it is garbled (bad
// syntax or CRC), IOError when it cannot be read.
Result<std::optional<Checkpoint>> ReadCheckpoint(FileEnv& env, const std::string& dir);
// Writes the temp file and renames it into place; with `sync`, the file and
// the directory are fsynced so the new content survives a crash.
Status WriteCheckpoint(FileEnv& env, const std::string& dir, const Checkpoint& c, bool sync);

}  // namespace headrace
