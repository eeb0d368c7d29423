#include "broker/replication/error_summary.h"

#include "common/logging.h"

namespace headrace::broker::replication {

void ErrorSummary::Note(const std::string& what) {
  const Clock::time_point now = Clock::now();
  ++unreported_;
  if (!quiet_ && now - last_line_ < interval_) {
    last_unreported_ = what;
    return;
  }
  if (unreported_ > 1) {
    HR_LOG(kWarn) << prefix_ << what << " (" << unreported_ << " errors since the last report)";
  } else {
    HR_LOG(kWarn) << prefix_ << what;
  }
  unreported_ = 0;
  quiet_ = false;
  last_line_ = now;
  ++lines_;
}

void ErrorSummary::Success() {
  if (unreported_ > 0) {
    HR_LOG(kInfo) << prefix_ << "working again after " << unreported_
                  << " more error(s), the last: " << last_unreported_;
    unreported_ = 0;
    ++lines_;
  }
  quiet_ = true;
}

}  // namespace headrace::broker::replication
