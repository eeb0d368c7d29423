#include "broker/api/share_state_client.h"

#include "broker/api/share_state.h"

#include "broker/replication/leader_connection.h"
#include "common/logging.h"

namespace headrace::broker {
namespace {

constexpr int kConnectTimeoutMs = 3000;
constexpr int kReadTimeoutMs = 10000;
constexpr int16_t kVersion = 0;

// The one partition result of a single-partition answer, or null.
template <typename Results>
const auto* OnlyPartition(const Results& results) {
  using P = std::remove_reference_t<decltype(results[0].partitions[0])>;
  const P* found = nullptr;
  for (const auto& t : results)
    for (const auto& p : t.partitions) found = &p;
  return found;
}

}  // namespace

ShareStateClient::ShareStateClient(BrokerContext& ctx)
    : ctx_(ctx), sender_([this] { SenderLoop(); }) {}

ShareStateClient::~ShareStateClient() { Stop(); }

void ShareStateClient::Stop() {
  std::deque<Job> dropped;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopped_) return;
    stopped_ = true;
    dropped.swap(queue_);
  }
  cv_.notify_all();
  if (sender_.joinable()) sender_.join();
  for (Job& job : dropped) job.run(nullptr);
}

bool ShareStateClient::Submit(Job job) {
  std::lock_guard<std::mutex> lock(mu_);
  if (stopped_) return false;
  queue_.push_back(std::move(job));
  cv_.notify_one();
  return true;
}

void ShareStateClient::SenderLoop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    cv_.wait(lock, [this] { return stopped_ || !queue_.empty(); });
    if (stopped_) break;
    Job job = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    job.run(ConnectionTo(job.broker));
    lock.lock();
  }
  connections_.clear();
}

replication::LeaderConnection* ShareStateClient::ConnectionTo(int32_t broker) {
  std::string host;
  int32_t port = 0;
  if (!ctx_.FindEndpoint(broker, &host, &port)) return nullptr;
  auto& conn = connections_[broker];
  if (!conn) {
    conn = std::make_unique<replication::LeaderConnection>(
        "headrace-share-state-" + std::to_string(ctx_.node_id), ctx_.inter_broker_security);
  }
  if (conn->connected()) return conn.get();
  Status st = conn->Connect(host, port, kConnectTimeoutMs, kReadTimeoutMs);
  if (!st.ok()) {
    HR_LOG(kWarn) << "share coordinator on broker " << broker << " (" << host << ":" << port
                  << "): " << st.ToString();
    return nullptr;
  }
  return conn.get();
}

namespace {

// Calls `conn` with `req`; the single partition's answer goes to `answer`,
// a failure to REQUEST_TIMED_OUT (and the connection is closed).
template <typename Resp, typename Req, typename Answer>
void CallOne(replication::LeaderConnection* conn, int32_t broker, const Req& req,
             Answer answer, const std::function<void(KafkaError)>& fail) {
  if (conn == nullptr) return fail(KafkaError::kRequestTimedOut);
  auto resp = conn->Call<Resp>(req, kVersion);
  if (!resp.ok()) {
    HR_LOG(kWarn) << "share state call to broker " << broker << ": " << resp.status().ToString();
    conn->Close();
    return fail(KafkaError::kRequestTimedOut);
  }
  const auto* p = OnlyPartition(resp->results);
  if (p == nullptr) return fail(KafkaError::kUnknownServerError);
  answer(*p);
}

}  // namespace

bool ShareStateClient::Read(int32_t broker, const share::SharePartitionKey& key,
                            int32_t leader_epoch, ReadDone done) {
  return Submit({broker, [broker, key, leader_epoch, done](replication::LeaderConnection* conn) {
            protocol::ReadShareGroupStateRequest req;
            req.group_id = key.group;
            auto& t = req.topics.emplace_back();
            t.topic_id = key.topic_id;
            t.partitions.push_back({key.partition, leader_epoch});
            CallOne<protocol::ReadShareGroupStateResponse>(
                conn, broker, req,
                [&](const auto& p) {
                  const auto e = static_cast<KafkaError>(p.error_code);
                  if (e != KafkaError::kNone) return done(e, std::nullopt);
                  share::ShareState s;
                  s.state_epoch = p.state_epoch;
                  s.leader_epoch = leader_epoch;
                  s.start_offset = p.start_offset;
                  for (const auto& b : p.state_batches) {
                    s.batches.push_back({b.first_offset, b.last_offset,
                                         static_cast<share::RecordState>(b.delivery_state),
                                         b.delivery_count});
                  }
                  done(KafkaError::kNone, std::move(s));
                },
                [&](KafkaError e) { done(e, std::nullopt); });
          }});
}

bool ShareStateClient::Initialize(int32_t broker, const share::SharePartitionKey& key,
                                  int32_t state_epoch, int64_t start_offset, Done done) {
  return Submit({broker, [broker, key, state_epoch, start_offset, done](replication::LeaderConnection* conn) {
            protocol::InitializeShareGroupStateRequest req;
            req.group_id = key.group;
            auto& t = req.topics.emplace_back();
            t.topic_id = key.topic_id;
            t.partitions.push_back({key.partition, state_epoch, start_offset});
            CallOne<protocol::InitializeShareGroupStateResponse>(
                conn, broker, req,
                [&](const auto& p) { done(static_cast<KafkaError>(p.error_code)); }, done);
          }});
}

bool ShareStateClient::Write(int32_t broker, const share::SharePartitionKey& key,
                             const share::ShareState& state, Done done) {
  return Submit({broker, [broker, key, state, done](replication::LeaderConnection* conn) {
            protocol::WriteShareGroupStateRequest req;
            req.group_id = key.group;
            auto& t = req.topics.emplace_back();
            t.topic_id = key.topic_id;
            auto& p = t.partitions.emplace_back();
            p.partition = key.partition;
            p.state_epoch = state.state_epoch;
            p.leader_epoch = state.leader_epoch;
            p.start_offset = state.start_offset;
            for (const share::StateBatch& b : state.batches) {
              p.state_batches.push_back({b.first, b.last, static_cast<int8_t>(b.state),
                                         b.delivery_count});
            }
            CallOne<protocol::WriteShareGroupStateResponse>(
                conn, broker, req,
                [&](const auto& r) { done(static_cast<KafkaError>(r.error_code)); }, done);
          }});
}

}  // namespace headrace::broker

namespace headrace::broker {

bool ShareStateClient::ReadSummary(int32_t broker, const share::SharePartitionKey& key,
                                   SummaryDone done) {
  return Submit({broker, [broker, key, done](replication::LeaderConnection* conn) {
            protocol::ReadShareGroupStateSummaryRequest req;
            req.group_id = key.group;
            auto& t = req.topics.emplace_back();
            t.topic_id = key.topic_id;
            t.partitions.push_back({key.partition, -1});
            CallOne<protocol::ReadShareGroupStateSummaryResponse>(
                conn, broker, req,
                [&](const auto& p) {
                  ShareStateSummary s;
                  s.error = static_cast<KafkaError>(p.error_code);
                  s.state_epoch = p.state_epoch;
                  s.start_offset = p.start_offset;
                  done(s);
                },
                [&](KafkaError e) {
                  ShareStateSummary s;
                  s.error = e;
                  done(s);
                });
          }});
}

bool ShareStateClient::Delete(int32_t broker, const share::SharePartitionKey& key, Done done) {
  return Submit({broker, [broker, key, done](replication::LeaderConnection* conn) {
                   protocol::DeleteShareGroupStateRequest req;
                   req.group_id = key.group;
                   auto& t = req.topics.emplace_back();
                   t.topic_id = key.topic_id;
                   t.partitions.emplace_back().partition = key.partition;
                   CallOne<protocol::DeleteShareGroupStateResponse>(
                       conn, broker, req,
                       [&](const auto& p) { done(static_cast<KafkaError>(p.error_code)); },
                       done);
                 }});
}

}  // namespace headrace::broker
