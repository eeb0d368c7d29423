// The text of Kafka's checkpoint files (leader-epoch-checkpoint,
// replication-offset-checkpoint, docs/log-format.md):
//
//   0          format version
//   <n>        number of entries
//   ...        n lines of space-separated fields, one per entry
//
// Only the framing lives here; each file reads and checks its own fields.
#pragma once

#include <functional>
#include <istream>
#include <string>
#include <string_view>
#include <vector>

#include "headrace/status.h"

namespace headrace::broker {

// Version 0, the count, then `lines` (each without its newline).
std::string FormatCheckpointText(const std::vector<std::string>& lines);

// Reads the version and count, then calls `read_entry` once per entry with
// the stream at that entry; it reads the entry's fields and returns "" when
// they are well formed, else why not ("missing", "out of range", ...).
// Errors: Corruption "<path>: <why>" (unknown version, bad entry count,
// "entry <i> <why>", trailing data).
Status ParseCheckpointText(std::string_view text, const std::string& path,
                           const std::function<std::string(std::istream& in)>& read_entry);

}  // namespace headrace::broker
