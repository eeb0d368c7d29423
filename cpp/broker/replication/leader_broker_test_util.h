// LeaderBroker: a single-node broker built from the same parts as
// headrace::Broker (BrokerState, the Kafka API Dispatcher, net::Server) on
// 127.0.0.1, whose partitions a test can reach to make them lead other
// epochs or replica sets (what the control plane does in a cluster).
// Test-only.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "broker/server/dispatcher.h"
#include "broker/api/handler.h"
#include "broker/config/broker_config.h"
#include "broker/topics/broker_state.h"
#include "broker/topics/topic_registry.h"
#include "net/server.h"

namespace headrace::broker::testing {

class LeaderBroker {
 public:
  // Serves `data_dir` as broker `node_id` on `port` (0 = any).
  LeaderBroker(std::string data_dir, int32_t node_id, bool acks_all_fsync = true)
      : data_dir_(std::move(data_dir)), node_id_(node_id), acks_all_fsync_(acks_all_fsync) {}
  ~LeaderBroker() { Stop(); }

  ::testing::AssertionResult Start(uint16_t port = 0) {
    BrokerConfig config;
    config.node_id = node_id_;
    config.data_dir = data_dir_;
    config.acks_all_fsync = acks_all_fsync_;
    config.file_env = file_env_;
    config.listeners = {{"PLAINTEXT", "127.0.0.1", port}};
    auto state = BrokerState::Open(config);
    if (!state.ok()) return ::testing::AssertionFailure() << state.status().ToString();
    state_ = std::move(state).value();
    ctx_.state = state_.get();
    ctx_.node_id = node_id_;
    ctx_.advertised_host = "127.0.0.1";
    dispatcher_ = std::make_unique<Dispatcher>(&ctx_);
    net::ServerOptions opts;
    opts.listeners = {net::ListenAddress{"127.0.0.1", port, "PLAINTEXT"}};
    opts.io_threads = 1;
    server_ = std::make_unique<net::Server>(opts, dispatcher_.get());
    Status st = server_->Start();
    if (!st.ok()) return ::testing::AssertionFailure() << st.ToString();
    ctx_.advertised_port = server_->port();
    return ::testing::AssertionSuccess();
  }
  // `clean`: every partition closes cleanly (false: one is offline).
  void Stop(bool clean = true) {
    if (!state_) return;
    state_->StopWaiting();
    server_->Stop();
    const Status closed = state_->Close();
    if (clean) {
      EXPECT_TRUE(closed.ok()) << closed.ToString();
    }
    server_.reset();
    dispatcher_.reset();
    state_.reset();
  }

  // Creates a one-partition topic and returns its partition.
  std::shared_ptr<Partition> CreateTopic(const std::string& name) {
    CreateTopicRequest req;
    req.name = name;
    req.num_partitions = 1;
    req.replication_factor = 1;
    auto created = state_->topics().CreateTopic(req);
    EXPECT_TRUE(created.ok()) << created.status().ToString();
    return partition(name);
  }
  std::shared_ptr<Partition> partition(const std::string& topic) const {
    return state_->topics().FindPartition(topic, 0);
  }
  uint16_t port() const { return server_ ? server_->port() : 0; }
  // The file system the broker's partitions use from the next Start (null:
  // the OS); e.g. a FaultInjectingEnv. Must outlive the broker.
  void set_file_env(FileEnv* env) { file_env_ = env; }
  int32_t node_id() const { return node_id_; }
  BrokerState& state() { return *state_; }

 private:
  const std::string data_dir_;
  const int32_t node_id_;
  const bool acks_all_fsync_;
  FileEnv* file_env_ = nullptr;
  std::unique_ptr<BrokerState> state_;
  BrokerContext ctx_;
  std::unique_ptr<Dispatcher> dispatcher_;
  std::unique_ptr<net::Server> server_;
};

}  // namespace headrace::broker::testing
