#include "broker/log_dir_mover.h"

#include <algorithm>

#include "broker/kafka_error.h"
#include "broker/offline_log.h"
#include "broker/partition_dir.h"
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
  if (running_) describe(*running_);
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
    HR_ASSIGN_OR_RETURN(PartitionRead r, src.ReadForFollower(next, kCopyChunk));
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
    std::lock_guard<std::mutex> admin(reg.admin_mu_);
    st = reg.CheckOpenLocked();
    if (st.ok() && reg.FindPartition(job.tp.topic, job.tp.partition) != source) {
      st = Status::Closed(job.tp.ToString() + " was deleted or replaced during the move");
    }
    if (st.ok()) st = CommitLocked(job, future_path);
    if (st.ok()) return st;
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
  const LeaderEpoch epoch = source.leader_epoch();
  // 2. seal: no append reaches the source from here on.
  HR_RETURN_IF_ERROR(source.BecomeFollower(epoch, -1, {self}));
  auto reopen_source = [&](Status why) {
    Status back = source.BecomeLeader(epoch, {self}, {self});
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
  // 4. swap: the partition from where its files now are.
  const int where = st.ok() ? job.dir : src;
  auto reopened = reg.OpenIn(where, job.tp, topic->id, topic->settings);
  publish(reopened.ok() ? std::move(reopened).value()
                        : reg.OfflinePartition(job.tp, topic->id, topic->settings, where));
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
  if (config_.cluster_mode()) {
    return KafkaStatus(KafkaError::kReplicaNotAvailable,
                       "moving replicas between log directories is not supported in cluster "
                       "mode yet");
  }
  auto p = FindPartition(topic, partition);
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
