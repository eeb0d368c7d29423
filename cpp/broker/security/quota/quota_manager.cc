#include "broker/security/quota/quota_manager.h"

#include <algorithm>
#include <limits>

namespace headrace::broker::quota {
namespace {

// Kafka's nanosToPercentage: a request that held a thread for one second
// counts 100 (percent of one thread, per second of the window).
constexpr double kPercentPerNano = 100.0 / 1e9;

}  // namespace

const char* QuotaKeyOf(QuotaKind kind) {
  switch (kind) {
    case QuotaKind::kProduce: return kProducerByteRate;
    case QuotaKind::kFetch: return kConsumerByteRate;
    default: return kRequestPercentage;
  }
}

std::string_view UserOfPrincipal(std::string_view principal) {
  size_t colon = principal.find(':');
  return colon == std::string_view::npos ? principal : principal.substr(colon + 1);
}

QuotaManager::QuotaManager(const QuotaConfig& config, const ClientQuotaStore* store,
                           int64_t idle_expiry_ms, int64_t sweep_interval_ms)
    : samples_(config.window_num),
      window_ms_(int64_t{config.window_size_seconds} * 1000),
      store_(store),
      idle_expiry_ms_(idle_expiry_ms),
      sweep_interval_ms_(sweep_interval_ms),
      next_sweep_ms_(sweep_interval_ms) {
  Refresh();
}

void QuotaManager::Refresh() const {
  const uint64_t v = store_->version();
  if (seen_version_.load(std::memory_order_acquire) == v) return;
  std::array<bool, kQuotaKinds> any{};
  for (const auto& [path, entry] : *store_->table()) {
    for (int k = 0; k < kQuotaKinds; ++k) {
      any[k] = any[k] || entry.values.count(QuotaKeyOf(static_cast<QuotaKind>(k))) > 0;
    }
  }
  for (int k = 0; k < kQuotaKinds; ++k) enabled_[k].store(any[k], std::memory_order_relaxed);
  seen_version_.store(v, std::memory_order_release);
}

int64_t QuotaManager::NowMs() const {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - epoch_).count();
}

std::shared_ptr<QuotaManager::Resolved> QuotaManager::Build(std::string_view user,
                                                            std::string_view client_id,
                                                            uint64_t version) {
  auto table = store_->table();
  auto out = std::make_shared<Resolved>();
  out->version = version;
  const EntityPart u = EntityPart::Name(std::string(user));
  const EntityPart c = EntityPart::Name(std::string(client_id));
  const EntityPart d = EntityPart::Default();
  const EntityPart none;
  // Kafka's precedence, with the tags (user, client id) its rate is kept by.
  struct Level {
    ClientQuotaEntity entity;
    bool tag_user, tag_client;
  };
  const Level levels[] = {
      {{u, c}, true, true},     {{u, d}, true, true},     {{u, none}, true, false},
      {{d, c}, true, true},     {{d, d}, true, true},     {{d, none}, true, false},
      {{none, c}, false, true}, {{none, d}, false, true},
  };
  for (int k = 0; k < kQuotaKinds; ++k) {
    const char* key = QuotaKeyOf(static_cast<QuotaKind>(k));
    for (const Level& level : levels) {
      auto it = table->find(level.entity.Path());
      if (it == table->end()) continue;
      auto value = it->second.values.find(key);
      if (value == it->second.values.end()) continue;
      out->bound[k] = value->second;
      std::string tags = std::to_string(k) + '\0' + (level.tag_user ? std::string(user) : "") +
                         '\0' + (level.tag_client ? std::string(client_id) : "");
      std::lock_guard<std::mutex> l(sensors_mu_);
      auto& sensor = sensors_[tags];
      if (!sensor) sensor = std::make_shared<Sensor>(samples_, window_ms_);
      out->sensor[k] = sensor;
      break;
    }
  }
  return out;
}

std::shared_ptr<QuotaManager::Resolved> QuotaManager::Resolve(std::string_view user,
                                                              std::string_view client_id,
                                                              int64_t now) {
  Refresh();
  const uint64_t version = seen_version_.load(std::memory_order_acquire);
  std::string key;
  key.reserve(user.size() + client_id.size() + 1);
  key.append(user).append(1, '\0').append(client_id);
  int64_t due = next_sweep_ms_.load(std::memory_order_relaxed);
  if (now >= due && next_sweep_ms_.compare_exchange_strong(due, now + sweep_interval_ms_)) {
    SweepIdle(now);
  }
  Shard& shard = shards_[std::hash<std::string>{}(key) % kShards];
  {
    std::lock_guard<std::mutex> l(shard.mu);
    auto it = shard.clients.find(key);
    if (it != shard.clients.end() && it->second->version == version) {
      it->second->last_used_ms.store(now, std::memory_order_relaxed);
      return it->second;
    }
  }
  auto built = Build(user, client_id, version);
  built->last_used_ms.store(now, std::memory_order_relaxed);
  std::lock_guard<std::mutex> l(shard.mu);
  shard.clients[key] = built;
  return built;
}

void QuotaManager::SweepIdle(int64_t now_ms) {
  const int64_t cutoff = now_ms - idle_expiry_ms_;
  for (Shard& shard : shards_) {
    std::lock_guard<std::mutex> l(shard.mu);
    std::erase_if(shard.clients, [cutoff](const auto& entry) {
      return entry.second->last_used_ms.load(std::memory_order_relaxed) < cutoff;
    });
  }
  // A rate held only by this map has no client left (a request in flight
  // holds its Resolved, and so its rates, until it is done).
  std::lock_guard<std::mutex> l(sensors_mu_);
  std::erase_if(sensors_, [](const auto& entry) { return entry.second.use_count() == 1; });
}

size_t QuotaManager::tracked_clients() {
  size_t n = 0;
  for (Shard& shard : shards_) {
    std::lock_guard<std::mutex> l(shard.mu);
    n += shard.clients.size();
  }
  return n;
}

size_t QuotaManager::tracked_rates() {
  std::lock_guard<std::mutex> l(sensors_mu_);
  return sensors_.size();
}

int32_t QuotaManager::Count(QuotaKind kind, int64_t throttle_ms) {
  if (throttle_ms <= 0) return 0;
  const int k = static_cast<int>(kind);
  throttled_[k].fetch_add(1, std::memory_order_relaxed);
  throttle_ms_total_[k].fetch_add(static_cast<uint64_t>(throttle_ms), std::memory_order_relaxed);
  return static_cast<int32_t>(std::min<int64_t>(throttle_ms, std::numeric_limits<int32_t>::max()));
}

int32_t QuotaManager::Record(QuotaKind kind, std::string_view user, std::string_view client_id,
                             double value) {
  if (!Enabled(kind)) return 0;
  const int64_t now = NowMs();
  auto r = Resolve(user, client_id, now);
  const int k = static_cast<int>(kind);
  if (!r->sensor[k]) return 0;
  int64_t throttle = 0;
  {
    std::lock_guard<std::mutex> l(r->sensor[k]->mu);
    r->sensor[k]->rate.Record(value, now);
    throttle = r->sensor[k]->rate.ThrottleMs(r->bound[k], now);
  }
  if (kind == QuotaKind::kRequest) throttle = std::min(throttle, window_ms_);
  return Count(kind, throttle);
}

void QuotaManager::Unrecord(QuotaKind kind, std::string_view user, std::string_view client_id,
                            double value) {
  if (!Enabled(kind)) return;
  const int64_t now = NowMs();
  auto r = Resolve(user, client_id, now);
  const int k = static_cast<int>(kind);
  if (!r->sensor[k]) return;
  std::lock_guard<std::mutex> l(r->sensor[k]->mu);
  r->sensor[k]->rate.Record(-value, now);
}

int64_t QuotaManager::MaxValueInWindow(QuotaKind kind, std::string_view user,
                                       std::string_view client_id) {
  if (!Enabled(kind)) return std::numeric_limits<int64_t>::max();
  auto r = Resolve(user, client_id, NowMs());
  const int k = static_cast<int>(kind);
  if (!r->sensor[k]) return std::numeric_limits<int64_t>::max();
  const double max = r->bound[k] * (samples_ - 1) * (static_cast<double>(window_ms_) / 1000.0);
  return max >= 9.2e18 ? std::numeric_limits<int64_t>::max() : static_cast<int64_t>(max);
}

int32_t QuotaManager::RequestThrottle(std::string_view user, std::string_view client_id) {
  if (!Enabled(QuotaKind::kRequest)) return 0;
  const int64_t now = NowMs();
  auto r = Resolve(user, client_id, now);
  const int k = static_cast<int>(QuotaKind::kRequest);
  if (!r->sensor[k]) return 0;
  int64_t throttle = 0;
  {
    std::lock_guard<std::mutex> l(r->sensor[k]->mu);
    throttle = r->sensor[k]->rate.ThrottleMs(r->bound[k], now);
  }
  return Count(QuotaKind::kRequest, std::min(throttle, window_ms_));
}

void QuotaManager::RecordRequestNanos(std::string_view user, std::string_view client_id,
                                      int64_t nanos) {
  if (!Enabled(QuotaKind::kRequest)) return;
  const int64_t now = NowMs();
  auto r = Resolve(user, client_id, now);
  const int k = static_cast<int>(QuotaKind::kRequest);
  if (!r->sensor[k]) return;
  std::lock_guard<std::mutex> l(r->sensor[k]->mu);
  r->sensor[k]->rate.Record(static_cast<double>(nanos) * kPercentPerNano, now);
}

double QuotaManager::QuotaFor(QuotaKind kind, std::string_view user, std::string_view client_id) {
  if (!Enabled(kind)) return 0;
  return Resolve(user, client_id, NowMs())->bound[static_cast<int>(kind)];
}

}  // namespace headrace::broker::quota
