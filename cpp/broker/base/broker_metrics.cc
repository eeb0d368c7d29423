#include "broker/base/broker_metrics.h"

namespace headrace::broker {

BrokerMetrics::~BrokerMetrics() {
  for (auto& h : requests_) delete h.load();
  for (auto& h : handlers_) delete h.load();
}

void BrokerMetrics::Record(Slots& slots, int16_t api_key, Clock::duration elapsed) {
  if (api_key < 0 || api_key > kMaxApiKey) return;
  std::atomic<metrics::Histogram*>& slot = slots[api_key];
  metrics::Histogram* h = slot.load(std::memory_order_acquire);
  if (h == nullptr) {  // the first request of this API: publish one histogram
    auto* made = new metrics::Histogram();
    if (slot.compare_exchange_strong(h, made, std::memory_order_acq_rel)) {
      h = made;
    } else {
      delete made;  // another thread won; `h` is its histogram
    }
  }
  const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(elapsed).count();
  h->Record(ns > 0 ? static_cast<uint64_t>(ns) : 0);
}

const metrics::Histogram* BrokerMetrics::Find(const Slots& slots, int16_t api_key) {
  if (api_key < 0 || api_key > kMaxApiKey) return nullptr;
  return slots[api_key].load(std::memory_order_acquire);
}

void BrokerMetrics::RecordRequest(int16_t api_key, Clock::duration elapsed) {
  Record(requests_, api_key, elapsed);
}

const metrics::Histogram* BrokerMetrics::request_latency(int16_t api_key) const {
  return Find(requests_, api_key);
}

void BrokerMetrics::RecordHandler(int16_t api_key, Clock::duration elapsed) {
  Record(handlers_, api_key, elapsed);
}

const metrics::Histogram* BrokerMetrics::handler_latency(int16_t api_key) const {
  return Find(handlers_, api_key);
}

std::shared_ptr<TopicMetrics> BrokerMetrics::ForTopic(const std::string& topic) {
  std::lock_guard<std::mutex> l(topics_mu_);
  std::shared_ptr<TopicMetrics>& m = topics_[topic];
  if (!m) m = std::make_shared<TopicMetrics>();
  return m;
}

std::map<std::string, std::shared_ptr<TopicMetrics>> BrokerMetrics::Topics() const {
  std::lock_guard<std::mutex> l(topics_mu_);
  return topics_;
}

}  // namespace headrace::broker
