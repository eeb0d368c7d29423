// LogDirs: the broker's log directories (log.dirs, JBOD): each one locked,
// carrying its own identity file, holding partitions, and online or offline.
//
//   <dir>/.lock             DataDirLock (one per directory)
//   <dir>/meta.properties   DirIdentity: version, cluster.id, node.id,
//                           directory.id (Kafka's file and keys), written
//                           once (fsynced) when missing, checked at start
//   <dir>/<topic>-<p>       partitions (partition_dir.h)
//
// The first directory is data_dir: it also holds the broker's metadata
// (headrace-meta.json, the group and transaction logs, producer_id_block).
// Its failure stops the broker, as does the failure of every directory
// (Kafka halts in both cases); any other directory fails alone.
//
// Failure: the first I/O error seen on a directory (a partition going
// offline, a failed listing, create or rename) takes the whole directory
// offline, once: it is logged once, the offline handler takes its other
// partitions offline (they answer KAFKA_STORAGE_ERROR), and nothing is
// placed on it or written to it again until a restart.
//
// Threading: every method is thread-safe. Paths and ids never change after
// Open; the online flags are atomics.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "broker/storage/data_dir_lock.h"
#include "broker/storage/metadata_store.h"
#include "broker/partition/partition.h"
#include "common/file_env.h"
#include "common/uuid.h"
#include "headrace/status.h"

namespace headrace::broker {

// A directory's meta.properties.
struct DirIdentity {
  std::string cluster_id;
  int32_t node_id = 0;
  Uuid directory_id;
  bool operator==(const DirIdentity&) const = default;
};
inline constexpr const char* kDirIdentityFile = "meta.properties";
std::string EncodeDirIdentity(const DirIdentity& identity);
// Errors: Corruption (a missing key, a malformed value, an unknown version).
Result<DirIdentity> DecodeDirIdentity(std::string_view text);

class LogDirs {
 public:
  struct Options {
    std::vector<std::string> paths;  // log.dirs in order; non-empty
    FileEnv* env = nullptr;          // null = the OS
    bool lock = true;                // DataDirLock each directory (false: tests)
    // Called when the broker must stop (the first directory or every
    // directory is offline); null = log and _exit(1), as Kafka halts.
    std::function<void(const std::string& why)> halt;
  };

  // Normalises the paths (absolute, no trailing slash) and locks each
  // directory. Errors: InvalidArgument (no paths), the lock's IOError when
  // another broker holds a directory (fatal: a configuration error). Any
  // other failure to create or lock a directory other than the first takes
  // it offline (logged) instead.
  static Result<std::unique_ptr<LogDirs>> Open(Options options);

  // After the cluster identity is known: checks every online directory's
  // meta.properties (writing it, fsynced, where missing — which also probes
  // that the directory is writable). Errors: INCONSISTENT_CLUSTER_ID when a
  // directory belongs to another cluster or node, Corruption for an
  // unreadable file or two directories with the same directory.id (one
  // copied onto another), and any failure of the first directory. Other I/O
  // failures take that directory offline.
  Status Bootstrap(const ClusterIdentity& identity);

  int size() const { return static_cast<int>(dirs_.size()); }
  const std::string& path(int i) const { return dirs_[i]->path; }
  const Uuid& id(int i) const { return dirs_[i]->identity.directory_id; }
  bool online(int i) const { return !dirs_[i]->offline.load(std::memory_order_acquire); }
  bool any_offline() const;
  // Why directory i went offline ("" while online).
  std::string offline_reason(int i) const;
  FileEnv& env() const { return *env_; }

  // The directory holding `partition_dir` (a path <dir>/<name> as built by
  // PartitionDirPath over path(i)); -1 if none.
  int IndexOf(std::string_view partition_dir) const;
  // Where a new partition goes (Kafka's rule): the online directory holding
  // the fewest partitions, `counts[i]` for directory i; the first such on a
  // tie. Not weighted by size. -1 when every directory is offline.
  int PickForNewPartition(const std::vector<int64_t>& counts) const;

  // Takes directory i offline because of `cause` (never with a single
  // directory: there a failure takes only the failing partition offline,
  // and the broker keeps serving the others). The first call logs it,
  // runs the offline handler, and halts the broker when it was the first
  // directory or the last online one; later calls do nothing. Returns true
  // for the first call.
  bool MarkOffline(int i, const Status& cause);
  // A partition whose log is under directory i went offline by an I/O
  // error: MarkOffline(i). Wired as every partition's
  // PartitionServices::on_offline (OnPartitionOffline), so the seam costs
  // nothing on the data path.
  void ReportPartitionFailure(const Partition& partition);
  std::function<void(const Partition&)> OnPartitionOffline() {
    return [this](const Partition& p) { ReportPartitionFailure(p); };
  }
  // Who takes the directory's partitions offline (the TopicRegistry). Set
  // once, before any failure can be reported.
  void SetOfflineHandler(std::function<void(int dir, const Status& cause)> handler);

 private:
  struct Dir {
    std::string path;
    DirIdentity identity;
    std::unique_ptr<DataDirLock> lock;
    std::atomic<bool> offline{false};
    std::string reason;  // guarded by mu_
  };
  explicit LogDirs(Options options);

  const Options options_;
  FileEnv* const env_;
  std::vector<std::unique_ptr<Dir>> dirs_;
  mutable std::mutex mu_;  // guards Dir::reason and handler_
  std::function<void(int, const Status&)> handler_;
};

}  // namespace headrace::broker
