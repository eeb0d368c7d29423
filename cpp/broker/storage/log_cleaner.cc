#include "broker/storage/log_cleaner.h"

#include <chrono>

#include "common/logging.h"

namespace headrace::broker {
namespace {

int64_t WallMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

LogCleaner::LogCleaner(CleanerConfig config, PartitionLister lister, Clock clock)
    : config_(config),
      lister_(std::move(lister)),
      clock_(clock ? std::move(clock) : Clock(WallMs)),
      throttler_(config.io_max_bytes_per_second) {}

LogCleaner::~LogCleaner() { Stop(); }

void LogCleaner::Start() {
  if (!config_.enable) return;
  std::lock_guard<std::mutex> l(mu_);
  for (int i = 0; i < config_.threads; ++i) threads_.emplace_back([this] { Loop(); });
}

void LogCleaner::Stop() {
  std::vector<std::thread> threads;
  {
    std::lock_guard<std::mutex> l(mu_);
    stopping_.store(true);
    threads.swap(threads_);
  }
  cv_.notify_all();
  for (std::thread& t : threads) t.join();
}

CleanerStats LogCleaner::stats() const {
  std::lock_guard<std::mutex> l(mu_);
  return stats_;
}

std::shared_ptr<Partition> LogCleaner::Grab(CleanRequest* out) {
  const int64_t now = clock_();
  std::shared_ptr<Partition> best;
  double best_score = -1;
  for (const std::shared_ptr<Partition>& p : lister_()) {
    if (stopping_.load()) return nullptr;
    if (p->offline()) continue;
    Partition::CompactionSettings cs = p->compaction_settings();
    if (!cs.compact) continue;
    {
      std::lock_guard<std::mutex> l(mu_);
      if (in_progress_.count(p.get())) continue;
    }
    CleanRequest req;
    req.now_ms = now;
    req.min_compaction_lag_ms = cs.min_compaction_lag_ms.value_or(config_.min_compaction_lag_ms);
    req.max_compaction_lag_ms = cs.max_compaction_lag_ms.value_or(config_.max_compaction_lag_ms);
    req.delete_retention_ms = cs.delete_retention_ms.value_or(config_.delete_retention_ms);
    req.max_segment_bytes = cs.segment_bytes;
    req.dedupe_buffer_bytes = config_.dedupe_buffer_size / std::max(1, config_.threads);
    req.throttler = &throttler_;
    req.stop = &stopping_;
    if (!p->FillCleanRequest(&req).ok()) continue;
    Result<CleanableState> st = p->Cleanable(req);
    if (!st.ok()) continue;
    const double ratio = st->dirty_ratio();
    const double min_ratio = cs.min_cleanable_dirty_ratio.value_or(config_.min_cleanable_ratio);
    const bool overdue = st->overdue(now, req.max_compaction_lag_ms);
    const bool qualifies = (st->dirty_bytes > 0 && ratio >= min_ratio) || overdue || st->horizon_due;
    if (!qualifies) continue;
    // Overdue logs first (max.compaction.lag.ms), then the dirtiest.
    double score = ratio + (overdue ? 2.0 : 0.0);
    if (score > best_score) {
      best_score = score;
      best = p;
      *out = std::move(req);
    }
  }
  if (best) {
    std::lock_guard<std::mutex> l(mu_);
    if (!in_progress_.insert(best.get()).second) return nullptr;  // another thread took it
  }
  return best;
}

bool LogCleaner::RunPass(const std::shared_ptr<Partition>& p, const CleanRequest& req) {
  const auto start = std::chrono::steady_clock::now();
  Result<CleanReport> r = p->Clean(req);
  const int64_t ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                         std::chrono::steady_clock::now() - start)
                         .count();
  std::lock_guard<std::mutex> l(mu_);
  in_progress_.erase(p.get());
  stats_.busy_ms += ms;
  if (!r.ok()) {
    if (!stopping_.load()) {
      ++stats_.errors;
      HR_LOG(kWarn) << "log cleaner: " << p->dir() << ": " << r.status().ToString();
    }
    return false;
  }
  ++stats_.passes;
  stats_.bytes_in += r->bytes_in;
  stats_.bytes_out += r->bytes_out;
  stats_.bytes_read += r->bytes_read;
  stats_.records_removed += r->records_removed;
  if (r->cleaned) {
    HR_LOG_TO(kInfo, "headrace.compaction")
            .With("event", "compaction_deleted").With("topic", p->topic_partition().topic)
            .With("partition", p->topic_partition().partition)
            .With("segments_in", r->segments_in).With("segments_out", r->segments_out)
            .With("bytes", r->bytes_in - r->bytes_out).With("records_removed", r->records_removed)
            .With("reason", "compaction").With("duration_ms", ms)
        << "log cleaner: " << p->dir() << ": " << r->segments_in << " segments ("
        << r->bytes_in << " bytes) -> " << r->segments_out << " (" << r->bytes_out
        << " bytes), " << r->records_removed << " records removed, " << r->map_keys
        << " keys mapped, dirty from " << r->first_dirty_after.value() << ", " << ms << " ms";
  }
  return r->cleaned;
}

bool LogCleaner::CleanOnce() {
  CleanRequest req;
  std::shared_ptr<Partition> p = Grab(&req);
  if (!p) return false;
  RunPass(p, req);
  return true;
}

void LogCleaner::Loop() {
  while (!stopping_.load()) {
    CleanRequest req;
    std::shared_ptr<Partition> p = Grab(&req);
    if (p && RunPass(p, req)) continue;  // more may be due at once

    std::unique_lock<std::mutex> l(mu_);
    cv_.wait_for(l, std::chrono::milliseconds(config_.backoff_ms), [this] { return stopping_.load(); });
  }
}

}  // namespace headrace::broker
