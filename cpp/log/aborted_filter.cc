#include "log/aborted_filter.h"

#include <algorithm>

namespace headrace {

AbortedFilter::AbortedFilter(std::span<const AbortedTransaction> aborted)
    : pending_(aborted.begin(), aborted.end()) {
  std::sort(pending_.begin(), pending_.end(),
            [](const AbortedTransaction& a, const AbortedTransaction& b) {
              return a.first_offset < b.first_offset;
            });
}

bool AbortedFilter::Skip(std::span<const uint8_t> batch, const BatchHeader& h) {
  if (h.producer_id >= 0) {
    while (next_ < pending_.size() && pending_[next_].first_offset <= h.last_offset().value())
      open_.insert(pending_[next_++].producer_id);
  }
  if (h.is_control()) {
    if (h.producer_id >= 0) {
      Result<EndTxnMarker> marker = ParseEndTxnMarker(batch);
      if (marker.ok() && !marker.value().commit) open_.erase(h.producer_id);
    }
    return true;
  }
  return h.is_transactional() && open_.count(h.producer_id) > 0;
}

}  // namespace headrace
