// Small file helpers for the broker's own files (not the log's).
#pragma once

#include <string>
#include <string_view>

#include "headrace/status.h"

namespace headrace::broker {

// The whole file. Errors: NotFound if it does not exist, IOError otherwise.
Result<std::string> ReadWholeFile(const std::string& path);

// Replaces <dir>/<name> with `contents` atomically and durably: writes
// <dir>/<name>.tmp, fsyncs it, renames it over <dir>/<name>, fsyncs <dir>.
// After a crash the file holds either the old or the new contents.
Status WriteFileAtomically(const std::string& dir, const std::string& name,
                           std::string_view contents);

// fsyncs a directory (makes renames/creations in it durable).
Status SyncDir(const std::string& dir);

}  // namespace headrace::broker
