#include "broker/storage/maintenance.h"

#include "common/logging.h"

namespace headrace::broker {

TimestampMs Maintenance::WallClockMs() {
  auto now = std::chrono::system_clock::now().time_since_epoch();
  return TimestampMs(std::chrono::duration_cast<std::chrono::milliseconds>(now).count());
}

MaintenanceReport Maintenance::RunOnce(const std::vector<std::shared_ptr<Partition>>& partitions,
                                       TimestampMs now, bool apply_retention,
                                       int64_t producer_expiration_ms) {
  MaintenanceReport r;
  auto note = [&](const Partition& p, const Status& s) {
    if (s.ok() || s.code() == StatusCode::kClosed) return;  // deleted meanwhile
    if (r.errors++ == 0) r.first_error = p.topic_partition().ToString() + ": " + s.ToString();
  };
  for (const auto& p : partitions) {
    ++r.partitions;
    note(*p, p->MaybeRoll(now));
    if (apply_retention) {
      auto ret = p->ApplyRetention(now);
      if (ret.ok()) {
        r.segments_deleted += ret->segments_deleted;
        r.bytes_deleted += ret->bytes_deleted;
      } else {
        note(*p, ret.status());
      }
      if (producer_expiration_ms >= 0) {
        r.producers_expired += static_cast<int64_t>(
            p->RemoveExpiredProducers(now.value(), producer_expiration_ms));
      }
    }
    p->MaybeScheduleFlush();  // flush.ms: the flusher fsyncs
  }
  return r;
}

Maintenance::Maintenance(Options options, PartitionLister lister, Clock clock)
    : options_(options), lister_(std::move(lister)), clock_(std::move(clock)) {}

Maintenance::~Maintenance() { Stop(); }

void Maintenance::Start() {
  std::lock_guard<std::mutex> join_lock(join_mu_);
  if (!thread_.joinable()) {
    thread_ = std::thread([this] {
      pthread_setname_np(pthread_self(), "hr-maintenance");
      Loop();
    });
  }
}

void Maintenance::Loop() {
  auto tick = std::chrono::milliseconds(options_.tick_ms);
  auto retention_every = std::chrono::milliseconds(options_.retention_check_ms);
  auto next_retention = std::chrono::steady_clock::now() + retention_every;
  auto hw_every = std::chrono::milliseconds(options_.hw_checkpoint_ms);
  auto next_hw = std::chrono::steady_clock::now() + hw_every;
  std::string last_logged;  // first error of the previous pass
  std::string last_hw_error;  // of the previous HW checkpoint
  std::unique_lock<std::mutex> lock(mu_);
  while (!cv_.wait_for(lock, tick, [&] { return stopping_; })) {
    lock.unlock();
    auto now = std::chrono::steady_clock::now();
    bool retention = now >= next_retention;
    if (retention) next_retention = now + retention_every;
    MaintenanceReport report =
        RunOnce(lister_(), clock_(), retention, options_.producer_id_expiration_ms);
    // An offline log fails every pass the same way: logged once, not per tick.
    if (report.errors > 0 && report.first_error != last_logged) {
      HR_LOG(kError) << "maintenance: " << report.errors << " error(s), first: " << report.first_error;
    }
    last_logged = report.first_error;
    if (options_.checkpoint_hw && now >= next_hw) {
      next_hw = now + hw_every;
      Status st = options_.checkpoint_hw();
      std::string error = st.ok() ? "" : st.ToString();
      if (!error.empty() && error != last_hw_error) {
        HR_LOG(kError) << "high-watermark checkpoint failed: " << error;
      }
      last_hw_error = std::move(error);
    }
    lock.lock();
    ++passes_;
    last_ = std::move(report);
  }
}

void Maintenance::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  std::lock_guard<std::mutex> join_lock(join_mu_);
  if (thread_.joinable()) thread_.join();
}

int Maintenance::passes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return passes_;
}

MaintenanceReport Maintenance::last_report() const {
  std::lock_guard<std::mutex> lock(mu_);
  return last_;
}

}  // namespace headrace::broker
