// Share sessions (KIP-932): the partitions a share consumer fetches from
// this broker, kept between its ShareFetch requests so an incremental
// request names only what changed. A session is keyed by (group, member);
// its epoch orders the member's ShareFetch and ShareAcknowledge requests:
//
//   epoch 0   opens a session (replacing the member's earlier one) with the
//             request's partitions — ShareFetch only; ShareAcknowledge with
//             0 is INVALID_SHARE_SESSION_EPOCH;
//   epoch N>0 must equal the session's next epoch (else
//             INVALID_SHARE_SESSION_EPOCH; no session: SHARE_SESSION_NOT_FOUND);
//             the request's partitions are added and its forgotten ones
//             removed; the next epoch becomes N + 1 (after INT32_MAX, 1);
//   epoch -1  closes the session after the request's acknowledgements (no
//             session: SHARE_SESSION_NOT_FOUND).
// At most `max_sessions` sessions (group.share.max.share.sessions): opening
// one more first drops the sessions unused for `idle_ms` (a consumer that
// died without closing; group.share.session.timeout.ms, after which its
// group membership is gone too), then is SHARE_SESSION_LIMIT_REACHED if
// still full.
//
// Threading: thread-safe (one mutex; every call is a map lookup).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "common/uuid.h"

namespace headrace::broker::share {

// A topic partition of a share session, by topic id (ShareFetch names topics
// by id only).
using TopicIdPartition = std::pair<Uuid, int32_t>;

enum class SessionOutcome {
  kOk,
  kNotFound,       // SHARE_SESSION_NOT_FOUND (122)
  kInvalidEpoch,   // INVALID_SHARE_SESSION_EPOCH (123)
  kLimitReached,   // SHARE_SESSION_LIMIT_REACHED (133)
};

struct SessionUpdate {
  SessionOutcome outcome = SessionOutcome::kOk;
  // The session's partitions after the update (what a ShareFetch reads);
  // for a closing request (-1), the partitions it held.
  std::vector<TopicIdPartition> partitions;
};

class ShareSessionCache {
 public:
  // `now_ms`: a monotonic clock in ms (default: steady_clock).
  explicit ShareSessionCache(int32_t max_sessions, int64_t idle_ms = 45000,
                             std::function<int64_t()> now_ms = {});

  // A ShareFetch's session step (the head comment): `added` are the
  // request's partitions, `forgotten` its ForgottenTopicsData.
  SessionUpdate OnFetch(const std::string& group, const std::string& member, int32_t epoch,
                        const std::vector<TopicIdPartition>& added,
                        const std::vector<TopicIdPartition>& forgotten);
  // A ShareAcknowledge's session step: epoch 0 is refused; -1 closes.
  SessionUpdate OnAcknowledge(const std::string& group, const std::string& member,
                              int32_t epoch);
  // Drops the member's session (it left the group); false if it had none.
  bool Remove(const std::string& group, const std::string& member);
  // Whether the member has a session here.
  bool Contains(const std::string& group, const std::string& member) const;

  size_t size() const;

 private:
  struct Session {
    int32_t next_epoch = 1;
    int64_t last_used_ms = 0;
    std::set<TopicIdPartition> partitions;
  };
  using Key = std::pair<std::string, std::string>;  // group, member

  // Checks `epoch` (> 0 or -1) against the session of `key` and advances
  // or closes it. REQUIRES: mu_ held.
  SessionUpdate Step(const Key& key, int32_t epoch, std::map<Key, Session>::iterator* it);

  const int32_t max_sessions_;
  const int64_t idle_ms_;
  const std::function<int64_t()> now_ms_;
  mutable std::mutex mu_;
  std::map<Key, Session> sessions_;
};

// The epoch after `epoch` (1 after INT32_MAX: 0 and -1 are reserved).
int32_t NextShareSessionEpoch(int32_t epoch);

}  // namespace headrace::broker::share
