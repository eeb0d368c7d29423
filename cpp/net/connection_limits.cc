#include "net/connection_limits.h"

namespace headrace::net {

ConnectionLimits::Verdict ConnectionLimits::Admit(const std::string& ip) {
  std::lock_guard<std::mutex> lock(mu_);
  ++totals_.refused;  // undone below when admitted
  if (max_total_ > 0 && active_ >= max_total_) return Verdict::kOverTotal;
  auto it = per_ip_.find(ip);
  int from_ip = it == per_ip_.end() ? 0 : it->second;
  if (max_per_ip_ >= 0 && from_ip >= max_per_ip_) return Verdict::kOverPerIp;
  --totals_.refused;
  ++totals_.admitted;
  ++active_;
  if (it == per_ip_.end()) {
    per_ip_.emplace(ip, 1);
  } else {
    ++it->second;
  }
  return Verdict::kAdmitted;
}

void ConnectionLimits::Release(const std::string& ip) {
  std::lock_guard<std::mutex> lock(mu_);
  --active_;
  ++totals_.released;
  auto it = per_ip_.find(ip);
  if (it != per_ip_.end() && --it->second <= 0) per_ip_.erase(it);
}

int ConnectionLimits::active() const {
  std::lock_guard<std::mutex> lock(mu_);
  return active_;
}

ConnectionLimits::Totals ConnectionLimits::totals() const {
  std::lock_guard<std::mutex> lock(mu_);
  return totals_;
}

int ConnectionLimits::active_from(const std::string& ip) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = per_ip_.find(ip);
  return it == per_ip_.end() ? 0 : it->second;
}

std::string_view IpOfPeer(std::string_view peer) {
  size_t colon = peer.rfind(':');
  if (colon != std::string_view::npos) peer = peer.substr(0, colon);
  if (peer.size() >= 2 && peer.front() == '[' && peer.back() == ']') {
    peer = peer.substr(1, peer.size() - 2);
  }
  return peer;
}

}  // namespace headrace::net
