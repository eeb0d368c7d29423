#include "broker/api/fetch_sessions.h"

#include <chrono>
#include <utility>
#include <vector>

namespace headrace::broker {
namespace {

using Request = protocol::FetchRequest;
using Response = protocol::FetchResponse;
using fetch::SessionPartition;

constexpr int16_t kFirstSessionVersion = 7;
constexpr int16_t kFirstTopicIdVersion = 13;

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

SessionPartition FromRequest(const Request::FetchTopic& t, const Request::FetchPartition& p) {
  SessionPartition s;
  s.topic = t.topic;
  s.topic_id = t.topic_id;
  s.partition = p.partition;
  s.fetch_offset = p.fetch_offset;
  s.partition_max_bytes = p.partition_max_bytes;
  s.current_leader_epoch = p.current_leader_epoch;
  s.last_fetched_epoch = p.last_fetched_epoch;
  s.log_start_offset = p.log_start_offset;
  return s;
}

bool SameTopic(const SessionPartition& a, const Request::FetchTopic& t, bool ids) {
  return ids ? a.topic_id == t.topic_id : a.topic == t.topic;
}

// The session's partitions as request topics: consecutive partitions of
// one topic share a FetchTopic.
std::vector<Request::FetchTopic> ToTopics(const std::vector<SessionPartition>& parts, bool ids) {
  std::vector<Request::FetchTopic> out;
  for (const SessionPartition& s : parts) {
    if (out.empty() || !SameTopic(s, out.back(), ids)) {
      out.emplace_back();
      out.back().topic = s.topic;
      out.back().topic_id = s.topic_id;
    }
    Request::FetchPartition p;
    p.partition = s.partition;
    p.fetch_offset = s.fetch_offset;
    p.partition_max_bytes = s.partition_max_bytes;
    p.current_leader_epoch = s.current_leader_epoch;
    p.last_fetched_epoch = s.last_fetched_epoch;
    p.log_start_offset = s.log_start_offset;
    out.back().partitions.push_back(p);
  }
  return out;
}

fetch::AnsweredPartition Answered(const Response::PartitionData& p) {
  fetch::AnsweredPartition a;
  a.error_code = p.error_code;
  a.high_watermark = p.high_watermark;
  a.last_stable_offset = p.last_stable_offset;
  a.log_start_offset = p.log_start_offset;
  a.has_records = p.records.size() > 0;
  a.has_diverging_epoch = p.diverging_epoch.epoch >= 0;
  a.has_preferred_replica = p.preferred_read_replica >= 0;
  return a;
}

}  // namespace

KafkaError BeginFetchSession(fetch::FetchSessionCache* cache, int16_t version, bool from_follower,
                             Request* request, FetchSessionUse* use) {
  use->mode = FetchSessionUse::Mode::kNone;
  use->privileged = from_follower;
  use->uses_topic_ids = version >= kFirstTopicIdVersion;
  if (version < kFirstSessionVersion || cache == nullptr) return KafkaError::kNone;
  const int32_t id = request->session_id;
  const int32_t epoch = request->session_epoch;
  if (epoch == 0 || epoch == -1) {  // full
    if (id != 0) cache->Remove(id);
    if (epoch == 0) use->mode = FetchSessionUse::Mode::kNew;
    return KafkaError::kNone;
  }
  std::vector<SessionPartition> updates;
  for (const auto& t : request->topics) {
    for (const auto& p : t.partitions) updates.push_back(FromRequest(t, p));
  }
  std::vector<SessionPartition> forgotten;
  for (const auto& t : request->forgotten_topics_data) {
    for (int32_t p : t.partitions) {
      SessionPartition s;
      s.topic = t.topic;
      s.topic_id = t.topic_id;
      s.partition = p;
      forgotten.push_back(std::move(s));
    }
  }
  std::vector<SessionPartition> parts;
  KafkaError e =
      cache->Update(id, epoch, use->uses_topic_ids, updates, forgotten, NowMs(), &parts);
  if (e != KafkaError::kNone) return e;
  request->topics = ToTopics(parts, use->uses_topic_ids);
  use->mode = FetchSessionUse::Mode::kIncremental;
  use->id = id;
  use->expected_epoch = fetch::NextEpoch(epoch);
  return KafkaError::kNone;
}

void FinishFetchSession(fetch::FetchSessionCache* cache, const FetchSessionUse& use,
                        const Request& request, Response* resp) {
  resp->session_id = 0;
  if (use.mode == FetchSessionUse::Mode::kNone) return;
  if (use.mode == FetchSessionUse::Mode::kNew) {
    std::vector<SessionPartition> parts;
    for (size_t t = 0; t < request.topics.size(); ++t) {
      for (size_t p = 0; p < request.topics[t].partitions.size(); ++p) {
        SessionPartition s = FromRequest(request.topics[t], request.topics[t].partitions[p]);
        const Response::PartitionData& a = resp->responses[t].partitions[p];
        if (a.error_code == 0) {
          s.high_watermark = a.high_watermark;
          s.last_stable_offset = a.last_stable_offset;
          s.answered_log_start = a.log_start_offset;
        }
        parts.push_back(std::move(s));
      }
    }
    resp->session_id = cache->Create(use.privileged, use.uses_topic_ids, std::move(parts), NowMs());
    return;
  }
  std::vector<fetch::AnsweredPartition> answered;
  for (const auto& t : resp->responses) {
    for (const auto& p : t.partitions) answered.push_back(Answered(p));
  }
  std::vector<bool> listed;
  KafkaError e = cache->Answer(use.id, use.expected_epoch, answered, &listed);
  if (e != KafkaError::kNone) {
    *resp = FetchRefused(e);
    return;
  }
  resp->session_id = use.id;
  size_t i = 0;
  std::vector<Response::FetchableTopicResponse> kept;
  for (auto& t : resp->responses) {
    std::vector<Response::PartitionData> parts;
    for (auto& p : t.partitions) {
      if (listed[i++]) parts.push_back(std::move(p));
    }
    if (parts.empty()) continue;
    t.partitions = std::move(parts);
    kept.push_back(std::move(t));
  }
  resp->responses = std::move(kept);
}

Response FetchRefused(KafkaError error) {
  Response resp;
  resp.error_code = Code(error);
  resp.session_id = 0;
  return resp;
}

}  // namespace headrace::broker
