#include "broker/api/txn_marker_cluster.h"

#include <map>

#include "broker/replication/leader_connection.h"
#include "common/logging.h"

namespace headrace::broker {
namespace {

constexpr int kConnectTimeoutMs = 5000;
constexpr int kReadTimeoutMs = 30000;
constexpr int16_t kWriteTxnMarkersVersion = 1;

}  // namespace

struct ClusterTxnMarkerWriter::Progress {
  std::mutex mu;
  std::vector<KafkaError> errors;
  int outstanding = 0;  // parts not yet reported
  txn::MarkersDone done;

  // Records one part's results; the last part calls `done`.
  void Report(const std::vector<size_t>& indexes, const std::vector<KafkaError>& part) {
    txn::MarkersDone finish;
    std::vector<KafkaError> all;
    {
      std::lock_guard<std::mutex> lock(mu);
      for (size_t i = 0; i < indexes.size(); ++i) {
        errors[indexes[i]] = i < part.size() ? part[i] : KafkaError::kUnknownServerError;
      }
      if (--outstanding > 0) return;
      finish = std::move(done);
      all = errors;
    }
    finish(std::move(all));
  }
};

ClusterTxnMarkerWriter::ClusterTxnMarkerWriter(BrokerContext& ctx, txn::TxnMarkerWriter* local)
    : ctx_(ctx), local_(local), sender_([this] { SenderLoop(); }) {}

ClusterTxnMarkerWriter::~ClusterTxnMarkerWriter() { Stop(); }

void ClusterTxnMarkerWriter::Stop() {
  std::deque<RemoteJob> dropped;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopped_) return;
    stopped_ = true;
    dropped.swap(queue_);
  }
  cv_.notify_all();
  if (sender_.joinable()) sender_.join();
  for (RemoteJob& job : dropped) {
    job.progress->Report(job.indexes,
                         std::vector<KafkaError>(job.indexes.size(), KafkaError::kRequestTimedOut));
  }
}

void ClusterTxnMarkerWriter::Write(txn::TxnMarkerSpec spec, txn::MarkersDone done) {
  ClusterState* cluster = ctx_.state->cluster();
  if (cluster == nullptr) {
    local_->Write(std::move(spec), std::move(done));
    return;
  }
  auto view = cluster->view();
  // Group the partitions by leader; -2 = no live leader.
  std::map<int32_t, std::vector<size_t>> by_leader;
  for (size_t i = 0; i < spec.partitions.size(); ++i) {
    const auto& [topic, p] = spec.partitions[i];
    const TopicView* t = view->FindTopic(topic);
    int32_t leader = -3;  // the topic is gone
    if (t != nullptr && p >= 0 && p < static_cast<int32_t>(t->partitions.size())) {
      leader = t->partitions[p].leader;
      if (leader < 0 || view->FindBroker(leader) == nullptr) leader = -2;
    }
    by_leader[leader].push_back(i);
  }
  auto progress = std::make_shared<Progress>();
  progress->errors.assign(spec.partitions.size(), KafkaError::kUnknownServerError);
  progress->outstanding = static_cast<int>(by_leader.size());
  progress->done = std::move(done);
  if (by_leader.empty()) {
    progress->outstanding = 1;
    progress->Report({}, {});
    return;
  }
  std::vector<RemoteJob> remote;
  for (auto& [leader, indexes] : by_leader) {
    txn::TxnMarkerSpec part = spec;
    part.partitions.clear();
    for (size_t i : indexes) part.partitions.push_back(spec.partitions[i]);
    if (leader == -3 || leader == -2) {
      const KafkaError e = leader == -3 ? KafkaError::kUnknownTopicOrPartition
                                        : KafkaError::kLeaderNotAvailable;
      progress->Report(indexes, std::vector<KafkaError>(indexes.size(), e));
    } else if (leader == ctx_.node_id) {
      local_->Write(std::move(part), [progress, indexes](std::vector<KafkaError> errors) {
        progress->Report(indexes, errors);
      });
    } else {
      remote.push_back({leader, std::move(part), indexes, progress});
    }
  }
  if (remote.empty()) return;
  bool refused = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    refused = stopped_;
    if (!refused) {
      for (RemoteJob& job : remote) queue_.push_back(std::move(job));
    }
  }
  if (refused) {
    for (RemoteJob& job : remote) {
      job.progress->Report(job.indexes, std::vector<KafkaError>(job.indexes.size(),
                                                                KafkaError::kRequestTimedOut));
    }
    return;
  }
  cv_.notify_one();
}

void ClusterTxnMarkerWriter::SenderLoop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    cv_.wait(lock, [this] { return stopped_ || !queue_.empty(); });
    if (stopped_) break;
    RemoteJob job = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    Send(job);
    lock.lock();
  }
  connections_.clear();
}

void ClusterTxnMarkerWriter::Send(RemoteJob& job) {
  std::vector<KafkaError> errors(job.indexes.size(), KafkaError::kRequestTimedOut);
  std::string host;
  int32_t port = 0;
  if (!ctx_.FindEndpoint(job.broker_id, &host, &port)) {
    job.progress->Report(job.indexes, std::vector<KafkaError>(job.indexes.size(),
                                                              KafkaError::kLeaderNotAvailable));
    return;
  }
  auto& conn = connections_[job.broker_id];
  if (!conn) {
    conn = std::make_unique<replication::LeaderConnection>(
        "headrace-txn-markers-" + std::to_string(ctx_.node_id), ctx_.inter_broker_security);
  }
  Status st = conn->connected() ? Status::OK()
                                : conn->Connect(host, port, kConnectTimeoutMs, kReadTimeoutMs);
  protocol::WriteTxnMarkersRequest req;
  protocol::WriteTxnMarkersRequest::WritableTxnMarker marker;
  marker.producer_id = job.spec.producer_id;
  marker.producer_epoch = job.spec.producer_epoch;
  marker.transaction_result = job.spec.commit;
  marker.coordinator_epoch = job.spec.coordinator_epoch;
  std::map<std::string, std::vector<int32_t>> by_topic;
  for (const auto& [topic, p] : job.spec.partitions) by_topic[topic].push_back(p);
  for (auto& [topic, ps] : by_topic) marker.topics.push_back({topic, std::move(ps)});
  req.markers.push_back(std::move(marker));
  if (st.ok()) {
    auto resp = conn->Call<protocol::WriteTxnMarkersResponse>(req, kWriteTxnMarkersVersion);
    if (resp.ok()) {
      std::map<std::pair<std::string, int32_t>, KafkaError> answered;
      for (const auto& m : resp->markers) {
        for (const auto& t : m.topics) {
          for (const auto& p : t.partitions) {
            answered[{t.name, p.partition_index}] = static_cast<KafkaError>(p.error_code);
          }
        }
      }
      for (size_t i = 0; i < job.spec.partitions.size(); ++i) {
        auto it = answered.find(job.spec.partitions[i]);
        errors[i] = it == answered.end() ? KafkaError::kUnknownServerError : it->second;
      }
    } else {
      st = resp.status();
    }
  }
  if (!st.ok()) {
    HR_LOG(kWarn) << "transaction markers to broker " << job.broker_id << " (" << host << ":"
                     << port << "): " << st.ToString();
    conn->Close();
  }
  job.progress->Report(job.indexes, errors);
}

}  // namespace headrace::broker
