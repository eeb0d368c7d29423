// How one Fetch request uses the incremental fetch session cache (KIP-227;
// cpp/broker/fetch/fetch_session.h has the rules). The Fetch handler calls
// BeginFetchSession when the request arrives and FinishFetchSession on the
// answer it is about to send; everything between reads partitions as for a
// full fetch.
#pragma once

#include <cstdint>

#include "broker/fetch/fetch_session.h"
#include "broker/base/kafka_error.h"
#include "protocol/codec.h"

namespace headrace::broker {

struct FetchSessionUse {
  enum class Mode {
    kNone,         // no session (v<7, epoch -1, no cache): session id 0
    kNew,          // full fetch (epoch 0): a session is made for the answer
    kIncremental,  // the request's partitions were replaced by the session's
  };
  Mode mode = Mode::kNone;
  int32_t id = 0;
  int32_t expected_epoch = 0;  // kIncremental: the session's epoch at the answer
  bool privileged = false;     // a follower's (cluster mode)
  bool uses_topic_ids = false;
};

// Request side. A full request closes the session it names (epoch 0 or -1)
// and epoch 0 asks for a new one. An incremental request updates its
// session (new/changed partitions, then forgotten_topics_data) and
// rewrites request->topics to every partition of the session, in fetch
// order. Returns the top-level error for a bad session (unknown id, wrong
// epoch, names vs ids), kNone otherwise.
KafkaError BeginFetchSession(fetch::FetchSessionCache* cache, int16_t version, bool from_follower,
                             protocol::FetchRequest* request, FetchSessionUse* use);

// Answer side, for `resp` computed over request.topics (same order). kNew:
// makes the session (session_id = its id, or 0 without a slot).
// kIncremental: keeps only the partitions KIP-227 says to list, or, if the
// session moved on or went away meanwhile, answers that error with no
// partitions.
void FinishFetchSession(fetch::FetchSessionCache* cache, const FetchSessionUse& use,
                        const protocol::FetchRequest& request, protocol::FetchResponse* resp);

// The answer to a request refused as a whole (no partitions): a failed
// BeginFetchSession, a follower fetch under a stale broker epoch.
protocol::FetchResponse FetchRefused(KafkaError error);

}  // namespace headrace::broker
