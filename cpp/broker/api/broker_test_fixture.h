// BrokerFixture: a real headrace::Broker on 127.0.0.1:0 in a temp dir and a
// KafkaTestClient connected to it, for the end-to-end gtests in this
// directory. Test-only.
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>

#include "broker/api/kafka_test_client.h"
#include "headrace/broker.h"
#include "log/testing.h"

namespace headrace::testing {

class BrokerFixture : public ::testing::Test {
 protected:
  void SetUp() override { StartBroker(); }
  void TearDown() override {
    if (broker_) {
      EXPECT_TRUE(broker_->Stop().ok());
    }
  }

  // Starts a broker on the fixture's data dir with base_settings_ plus
  // `extra`, and connects client_.
  void StartBroker(std::map<std::string, std::string> extra = {}) {
    std::map<std::string, std::string> settings = {{"log.dirs", dir_.path()},
                                                   {"listeners", "PLAINTEXT://127.0.0.1:0"}};
    settings.insert(base_settings_.begin(), base_settings_.end());
    for (auto& [k, v] : extra) settings[k] = v;
    auto created = Broker::Create(settings);
    ASSERT_TRUE(created.ok()) << created.status().ToString();
    broker_ = std::move(*created);
    Status st = broker_->Start();
    ASSERT_TRUE(st.ok()) << st.ToString();
    std::string addr = broker_->listen_address();
    port_ = std::stoi(addr.substr(addr.rfind(':') + 1));
    client_ = std::make_unique<KafkaTestClient>(port_);
    ASSERT_TRUE(client_->connected());
  }
  // Stops the broker (clean shutdown) and starts it again on the same data.
  void RestartBroker() {
    client_.reset();
    ASSERT_TRUE(broker_->Stop().ok());
    broker_.reset();
    StartBroker();
  }

  // Sends `req` at `version` and returns the decoded response (a default one,
  // with a test failure, when the call fails).
  template <typename Resp, typename Req>
  Resp Call(const Req& req, int16_t version) {
    std::string error;
    auto resp = client_->Call<Resp>(req, version, &error);
    EXPECT_TRUE(resp.has_value()) << error;
    return resp.value_or(Resp{});
  }

  std::map<std::string, std::string> base_settings_;  // set in a constructor
  TempDir dir_;
  std::unique_ptr<Broker> broker_;
  std::unique_ptr<KafkaTestClient> client_;
  int port_ = 0;
};

}  // namespace headrace::testing
