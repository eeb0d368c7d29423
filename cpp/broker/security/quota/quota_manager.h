// QuotaManager: Kafka's client quotas on the data path (KIP-13, KIP-55,
// KIP-124, KIP-219). For each request it finds the quota that applies to
// the client's (user, client id) with Kafka's precedence, most specific
// first:
//   users/<u>/clients/<c>, users/<u>/clients/<default>, users/<u>,
//   users/<default>/clients/<c>, users/<default>/clients/<default>,
//   users/<default>, clients/<c>, clients/<default>
// separately for each kind (producer_byte_rate, consumer_byte_rate,
// request_percentage). Clients matched by the same entity share one rate
// (a user quota is shared by all of that user's client ids; a default
// quota gives each user / client id its own rate of that value), measured
// by SampledRate over quota.window.num windows of quota.window.size.seconds.
// Over the quota, the throttle time is Kafka's (sampled_rate.h); request
// time throttles are capped at one window, as Kafka caps them.
//
// The user is the principal's name ("User:alice" -> "alice"; PLAINTEXT
// clients are "ANONYMOUS").
//
// Cost: with no quota of a kind configured, a check is one relaxed atomic
// load. Otherwise a lookup in a sharded cache of resolved clients (one
// mutex per shard) and one lock of the matched rate; the cache is rebuilt
// lazily after every quota change (docs/performance.md).
//
// Expiry: a client not seen for kIdleExpiryMs (Kafka's one hour of an
// inactive quota sensor) is forgotten, and so is a rate no remaining
// client shares; a client that comes back starts a fresh rate (its old
// samples are older than every window anyway). The sweep runs from
// Resolve at most once per kSweepIntervalMs, so a broker that sees
// millions of client ids over its life keeps only the recent ones.
//
// Threading: thread-safe; called from every I/O thread.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

#include "broker/security/quota/client_quota_store.h"
#include "broker/security/quota/quota_config.h"
#include "broker/security/quota/sampled_rate.h"

namespace headrace::broker::quota {

enum class QuotaKind : int { kProduce = 0, kFetch = 1, kRequest = 2 };
inline constexpr int kQuotaKinds = 3;
const char* QuotaKeyOf(QuotaKind kind);  // "producer_byte_rate", ...

// "User:alice" -> "alice" (everything after the first ':').
std::string_view UserOfPrincipal(std::string_view principal);

class QuotaManager {
 public:
  using Clock = std::chrono::steady_clock;

  static constexpr int64_t kIdleExpiryMs = 3'600'000;
  static constexpr int64_t kSweepIntervalMs = 60'000;

  // `store` must outlive the manager. `idle_expiry_ms` / `sweep_interval_ms`:
  // the expiry above (tests pass short ones).
  QuotaManager(const QuotaConfig& config, const ClientQuotaStore* store,
               int64_t idle_expiry_ms = kIdleExpiryMs, int64_t sweep_interval_ms = kSweepIntervalMs);

  // Whether any quota of `kind` is set (cheap; the fast path).
  bool Enabled(QuotaKind kind) const {
    Refresh();
    return enabled_[static_cast<int>(kind)].load(std::memory_order_relaxed);
  }

  // Records `value` (bytes; for kRequest, percent-seconds: see
  // RecordRequestNanos) for the client and returns the throttle time in ms
  // (0: within its quota, or no quota applies).
  int32_t Record(QuotaKind kind, std::string_view user, std::string_view client_id, double value);
  // Takes back a recorded value (a throttled fetch answers no data).
  void Unrecord(QuotaKind kind, std::string_view user, std::string_view client_id, double value);
  // Kafka's getMaxValueInQuotaWindow: the most one request may carry,
  // bound * (samples - 1) * window; INT64_MAX without a quota.
  int64_t MaxValueInWindow(QuotaKind kind, std::string_view user, std::string_view client_id);

  // Request time (request_percentage): the throttle the client has earned
  // by the request time recorded so far (capped at one window), and the
  // recording of one request's handler time.
  int32_t RequestThrottle(std::string_view user, std::string_view client_id);
  void RecordRequestNanos(std::string_view user, std::string_view client_id, int64_t nanos);

  // The bound that applies to the client (0: none); for tests and tools.
  double QuotaFor(QuotaKind kind, std::string_view user, std::string_view client_id);
  // Clients (user, client id) and rates held now; for tests and tools.
  size_t tracked_clients();
  size_t tracked_rates();

  // Counters for the metrics page (monotonic).
  uint64_t throttled_responses(QuotaKind kind) const {
    return throttled_[static_cast<int>(kind)].load(std::memory_order_relaxed);
  }
  uint64_t throttle_time_ms_total(QuotaKind kind) const {
    return throttle_ms_total_[static_cast<int>(kind)].load(std::memory_order_relaxed);
  }

 private:
  struct Sensor {
    explicit Sensor(int samples, int64_t window_ms) : rate(samples, window_ms) {}
    std::mutex mu;  // guards rate
    SampledRate rate;
  };
  // What applies to one (user, client id) under one table version.
  struct Resolved {
    uint64_t version = 0;
    std::atomic<int64_t> last_used_ms{0};  // NowMs() of the last Resolve
    std::array<double, kQuotaKinds> bound{};  // 0: no quota
    std::array<std::shared_ptr<Sensor>, kQuotaKinds> sensor;
  };
  struct Shard {
    std::mutex mu;
    std::unordered_map<std::string, std::shared_ptr<Resolved>> clients;
  };
  static constexpr size_t kShards = 16;

  void Refresh() const;
  // `now`: NowMs() of the request (marks the client used, may run the sweep).
  std::shared_ptr<Resolved> Resolve(std::string_view user, std::string_view client_id,
                                    int64_t now);
  std::shared_ptr<Resolved> Build(std::string_view user, std::string_view client_id,
                                  uint64_t version);
  int64_t NowMs() const;
  int32_t Count(QuotaKind kind, int64_t throttle_ms);
  // Forgets clients idle for idle_expiry_ms_ and rates no client holds.
  void SweepIdle(int64_t now_ms);

  const int samples_;
  const int64_t window_ms_;
  const ClientQuotaStore* const store_;
  const int64_t idle_expiry_ms_;
  const int64_t sweep_interval_ms_;
  const Clock::time_point epoch_ = Clock::now();
  std::atomic<int64_t> next_sweep_ms_;
  mutable std::atomic<uint64_t> seen_version_{0};
  mutable std::array<std::atomic<bool>, kQuotaKinds> enabled_{};
  std::array<Shard, kShards> shards_;
  std::mutex sensors_mu_;  // guards sensors_
  std::unordered_map<std::string, std::shared_ptr<Sensor>> sensors_;  // kind + tags
  std::array<std::atomic<uint64_t>, kQuotaKinds> throttled_{};
  std::array<std::atomic<uint64_t>, kQuotaKinds> throttle_ms_total_{};
};

}  // namespace headrace::broker::quota
