#include "common/log_limiter.h"

namespace headrace {

bool LogLimiter::Admit(std::string_view key, Clock::time_point now, uint64_t* suppressed) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = keys_.find(std::string(key));
  if (it == keys_.end()) {
    if (keys_.size() >= kMaxKeys) keys_.clear();  // a flood of distinct keys: start over
    keys_.emplace(std::string(key), State{now, 0});
    *suppressed = 0;
    return true;
  }
  State& st = it->second;
  if (now - st.last_line < interval_) {
    ++st.suppressed;
    return false;
  }
  *suppressed = st.suppressed;
  st.suppressed = 0;
  st.last_line = now;
  return true;
}

std::string LogLimiter::SuppressedNote(uint64_t suppressed) const {
  if (suppressed == 0) return "";
  return " (" + std::to_string(suppressed) + " more like it since the last such line)";
}

LogLimiter& StorageErrorLogLimiter() {
  static LogLimiter limiter;
  return limiter;
}

}  // namespace headrace
