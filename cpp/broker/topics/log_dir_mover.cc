#include "broker/topics/log_dir_mover.h"

#include <algorithm>

#include "broker/base/kafka_error.h"
#include "broker/storage/offline_log.h"
#include "broker/partition/partition_dir.h"
#include "common/logging.h"

namespace headrace::broker {
namespace {

constexpr int64_t kCopyChunk = 1 << 20;  // bytes per read of the source

// The bytes of `r`'s slices, read through `env`.
Result<std::string> SliceBytes(FileEnv& env, const ReadResult& r) {
  std::string out(static_cast<size_t>(r.bytes), '\0');
  size_t at = 0;
  for (const FileSlice& s : r.slices) {
    HR_ASSIGN_OR_RETURN(int64_t n, env.ReadAt(s.fd, "", out.data() + at, s.length,
                                              s.position.value()));
    if (n != s.length) return Status::IOError("short read of a log segment while moving it");
    at += static_cast<size_t>(n);
  }
  return out;
}

// The copy `dst` is no longer a prefix of `src`: it is longer, or the two
// differ in the epoch of its last record (an offset and the epoch that
// wrote it name one record, so equal epochs there mean equal prefixes).
bool Diverged(const Partition& src, const Partition& dst) {
  const Offset end = dst.log_end_offset();
  if (end > src.log_end_offset()) return true;
  if (end <= dst.log_start_offset() || end <= src.log_start_offset()) return false;
  const Offset last(end.value() - 1);
  return src.EpochAt(last) != dst.EpochAt(last);
}

// The role the control plane gave a replica (cluster mode), to give its copy.
struct Role {
  bool leader = false;
  LeaderEpoch epoch{-1};
  int32_t leader_id = -1;
  std::vector<int32_t> replicas;
  std::vector<int32_t> isr;
};

Role RoleOf(const Partition& p) {
  return Role{p.is_leader(), p.leader_epoch(), p.leader_id(), p.replicas(), p.isr()};
}

Status Assume(Partition& p, const Role& r) {
  return r.leader ? p.BecomeLeader(r.epoch, r.replicas, r.isr)
                  : p.BecomeFollower(r.epoch, r.leader_id, r.replicas);
}

}  // namespace

LogDirMover::LogDirMover(TopicRegistry* registry)
    : registry_(registry), thread_([this] { Loop(); }) {}

LogDirMover::~LogDirMover() { Stop(); }

void LogDirMover::Enqueue(const TopicPartition& tp, int dir) {
  std::lock_guard<std::mutex> lock(mu_);
  for (Job& j : queue_) {
    if (j.tp == tp) {
      j.dir = dir;
      return;
    }
  }
  queue_.push_back({tp, dir, nullptr, nullptr});
  cv_.notify_all();
}

std::vector<TopicRegistry::FutureReplica> LogDirMover::Futures() const {
  std::vector<TopicRegistry::FutureReplica> out;
  std::lock_guard<std::mutex> lock(mu_);
  auto describe = [&](const Job& j) {
    TopicRegistry::FutureReplica f;
    f.tp = j.tp;
    f.dir = j.dir;
    if (j.future) {
      f.size_bytes = j.future->size_bytes();
      if (j.source) {
        f.offset_lag = std::max<int64_t>(
            0, j.source->log_end_offset().value() - j.future->log_end_offset().value());
      }
    }
    out.push_back(f);
  };
  if (running_ && !running_->swapped) describe(*running_);
  for (const Job& j : queue_) describe(j);
  return out;
}

int LogDirMover::TargetOf(const TopicPartition& tp) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (running_ && running_->tp == tp) return running_->dir;
  for (const Job& j : queue_) {
    if (j.tp == tp) return j.dir;
  }
  return -1;
}

void LogDirMover::Drain() {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return (queue_.empty() && !running_) || stopping_; });
}

void LogDirMover::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    queue_.clear();
  }
  cv_.notify_all();
  std::lock_guard<std::mutex> join_lock(join_mu_);
  if (thread_.joinable()) thread_.join();
}

void LogDirMover::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
    if (stopping_) return;
    running_ = std::move(queue_.front());
    queue_.pop_front();
    Job job = *running_;
    lock.unlock();
    Status st = Move(job);
    if (!st.ok()) {
      HR_LOG(kWarn) << "moving " << job.tp.ToString() << " to log directory "
                    << registry_->log_dirs().path(job.dir) << " failed: " << st.ToString()
                    << "; the partition stays where it was";
    }
    lock.lock();
    running_.reset();
    cv_.notify_all();
  }
}

Status LogDirMover::CatchUp(Job& job, int64_t slack) {
  Partition& src = *job.source;
  Partition& dst = *job.future;
  FileEnv& env = registry_->log_dirs().env();
  for (;;) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopping_) return Status::Closed("broker stopping");
    }
    const Offset next = dst.log_end_offset();
    if (next < src.log_start_offset()) {  // retention overtook the copy
      HR_RETURN_IF_ERROR(dst.TruncateFullyAndStartAt(src.log_start_offset()));
      continue;
    }
    if (Diverged(src, dst)) {
      // A follower source was truncated (its leader changed) below what was
      // copied, and may have fetched other records since: copy again. Rare,
      // and only before the seal (a sealed source does not change).
      HR_LOG(kInfo) << "moving " << job.tp.ToString() << ": the replica was truncated at "
                    << src.log_end_offset().value() << ", copying it again";
      HR_RETURN_IF_ERROR(dst.TruncateFullyAndStartAt(src.log_start_offset()));
      continue;
    }
    auto read = src.ReadForFollower(next, kCopyChunk);
    if (!read.ok() && read.status().code() == StatusCode::kOutOfRange) continue;  // truncated
    HR_ASSIGN_OR_RETURN(PartitionRead r, std::move(read));
    if (r.data.slices.empty()) return Status::OK();  // at the source's end
    HR_ASSIGN_OR_RETURN(std::string bytes, SliceBytes(env, r.data));
    HR_RETURN_IF_ERROR(
        dst.AppendAsFollower({reinterpret_cast<uint8_t*>(bytes.data()), bytes.size()}).status());
    if (slack > 0 && r.data.bytes < std::min(slack, kCopyChunk)) return Status::OK();
  }
}

Status LogDirMover::Move(Job& job) {
  TopicRegistry& reg = *registry_;
  LogDirs& dirs = reg.log_dirs();
  std::shared_ptr<Partition> source = reg.FindPartition(job.tp.topic, job.tp.partition);
  std::shared_ptr<const Topic> topic = reg.FindTopic(job.tp.topic);
  if (!source || !topic) return Status::NotFound(job.tp.ToString() + " no longer exists");
  if (source->offline()) return Status::IOError(job.tp.ToString() + " is offline");
  if (dirs.IndexOf(source->dir()) == job.dir) return Status::OK();
  if (!dirs.online(job.dir)) return Status::IOError(dirs.path(job.dir) + " is offline");
  const std::string future_path =
      dirs.path(job.dir) + "/" + FuturePartitionDirName(job.tp, Uuid::Random().ToHex());
  PartitionServices services = reg.services_;
  services.flusher = nullptr;  // fsynced once, at the commit
  services.commit_requires_fsync = false;
  const LogFactory& factory = reg.log_factory_;
  LogFactory at_future = [&](const std::string&, const LogConfig& c) {
    return factory(future_path, c);
  };
  auto opened = Partition::Open(dirs.path(job.dir), job.tp, source->topic_id(), topic->settings,
                                services, at_future);
  if (!opened.ok()) {
    if (opened.status().code() == StatusCode::kIOError) dirs.MarkOffline(job.dir, opened.status());
    return opened.status();
  }
  job.source = source;
  job.future = std::move(opened).value();
  {
    std::lock_guard<std::mutex> lock(mu_);
    running_->source = job.source;
    running_->future = job.future;
  }
  const int32_t self = reg.config_.node_id;
  Status st = job.future->BecomeFollower(source->leader_epoch(), -1, {self});
  if (st.ok() && source->log_start_offset() > Offset(0)) {
    st = job.future->TruncateFullyAndStartAt(source->log_start_offset());
  }
  HR_LOG(kInfo) << "moving " << job.tp.ToString() << " from " << source->dir() << " to "
                << future_path;
  // 1. copy while the source serves.
  if (st.ok()) st = CatchUp(job, kCopyChunk);
  if (st.ok()) {
    {
      // Cluster mode: no role change between the seal and the copy taking
      // the replica's role (ApplyClusterState waits; it then applies to the
      // copy).
      std::lock_guard<std::mutex> roles(reg.roles_mu_);
      std::lock_guard<std::mutex> admin(reg.admin_mu_);
      st = reg.CheckOpenLocked();
      if (st.ok() && reg.FindPartition(job.tp.topic, job.tp.partition) != source) {
        st = Status::Closed(job.tp.ToString() + " was deleted or replaced during the move");
      }
      if (st.ok()) st = CommitLocked(job, future_path);
    }
    if (st.ok()) {
      if (reg.replica_moved_hook_) reg.replica_moved_hook_(job.tp);
      return st;
    }
  }
  (void)job.future->Abandon();
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (running_) running_->future.reset();
  }
  if (dirs.online(job.dir)) reg.deleter_.Enqueue(future_path);
  return st;
}

Status LogDirMover::CommitLocked(Job& job, const std::string& future_path) {
  TopicRegistry& reg = *registry_;
  LogDirs& dirs = reg.log_dirs();
  FileEnv& env = dirs.env();
  Partition& source = *job.source;
  const int32_t self = reg.config_.node_id;
  const bool cluster = reg.config_.cluster_mode();
  // Single node: the partition leads, alone. Cluster mode: whatever the
  // control plane made it (held still by roles_mu_).
  const Role role = cluster ? RoleOf(source)
                            : Role{true, source.leader_epoch(), self, {self}, {self}};
  // 2. seal: no append (nor truncation) reaches the source from here on. A
  // leader becomes a follower of nobody (producers and the followers'
  // fetches get the retriable NOT_LEADER_OR_FOLLOWER); a follower refuses
  // its replica fetcher's appends.
  if (role.leader) {
    HR_RETURN_IF_ERROR(source.BecomeFollower(role.epoch, -1, role.replicas));
  } else {
    source.SealFollowerWrites(true);
  }
  auto reopen_source = [&](Status why) {
    source.SealFollowerWrites(false);
    Status back = role.leader ? Assume(source, role) : Status::OK();
    if (!back.ok()) {
      HR_LOG(kError) << "reopening " << job.tp.ToString() << ": " << back.ToString();
    }
    return why;
  };
  Status st = CatchUp(job, 0);
  if (!st.ok()) return reopen_source(st);
  job.future->SetHighWatermarkFromLeader(source.high_watermark());
  st = job.future->Close();
  if (!st.ok()) return reopen_source(st);
  // From here the source is closed: a failure reopens it from its directory.
  const int src = dirs.IndexOf(source.dir());
  const std::string source_dir = source.dir();
  std::shared_ptr<const Topic> topic = reg.FindTopic(job.tp.topic);
  auto publish = [&](std::shared_ptr<Partition> p) {
    auto next = std::make_shared<Topic>(*topic);
    next->partitions[job.tp.partition] = std::move(p);
    reg.Publish(std::move(next));
  };
  st = source.Close();
  if (!st.ok()) {  // its directory failed: the partition is offline there
    dirs.MarkOffline(src, st);
    publish(reg.OfflinePartition(job.tp, topic->id, topic->settings, src));
    return st;
  }
  // 3. commit: the source out of the way (durably), then the copy in place.
  const std::string dead =
      dirs.path(src) + "/" + DeletedPartitionDirName(job.tp, Uuid::Random().ToHex());
  st = env.Rename(source_dir, dead);
  if (st.ok()) st = env.SyncDir(dirs.path(src));
  const std::string live = PartitionDirPath(dirs.path(job.dir), job.tp);
  if (st.ok()) {
    st = env.Rename(future_path, live);
    if (st.ok()) st = env.SyncDir(dirs.path(job.dir));
    if (!st.ok()) {
      dirs.MarkOffline(job.dir, st);
      (void)env.Rename(dead, source_dir);  // best effort: back where it was
    }
  } else {
    dirs.MarkOffline(src, st);
  }
  // 4. swap: the partition from where its files now are, with the source's
  // HW (cluster mode: OpenIn starts it from the directory's checkpoint as
  // read at start, which does not know the replica) and role.
  const int where = st.ok() ? job.dir : src;
  if (cluster && where < static_cast<int>(reg.hw_checkpoints_.size())) {
    reg.hw_checkpoints_[where][{job.tp.topic, job.tp.partition}] = source.high_watermark();
  }
  auto reopened = reg.OpenIn(where, job.tp, topic->id, topic->settings);
  std::shared_ptr<Partition> now;
  if (reopened.ok()) {
    now = std::move(reopened).value();
    if (cluster) {
      Status r = Assume(*now, role);
      if (!r.ok()) HR_LOG(kError) << "moved " << job.tp.ToString() << ": " << r.ToString();
    }
  } else {
    now = reg.OfflinePartition(job.tp, topic->id, topic->settings, where);
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (running_) running_->swapped = true;
  }
  publish(now);
  if (cluster && !role.leader && reg.replica_swap_hook_) reg.replica_swap_hook_(&source, now);
  if (!st.ok()) return st;
  reg.deleter_.Enqueue(dead);
  HR_LOG(kInfo) << "moved " << job.tp.ToString() << " to " << live;
  return Status::OK();
}

// --- TopicRegistry's side of AlterReplicaLogDirs ---

Status TopicRegistry::MoveReplica(const std::string& topic, int32_t partition,
                                  const std::string& dir) {
  int target = -1;
  for (int d = 0; d < dirs_->size(); ++d) {
    if (dirs_->path(d) == dir) target = d;
  }
  if (target < 0) {
    return KafkaStatus(KafkaError::kLogDirNotFound,
                       "log directory " + dir + " is not one of this broker's log.dirs");
  }
  if (!dirs_->online(target)) {
    return KafkaStatus(KafkaError::kKafkaStorageError, "log directory " + dir + " is offline");
  }
  auto p = FindPartition(topic, partition);
  if (!p && config_.cluster_mode()) {  // Kafka: NotLeaderOrFollower, answered as this
    return KafkaStatus(KafkaError::kReplicaNotAvailable,
                       "This broker hosts no replica of " + topic + "-" +
                           std::to_string(partition));
  }
  if (!p) {
    return KafkaStatus(KafkaError::kUnknownTopicOrPartition,
                       "This server does not host this topic-partition: " + topic + "-" +
                           std::to_string(partition));
  }
  if (p->offline()) {
    return KafkaStatus(KafkaError::kKafkaStorageError,
                       topic + "-" + std::to_string(partition) + " is offline");
  }
  TopicPartition tp{topic, partition};
  if (dirs_->IndexOf(p->dir()) == target && mover_->TargetOf(tp) < 0) return Status::OK();
  mover_->Enqueue(tp, target);
  return Status::OK();
}

std::vector<TopicRegistry::FutureReplica> TopicRegistry::FutureReplicas() const {
  return mover_ ? mover_->Futures() : std::vector<FutureReplica>{};
}

void TopicRegistry::DrainMoves() { mover_->Drain(); }

}  // namespace headrace::broker
