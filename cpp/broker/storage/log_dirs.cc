#include "broker/storage/log_dirs.h"

#include <unistd.h>

#include <charconv>
#include <map>

#include "broker/config/broker_config.h"
#include "broker/base/kafka_error.h"
#include "common/logging.h"

namespace headrace::broker {
namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

constexpr int kIdentityVersion = 1;

}  // namespace

std::string EncodeDirIdentity(const DirIdentity& identity) {
  return "#headrace log directory identity (do not edit)\nversion=" +
         std::to_string(kIdentityVersion) + "\ncluster.id=" + identity.cluster_id +
         "\nnode.id=" + std::to_string(identity.node_id) +
         "\ndirectory.id=" + identity.directory_id.ToBase64() + "\n";
}

Result<DirIdentity> DecodeDirIdentity(std::string_view text) {
  std::map<std::string, std::string, std::less<>> kv;
  while (!text.empty()) {
    size_t nl = text.find('\n');
    std::string_view line = Trim(text.substr(0, nl));
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
    if (line.empty() || line.front() == '#') continue;
    size_t eq = line.find('=');
    if (eq == std::string_view::npos) {
      return Status::Corruption("meta.properties: line without '=': " + std::string(line));
    }
    kv[std::string(Trim(line.substr(0, eq)))] = std::string(Trim(line.substr(eq + 1)));
  }
  for (const char* key : {"version", "cluster.id", "node.id", "directory.id"}) {
    if (!kv.count(key)) return Status::Corruption(std::string("meta.properties: no ") + key);
  }
  if (kv["version"] != std::to_string(kIdentityVersion)) {
    return Status::Corruption("meta.properties: unsupported version " + kv["version"]);
  }
  DirIdentity out;
  out.cluster_id = kv["cluster.id"];
  const std::string& node = kv["node.id"];
  auto [ptr, ec] = std::from_chars(node.data(), node.data() + node.size(), out.node_id);
  if (ec != std::errc() || ptr != node.data() + node.size()) {
    return Status::Corruption("meta.properties: bad node.id " + node);
  }
  auto id = Uuid::FromBase64(kv["directory.id"]);
  if (!id.ok()) return Status::Corruption("meta.properties: bad directory.id " + kv["directory.id"]);
  out.directory_id = id.value();
  return out;
}

LogDirs::LogDirs(Options options)
    : options_(std::move(options)), env_(options_.env ? options_.env : FileEnv::Default()) {}

Result<std::unique_ptr<LogDirs>> LogDirs::Open(Options options) {
  if (options.paths.empty()) return Status::InvalidArgument("log.dirs: no directory");
  std::unique_ptr<LogDirs> d(new LogDirs(std::move(options)));
  for (size_t i = 0; i < d->options_.paths.size(); ++i) {
    auto dir = std::make_unique<Dir>();
    dir->path = NormaliseLogDir(d->options_.paths[i]);
    d->dirs_.push_back(std::move(dir));
  }
  for (int i = 0; i < d->size(); ++i) {
    Dir& dir = *d->dirs_[i];
    Status st = d->env_->CreateDirs(dir.path);
    if (st.ok() && d->options_.lock) {
      auto lock = DataDirLock::Acquire(dir.path, *d->env_);
      if (lock.ok()) {
        dir.lock = std::move(lock).value();
      } else if (lock.status().message().find("in use by another broker") != std::string::npos) {
        return lock.status();  // two brokers configured on one directory
      } else {
        st = lock.status();
      }
    }
    if (!st.ok()) {
      if (i == 0) return st;  // the metadata directory
      dir.offline.store(true);
      dir.reason = st.ToString();
      HR_LOG(kError) << "log directory " << dir.path << " is offline at start: " << st.ToString();
    }
  }
  return d;
}

Status LogDirs::Bootstrap(const ClusterIdentity& identity) {
  std::map<Uuid, std::string> ids;
  for (int i = 0; i < size(); ++i) {
    Dir& dir = *dirs_[i];
    if (!online(i)) continue;
    const std::string file = dir.path + "/" + kDirIdentityFile;
    Result<std::string> text = ReadWholeFile(*env_, file);
    Status st;
    if (text.ok()) {
      HR_ASSIGN_OR_RETURN(dir.identity, DecodeDirIdentity(text.value()));
      if (dir.identity.cluster_id != identity.cluster_id ||
          dir.identity.node_id != identity.node_id) {
        return KafkaStatus(KafkaError::kInconsistentClusterId,
                           "log directory " + dir.path + " belongs to cluster " +
                               dir.identity.cluster_id + " node " +
                               std::to_string(dir.identity.node_id) + ", not to cluster " +
                               identity.cluster_id + " node " + std::to_string(identity.node_id) +
                               " (" + file + "); a directory moved from another broker?");
      }
    } else if (text.status().code() == StatusCode::kNotFound) {
      // A new (or replaced, empty) directory: give it an identity.
      dir.identity = {identity.cluster_id, identity.node_id, Uuid::Random()};
      st = WriteFileAtomically(*env_, dir.path, kDirIdentityFile, EncodeDirIdentity(dir.identity));
    } else {
      st = text.status();
    }
    if (!st.ok()) {
      if (i == 0) return st;
      MarkOffline(i, st);
      continue;
    }
    auto [it, fresh] = ids.emplace(dir.identity.directory_id, dir.path);
    if (!fresh) {
      return Status::Corruption("log directories " + it->second + " and " + dir.path +
                                " carry the same directory.id " +
                                dir.identity.directory_id.ToBase64() +
                                " (one copied onto the other?); fix " + kDirIdentityFile);
    }
  }
  return Status::OK();
}

bool LogDirs::any_offline() const {
  for (int i = 0; i < size(); ++i) {
    if (!online(i)) return true;
  }
  return false;
}

std::string LogDirs::offline_reason(int i) const {
  std::lock_guard<std::mutex> lock(mu_);
  return dirs_[i]->reason;
}

int LogDirs::IndexOf(std::string_view partition_dir) const {
  size_t slash = partition_dir.rfind('/');
  if (slash == std::string_view::npos) return -1;
  std::string_view parent = partition_dir.substr(0, slash);
  for (int i = 0; i < size(); ++i) {
    if (dirs_[i]->path == parent) return i;
  }
  return -1;
}

int LogDirs::PickForNewPartition(const std::vector<int64_t>& counts) const {
  int best = -1;
  int64_t best_count = 0;
  for (int i = 0; i < size(); ++i) {
    if (!online(i)) continue;
    const int64_t n = i < static_cast<int>(counts.size()) ? counts[i] : 0;
    if (best < 0 || n < best_count) {
      best = i;
      best_count = n;
    }
  }
  return best;
}

void LogDirs::SetOfflineHandler(std::function<void(int, const Status&)> handler) {
  std::lock_guard<std::mutex> lock(mu_);
  handler_ = std::move(handler);
}

bool LogDirs::MarkOffline(int i, const Status& cause) {
  // One directory: a failure stays the failing partition's own (it goes
  // offline alone and the broker keeps serving the others), as before
  // log.dirs took several directories.
  if (size() == 1) return false;
  Dir& dir = *dirs_[i];
  if (dir.offline.exchange(true, std::memory_order_acq_rel)) return false;
  std::function<void(int, const Status&)> handler;
  {
    std::lock_guard<std::mutex> lock(mu_);
    dir.reason = cause.ToString();
    handler = handler_;
  }
  HR_LOG(kError) << "log directory " << dir.path << " is offline: " << cause.ToString()
                 << "; its partitions answer KAFKA_STORAGE_ERROR until a restart finds it "
                    "healthy; the other directories keep serving";
  if (handler) handler(i, cause);
  std::string why;
  if (i == 0) {
    why = "the first log directory " + dir.path + " (which holds the broker's metadata) failed";
  } else {
    bool all = true;
    for (int j = 0; j < size(); ++j) all = all && !online(j);
    if (all) why = "every log directory is offline";
  }
  if (!why.empty()) {
    HR_LOG(kError) << "halting the broker: " << why;
    if (options_.halt) {
      options_.halt(why);
    } else {
      ::_exit(1);
    }
  }
  return true;
}

void LogDirs::ReportPartitionFailure(const Partition& partition) {
  int i = IndexOf(partition.dir());
  if (i < 0 || !online(i)) return;
  MarkOffline(i, Status::IOError("partition " + partition.topic_partition().ToString() +
                                 " failed: " + partition.dir()));
}

}  // namespace headrace::broker
