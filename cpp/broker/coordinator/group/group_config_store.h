// GroupConfigStore: the group configs (group_resource_config.h) every group
// id sets, as this broker knows them. A group id need not name an existing
// group (Kafka keeps configs for a group before it exists).
//
// Persistence (single node): <data_dir>/group-configs.json,
//   {"version": 1, "groups": {"<group id>": {"<key>": "<value>"}}}
// replaced atomically (WriteFileAtomically: temp file, fsync, rename)
// before a change is published or answered, read at start. Cluster mode:
// ZooKeeper's /config/groups/<group id> (Kafka's ZK layout) is the source;
// the control plane hands every group's configs to ReplaceAll with each
// cluster state (ApplyClusterGroupConfigs), and the file is this broker's
// copy of the last ones seen.
//
// Threading: thread-safe; Get copies under the mutex, changes are
// serialised (persist, then publish).
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "broker/config/topic_config.h"
#include "common/file_env.h"
#include "headrace/status.h"

namespace headrace::broker::group {

using GroupConfigTable = std::map<std::string, ConfigMap>;  // group id -> overrides

class GroupConfigStore {
 public:
  static constexpr const char* kFileName = "group-configs.json";

  // Reads the file in `data_dir` ("" = memory only; none = no configs).
  // `env` null = the OS; it must outlive this object.
  static Result<std::unique_ptr<GroupConfigStore>> Open(const std::string& data_dir, FileEnv* env);

  // The overrides of `group` (empty when it sets none).
  ConfigMap Get(const std::string& group) const;
  GroupConfigTable All() const;

  // Replaces the overrides of `group` (empty = removes the group's entry)
  // and persists. Checks are the caller's. Errors: KAFKA_STORAGE_ERROR.
  Status Replace(const std::string& group, const ConfigMap& overrides);
  // Replaces every group's overrides (cluster mode); nothing happens when
  // they equal the current ones. Errors: KAFKA_STORAGE_ERROR.
  Status ReplaceAll(GroupConfigTable table);

 private:
  GroupConfigStore(std::string dir, FileEnv* env) : dir_(std::move(dir)), env_(env) {}
  Status Persist(const GroupConfigTable& table);

  const std::string dir_;
  FileEnv* const env_;
  std::mutex change_mu_;   // serialises changes (persist + publish in order)
  mutable std::mutex mu_;  // guards table_
  GroupConfigTable table_;
};

// Cluster mode: the "group_configs" member of a cluster state
// ({"<group id>": {"<key>": "<value>"}}, python/headrace/cluster) replaces
// the store's table. A state without the member leaves it as it is.
void ApplyClusterGroupConfigs(std::string_view state_json, GroupConfigStore* store);

}  // namespace headrace::broker::group
