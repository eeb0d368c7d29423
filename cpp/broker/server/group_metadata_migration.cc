#include "broker/server/group_metadata_migration.h"

#include <chrono>
#include <set>
#include <sstream>
#include <utility>

#include "broker/api/group_lookup.h"
#include "broker/coordinator/base/group_partition.h"
#include "broker/base/kafka_error.h"
#include "broker/replication/leader_connection.h"
#include "common/file_env.h"
#include "common/logging.h"

namespace headrace::broker {
namespace {

constexpr const char* kLogDir = "__group_metadata";
constexpr int kConnectTimeoutMs = 5000;
constexpr int kReadTimeoutMs = 15000;
// Between passes while something is still to commit (the cluster is not
// serving yet, a coordinator is moving, a topic does not exist yet).
constexpr std::chrono::milliseconds kRetry{500};
// OffsetCommit v8: flexible, carries the leader epoch, no member epoch
// semantics (v9 adds KIP-848's).
constexpr int16_t kOffsetCommitVersion = 8;

bool Retriable(KafkaError e) {
  switch (e) {
    case KafkaError::kNotCoordinator:
    case KafkaError::kCoordinatorNotAvailable:
    case KafkaError::kCoordinatorLoadInProgress:
    case KafkaError::kRequestTimedOut:
    case KafkaError::kUnknownTopicOrPartition:  // the topic may be created later
      return true;
    default:
      return false;
  }
}

}  // namespace

struct GroupMetadataMigration::Connection {
  // Over the inter-broker listener, secured as it is (null: PLAINTEXT).
  Connection(int32_t self, std::shared_ptr<const replication::InterBrokerSecurity> security)
      : conn("headrace-group-migration-" + std::to_string(self), std::move(security)) {}
  replication::LeaderConnection conn;
};

Result<std::unique_ptr<GroupMetadataMigration>> GroupMetadataMigration::Start(
    BrokerContext& ctx, const std::string& data_dir, FileEnv* env,
    const group::GroupConfig& config, PartitionServices services) {
  FileEnv& fs = env ? *env : *FileEnv::Default();
  const std::string path = data_dir + "/" + kLogDir;
  if (!fs.StatPath(path + "/.").ok()) return std::unique_ptr<GroupMetadataMigration>();
  // The single node's coordinator replays its log; only its committed
  // offsets are kept.
  group::GroupCoordinator::Options o;
  o.config = config;
  o.data_dir = data_dir;
  o.env = env;
  o.start_timer = false;
  o.log_services = services;
  HR_ASSIGN_OR_RETURN(auto old, group::GroupCoordinator::Open(std::move(o)));
  std::map<std::string, Offsets> groups;
  for (const group::GroupListing& g : old->ListGroups({})) {
    std::vector<group::FetchedOffset> fetched;
    if (old->FetchOffsets(g.group_id, std::nullopt, &fetched) != KafkaError::kNone) continue;
    for (const group::FetchedOffset& f : fetched) {
      if (f.committed.offset < 0) continue;
      groups[g.group_id][{f.topic, f.partition}] = f.committed;
    }
  }
  old->Stop();
  old.reset();
  std::unique_ptr<GroupMetadataMigration> m(
      new GroupMetadataMigration(ctx, data_dir, env, std::move(groups)));
  HR_LOG(kInfo) << "group metadata migration: " << path << " holds " << m->offsets_total_
                << " committed offset(s) of " << m->groups_total_
                << " group(s); re-committing them to the cluster's coordinators once it serves";
  m->thread_ = std::thread([p = m.get()] {
    pthread_setname_np(pthread_self(), "hr-group-migrate");
    p->Run();
  });
  return m;
}

GroupMetadataMigration::GroupMetadataMigration(BrokerContext& ctx, std::string data_dir,
                                               FileEnv* env,
                                               std::map<std::string, Offsets> groups)
    : ctx_(ctx), data_dir_(std::move(data_dir)), env_(env), pending_(std::move(groups)) {
  groups_total_ = pending_.size();
  for (const auto& [g, offsets] : pending_) offsets_total_ += offsets.size();
}

GroupMetadataMigration::~GroupMetadataMigration() { Stop(); }

void GroupMetadataMigration::Stop() {
  {
    std::lock_guard<std::mutex> l(mu_);
    stopped_ = true;
    for (auto& [id, c] : connections_) c->conn.Interrupt();
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void GroupMetadataMigration::Run() {
  while (true) {
    if (Pass()) {
      Finish();
      return;
    }
    std::unique_lock<std::mutex> l(mu_);
    if (cv_.wait_for(l, kRetry, [this] { return stopped_; })) return;
  }
}

bool GroupMetadataMigration::Pass() {
  ClusterState* cluster = ctx_.state->cluster();
  if (cluster == nullptr || !cluster->applied()) return false;
  auto view = cluster->view();
  if (view->brokers.empty()) return false;
  if (pending_.empty()) return true;
  if (!view->FindTopic(kConsumerOffsetsTopic)) {
    EnsureConsumerOffsetsTopic(ctx_);  // as the first FindCoordinator would
    return false;
  }
  for (auto it = pending_.begin(); it != pending_.end();) {
    {
      std::lock_guard<std::mutex> l(mu_);
      if (stopped_) return false;
    }
    CommitGroup(it->first, it->second);
    it = it->second.empty() ? pending_.erase(it) : std::next(it);
  }
  if (!pending_.empty()) {
    // Once per change: what still waits (topics the cluster lacks, or
    // coordinators not reachable yet).
    std::set<std::string> topics;
    size_t waiting = 0;
    for (const auto& [g, offsets] : pending_) {
      waiting += offsets.size();
      for (const auto& [tp, c] : offsets) topics.insert(tp.first);
    }
    std::ostringstream line;
    line << "group metadata migration: " << committed_ << " of " << offsets_total_
         << " offset(s) re-committed; " << waiting << " of " << pending_.size()
         << " group(s) wait (coordinator not reachable, or topic not in the cluster:";
    for (const std::string& t : topics) line << ' ' << t;
    line << ')';
    if (line.str() != last_report_) {
      last_report_ = line.str();
      HR_LOG(kInfo) << last_report_;
    }
  }
  return pending_.empty();
}

void GroupMetadataMigration::CommitGroup(const std::string& group, Offsets& offsets) {
  const int32_t leader = ctx_.group_coordinator_id(group);
  std::string host;
  int32_t port = 0;
  if (leader < 0 || !ctx_.FindEndpoint(leader, &host, &port)) return;  // next pass
  Connection* c = nullptr;
  {
    std::lock_guard<std::mutex> l(mu_);
    if (stopped_) return;
    auto& slot = connections_[leader];
    if (!slot) slot = std::make_unique<Connection>(ctx_.node_id, ctx_.inter_broker_security);
    c = slot.get();
  }
  if (!c->conn.connected()) {
    Status st = c->conn.Connect(host, port, kConnectTimeoutMs, kReadTimeoutMs);
    if (!st.ok()) return;  // next pass
  }
  protocol::OffsetCommitRequest req;
  req.group_id = group;
  req.generation_id_or_member_epoch = -1;  // an admin commit: no member, no generation
  req.member_id = "";
  for (const auto& [tp, committed] : offsets) {
    if (req.topics.empty() || req.topics.back().name != tp.first) {
      req.topics.emplace_back();
      req.topics.back().name = tp.first;
    }
    auto& p = req.topics.back().partitions.emplace_back();
    p.partition_index = tp.second;
    p.committed_offset = committed.offset;
    p.committed_leader_epoch = committed.leader_epoch;
    p.committed_metadata = committed.metadata.value_or("");
  }
  auto resp = c->conn.Call<protocol::OffsetCommitResponse>(req, kOffsetCommitVersion);
  if (!resp.ok()) {
    HR_LOG(kWarn) << "group metadata migration: OffsetCommit of group " << group << " to broker "
                  << leader << " (" << host << ":" << port << "): " << resp.status().ToString();
    c->conn.Close();
    return;
  }
  for (const auto& t : resp->topics) {
    for (const auto& p : t.partitions) {
      const auto e = static_cast<KafkaError>(p.error_code);
      auto it = offsets.find({t.name, p.partition_index});
      if (it == offsets.end()) continue;
      if (e == KafkaError::kNone) {
        offsets.erase(it);
        ++committed_;
      } else if (!Retriable(e)) {
        // Not going to change by retrying (e.g. an authorization failure):
        // said once, kept in the renamed log.
        HR_LOG(kWarn) << "group metadata migration: group " << group << " " << t.name << "-"
                      << p.partition_index << " offset " << it->second.offset
                      << " not migrated: " << KafkaErrorName(e);
        offsets.erase(it);
      }
    }
  }
}

void GroupMetadataMigration::Finish() {
  FileEnv& fs = env_ ? *env_ : *FileEnv::Default();
  const int64_t now = std::chrono::duration_cast<std::chrono::seconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count();
  const std::string from = data_dir_ + "/" + kLogDir;
  const std::string to = from + ".migrated." + std::to_string(now);
  Status st = fs.Rename(from, to);
  if (!st.ok()) {
    HR_LOG(kError) << "group metadata migration: cannot rename " << from << " to " << to << ": "
                   << st.ToString() << " (the next start migrates again)";
    return;
  }
  HR_LOG(kInfo) << "group metadata migration: re-committed " << committed_ << " of "
                << offsets_total_ << " committed offset(s) of " << groups_total_
                << " group(s) to the cluster's coordinators; " << from << " renamed to " << to;
}

}  // namespace headrace::broker
