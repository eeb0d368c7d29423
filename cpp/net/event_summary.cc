#include "net/event_summary.h"

namespace headrace::net {

EventSummary::EventSummary(std::string what, std::chrono::milliseconds interval)
    : what_(std::move(what)), interval_(interval) {}

bool EventSummary::Record(Clock::time_point now, uint64_t source, std::string_view last) {
  std::lock_guard<std::mutex> lock(mu_);
  if (count_ == 0 && (!any_line_ || now - last_line_ >= interval_)) {
    any_line_ = true;
    last_line_ = now;
    return true;
  }
  ++count_;
  if (source != 0 && sources_.size() < kMaxSources) sources_.insert(source);
  last_.assign(last);
  return false;
}

std::string EventSummary::TakeSummary(Clock::time_point now) {
  std::lock_guard<std::mutex> lock(mu_);
  if (count_ == 0 || now - last_line_ < interval_) return "";
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(now - last_line_).count();
  std::string span = ms < 1000 ? std::to_string(ms) + " ms" : std::to_string(ms / 1000) + " s";
  std::string line = std::to_string(count_) + " " + what_;
  if (!sources_.empty()) {
    line += " from " + std::to_string(sources_.size()) +
            (sources_.size() == 1 ? " connection" : " connections");
  }
  line += " in the last " + span + "; last: " + last_;
  count_ = 0;
  sources_.clear();
  last_.clear();
  last_line_ = now;
  return line;
}

}  // namespace headrace::net
