// Migration of a single-node data dir's group log into a cluster
// (docs/cluster.md "Migrating a single node's groups"). A data dir that ran
// single-node holds its groups in data_dir/__group_metadata; started as a
// cluster member, the groups live in __consumer_offsets instead. Once the
// cluster serves, this re-commits every group's committed offsets (only
// those: members rejoin anyway, pending transactional offsets belonged to
// transactions the old coordinator can no longer finish) through the normal
// path: an OffsetCommit with generation -1 and no member id, as an admin
// client sends, to the leader of the group's partition, over the
// inter-broker link (replication::LeaderConnection). When every offset is
// committed it renames the log to __group_metadata.migrated.<unix seconds>
// (kept, never deleted; the name has no "-<n>" suffix, so the data dir scan
// never takes it for a partition) and logs one line with the counts.
//
// Offsets of a topic the cluster does not have (UNKNOWN_TOPIC_OR_PARTITION:
// a single node's topics are not served by the cluster, docs/cluster.md)
// wait, with the log left in place, until the topic exists. Killed part way
// (or stopped), the next start migrates again: re-committing the same
// offsets is harmless.
#pragma once

#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "broker/api/handler.h"
#include "broker/coordinator/group/group_config.h"
#include "broker/coordinator/group/group_coordinator.h"

namespace headrace::broker {

class GroupMetadataMigration {
 public:
  // Reads data_dir/__group_metadata (replayed by a GroupCoordinator opened
  // just for that and closed again) and starts the migrating thread. Null
  // when there is no such log. A log without committed offsets is renamed at
  // once. Errors: the log's read errors (the broker does not start).
  static Result<std::unique_ptr<GroupMetadataMigration>> Start(
      BrokerContext& ctx, const std::string& data_dir, FileEnv* env,
      const group::GroupConfig& config, PartitionServices services);
  ~GroupMetadataMigration();  // Stop()
  // Stops the thread (an OffsetCommit in flight is interrupted); the log
  // stays for the next start. Idempotent.
  void Stop();

 private:
  using Offsets = std::map<group::TopicPartitionKey, group::CommittedOffset>;
  GroupMetadataMigration(BrokerContext& ctx, std::string data_dir, FileEnv* env,
                         std::map<std::string, Offsets> groups);
  void Run();
  // One pass over the groups still to commit; true when none is left.
  bool Pass();
  // Commits `offsets` of `group` at its coordinator; erases what was
  // committed from `offsets`, counts it in committed_.
  void CommitGroup(const std::string& group, Offsets& offsets);
  void Finish();  // renames the log, logs the counts

  BrokerContext& ctx_;
  const std::string data_dir_;
  FileEnv* const env_;
  std::map<std::string, Offsets> pending_;  // owned by the thread
  size_t groups_total_ = 0;
  size_t offsets_total_ = 0;
  size_t committed_ = 0;
  std::string last_report_;  // the last "waiting" line logged (once per change)
  struct Connection;  // a LeaderConnection to one broker
  std::map<int32_t, std::unique_ptr<Connection>> connections_;  // owned by the thread

  std::mutex mu_;
  std::condition_variable cv_;
  bool stopped_ = false;  // guarded by mu_
  std::thread thread_;
};

}  // namespace headrace::broker
