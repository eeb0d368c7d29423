// Incremental fetch sessions (KIP-227): the broker remembers, per session,
// the partitions a client fetches and what it last told it about each, so
// that the client sends only the partitions whose fetch position changed
// and the broker answers only the partitions that have something new.
//
// Request metadata (session id, epoch), as KIP-227 defines it:
//   (0, 0)       full fetch, asks for a new session
//   (id, 0)      full fetch, closes session id, asks for a new one
//   (any, -1)    full fetch without a session (closes id if any)
//   (id, e > 0)  incremental fetch in session id: e must be its epoch
//
// FetchSessionCache holds the sessions, bounded by
// max.incremental.fetch.session.cache.slots, with KIP-227's eviction rules
// (Evict below). It is independent of the wire structs (the Fetch handler,
// cpp/broker/api/fetch.cc, maps them) and thread-safe (one mutex: every
// call is O(partitions of the session) and the cache is touched twice per
// fetch, at the request and at the answer).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "broker/base/kafka_error.h"
#include "common/uuid.h"

namespace headrace::broker::fetch {

// One partition of a session.
struct SessionPartition {
  std::string topic;  // sessions by name (Fetch v7-12)
  Uuid topic_id;      // sessions by id (v13+)
  int32_t partition = 0;
  // As the client last asked.
  int64_t fetch_offset = 0;
  int32_t partition_max_bytes = 0;
  int32_t current_leader_epoch = -1;
  int32_t last_fetched_epoch = -1;
  int64_t log_start_offset = -1;  // a follower's
  // As the broker last answered; -1 after an error (so that the partition is
  // listed again once the error is gone).
  int64_t high_watermark = -1;
  int64_t last_stable_offset = -1;
  int64_t answered_log_start = -1;
};

// What one answer said about one partition.
struct AnsweredPartition {
  int16_t error_code = 0;
  int64_t high_watermark = -1;
  int64_t last_stable_offset = -1;
  int64_t log_start_offset = -1;
  bool has_records = false;
  bool has_diverging_epoch = false;
  bool has_preferred_replica = false;
};

// The epoch after `epoch` (1 after INT32_MAX; 0 and -1 are never used).
int32_t NextEpoch(int32_t epoch);

class FetchSessionCache {
 public:
  // Kafka's MIN_INCREMENTAL_FETCH_SESSION_EVICTION_MS: a session younger
  // than this (since creation) is evicted only by a more valuable one.
  static constexpr int64_t kEvictionAgeMs = 120000;

  explicit FetchSessionCache(int32_t max_slots, int64_t eviction_age_ms = kEvictionAgeMs);

  // An incremental request (id, epoch > 0): FETCH_SESSION_ID_NOT_FOUND for
  // an unknown id, INVALID_FETCH_SESSION_EPOCH for another epoch,
  // FETCH_SESSION_TOPIC_ID_ERROR when the session was made with topic
  // names and the request uses ids or the reverse. Otherwise applies
  // `updates` (partitions added, or their request fields changed), then
  // `forgotten` (by topic/topic_id + partition), advances the epoch, marks
  // the session used at now_ms and copies its partitions, in fetch order,
  // into *out.
  KafkaError Update(int32_t id, int32_t epoch, bool uses_topic_ids,
                    const std::vector<SessionPartition>& updates,
                    const std::vector<SessionPartition>& forgotten, int64_t now_ms,
                    std::vector<SessionPartition>* out);

  // The answer to an incremental request whose Update returned *out, with
  // answered[i] for (*out)[i]. If the session is gone or another request
  // moved its epoch past `expected_epoch` (= NextEpoch of the request's),
  // returns that error (the answer then carries no partitions). Otherwise
  // records the answers, sets (*listed)[i] for every partition the answer
  // must list (new records, high watermark, last stable or log start offset
  // changed, an error, a diverging epoch or a preferred read replica), and
  // moves those that returned records to the end of the fetch order (so
  // that one busy partition does not starve the others under max_bytes).
  KafkaError Answer(int32_t id, int32_t expected_epoch,
                    const std::vector<AnsweredPartition>& answered, std::vector<bool>* listed);

  // A full request that wants a session: creates one with `partitions`
  // (their answered fields filled in) and returns its id (epoch 1 next), or
  // 0 when there is no slot for it (the client then keeps sending full
  // requests). `privileged`: a follower broker's session.
  int32_t Create(bool privileged, bool uses_topic_ids, std::vector<SessionPartition> partitions,
                 int64_t now_ms);

  // Closes a session (a full request naming it). False if unknown.
  bool Remove(int32_t id);

  size_t size() const;
  // Partitions in all sessions.
  size_t partitions() const;
  // Test view of one session: its epoch (-1 if unknown).
  int32_t EpochOf(int32_t id) const;
  size_t evictions() const;

 private:
  // KIP-227's order of value: privileged (a follower's) over not, then more
  // partitions, then the newer id.
  using EvictableKey = std::tuple<bool, size_t, int32_t>;
  using LastUsedKey = std::pair<int64_t, int32_t>;

  struct Session {
    int32_t id = 0;
    bool privileged = false;
    bool uses_topic_ids = false;
    int32_t epoch = 1;  // expected in the next incremental request
    int64_t created_ms = 0;
    int64_t last_used_ms = 0;
    size_t cached_size = 0;  // partitions when last indexed
    std::vector<SessionPartition> parts;  // fetch order
    std::unordered_map<std::string, size_t> index;  // Key() -> position in parts

    EvictableKey evictable_key() const { return {privileged, cached_size, id}; }
    void Reindex();
  };

  static std::string Key(bool uses_topic_ids, const SessionPartition& p);
  // Re-files `s` in the eviction indexes after a use at now_ms (Kafka's
  // "touch"): every session is in last_used_; in evictable_by_privileged_
  // if unprivileged or older than the eviction age; in evictable_by_all_ if
  // older than the eviction age.
  void TouchLocked(Session& s, int64_t now_ms);
  void UnindexLocked(const Session& s);
  // Makes room for a new session of `key`: evicts the least recently used
  // session if it is older (unused) than the eviction age; otherwise the
  // least valuable evictable one (by a privileged newcomer: any
  // unprivileged or old session; by another: old sessions only) if it is
  // not more valuable than the newcomer. False: no room.
  bool EvictLocked(const EvictableKey& key, int64_t now_ms);
  int32_t NewIdLocked();

  const size_t max_slots_;
  const int64_t eviction_age_ms_;
  mutable std::mutex mu_;
  std::unordered_map<int32_t, std::unique_ptr<Session>> sessions_;
  std::set<LastUsedKey> last_used_;
  std::set<EvictableKey> evictable_by_privileged_;
  std::set<EvictableKey> evictable_by_all_;
  size_t partitions_ = 0;
  size_t evictions_ = 0;
  std::mt19937 rng_{std::random_device{}()};
};

}  // namespace headrace::broker::fetch
