// Where the broker's metadata lives: the cluster identity and, per topic,
// its name, id, partition count and config overrides. Single node: a JSON
// file in the data directory (FileMetadataStore, docs/metadata-format.md).
// A cluster will implement the same interface on ZooKeeper.
//
// Contract for every implementation: a mutating call that returns OK is
// durable (survives a crash right after it); calls are thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "broker/config/topic_config.h"
#include "common/file_env.h"
#include "common/uuid.h"
#include "headrace/status.h"

namespace headrace::broker {

struct TopicMetadata {
  std::string name;
  Uuid id;
  int32_t partition_count = 0;
  ConfigMap configs;  // overrides only
  bool operator==(const TopicMetadata&) const = default;
};

struct ClusterIdentity {
  std::string cluster_id;  // Uuid in base64 text form
  int32_t node_id = 0;
};

class MetadataStore {
 public:
  virtual ~MetadataStore() = default;
  // Establishes this node's identity. Nothing stored yet: stores `wanted`
  // (with a new random cluster id if wanted.cluster_id is empty) and returns
  // it. Already stored: returns it, after checking that wanted.node_id and a
  // non-empty wanted.cluster_id match; a mismatch maps to
  // INCONSISTENT_CLUSTER_ID.
  virtual Result<ClusterIdentity> Bootstrap(const ClusterIdentity& wanted) = 0;
  // All topics, sorted by name.
  virtual Result<std::vector<TopicMetadata>> LoadTopics() = 0;
  // Creates or replaces the topic called `topic.name`.
  virtual Status PutTopic(const TopicMetadata& topic) = 0;
  // Removes the topic; NotFound if there is none.
  virtual Status DeleteTopic(const std::string& name) = 0;
};

class FileMetadataStore final : public MetadataStore {
 public:
  static constexpr const char* kFileName = "headrace-meta.json";
  static constexpr int kFormatVersion = 1;

  // Reads <dir>/headrace-meta.json if it exists (creating `dir` if needed).
  // Every file operation goes through `env` (null = the OS), which must
  // outlive the store.
  // Errors: Corruption (unparsable file, wrong shape), Unsupported (a newer
  // format version), IOError.
  static Result<std::unique_ptr<FileMetadataStore>> Open(const std::string& dir,
                                                         FileEnv* env = nullptr);

  Result<ClusterIdentity> Bootstrap(const ClusterIdentity& wanted) override;
  Result<std::vector<TopicMetadata>> LoadTopics() override;
  Status PutTopic(const TopicMetadata& topic) override;
  Status DeleteTopic(const std::string& name) override;

  const std::string& path() const { return path_; }

 private:
  FileMetadataStore(std::string dir, FileEnv* env);
  Status ReadFile();
  // Writes the whole state: temp file, fsync, rename over, fsync the dir.
  // REQUIRES: mu_ held.
  Status WriteLocked();

  const std::string dir_;
  const std::string path_;
  FileEnv* const env_;
  std::mutex mu_;  // guards everything below and serialises file writes
  bool has_identity_ = false;
  ClusterIdentity identity_;
  std::map<std::string, TopicMetadata> topics_;
};

// The file's text for a given state, and back (exposed for tests and tools).
std::string EncodeMetadataFile(const ClusterIdentity* identity,
                               const std::map<std::string, TopicMetadata>& topics);
Status DecodeMetadataFile(std::string_view text, bool* has_identity, ClusterIdentity* identity,
                          std::map<std::string, TopicMetadata>* topics);

}  // namespace headrace::broker
