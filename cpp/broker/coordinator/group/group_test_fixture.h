// The group coordinator test fixture: a coordinator on a fresh data dir,
// with a fake clock (now_) and no timer thread (tests call Tick()).
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <string>

#include "broker/partition/flusher.h"
#include "broker/coordinator/group/group_coordinator.h"

namespace headrace::broker::group {

namespace fs = std::filesystem;

class GroupCoordinatorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("group_test_" + std::to_string(std::random_device{}()));
    fs::create_directories(dir_);
    Reopen();
  }
  void TearDown() override {
    c_.reset();
    fs::remove_all(dir_);
  }
  // Reopens on the same data dir; `config` overrides the test defaults.
  void Reopen(std::function<void(GroupConfig&)> config = {}) {
    c_.reset();
    GroupCoordinator::Options o;
    o.config.min_session_timeout_ms = 100;
    o.config.initial_rebalance_delay_ms = 0;
    if (config) config(o.config);
    o.log_services.flusher = &flusher_;  // fsyncs the group log (compaction waits for it)
    o.data_dir = dir_.string();
    o.start_timer = false;
    o.now_ms = [this] { return now_; };
    o.group_configs = [this](const std::string& group) {
      auto it = group_configs_.find(group);
      return it == group_configs_.end() ? ConfigMap{} : it->second;
    };
    auto c = GroupCoordinator::Open(std::move(o));
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    c_ = std::move(c).value();
  }
  JoinRequest Req(std::string member, std::optional<std::string> instance = std::nullopt,
                  std::string meta = "m") {
    JoinRequest r;
    r.group_id = "g";
    r.member_id = std::move(member);
    r.instance_id = std::move(instance);
    r.client_id = "client";
    r.session_timeout_ms = 1000;
    r.rebalance_timeout_ms = 2000;
    r.protocol_type = "consumer";
    r.protocols = {{"range", meta}};
    return r;
  }
  // Joins and returns the result if it came back synchronously.
  std::optional<JoinResult> Join(JoinRequest r, std::optional<JoinResult>* later = nullptr) {
    auto out = std::make_shared<std::optional<JoinResult>>();
    c_->Join(std::move(r), [out, later](JoinResult res) {
      *out = res;
      if (later) *later = res;
    });
    return *out;
  }
  // A dynamic member's full KIP-394 join: returns the member id.
  std::string JoinNewMember(std::optional<JoinResult>* result) {
    auto first = Join(Req(""));
    EXPECT_TRUE(first.has_value());
    EXPECT_EQ(first->error, KafkaError::kMemberIdRequired);
    std::string id = first->member_id;
    Join(Req(id), result);
    return id;
  }
  SyncResult Sync(const std::string& member, int32_t gen,
                  std::vector<std::pair<std::string, std::string>> asg = {},
                  std::optional<SyncResult>* later = nullptr) {
    SyncRequest s;
    s.group_id = "g";
    s.member_id = member;
    s.generation = gen;
    s.assignments = std::move(asg);
    auto out = std::make_shared<std::optional<SyncResult>>();
    c_->Sync(std::move(s), [out, later](SyncResult r) {
      *out = r;
      if (later) *later = r;
    });
    return out->value_or(SyncResult{KafkaError::kUnknownServerError, "", "", "PARKED"});
  }

  fs::path dir_;
  std::map<std::string, ConfigMap> group_configs_;  // the group configs the coordinator sees
  int64_t now_ = 1'000'000;
  Flusher flusher_;  // declared before c_: outlives the coordinator
  std::unique_ptr<GroupCoordinator> c_;
};

// Bytes of the group log's segment files.
inline int64_t GroupLogBytes(const fs::path& data_dir) {
  int64_t total = 0;
  for (const auto& e : fs::directory_iterator(data_dir / kGroupLogDirName))
    if (e.path().extension() == ".log") total += static_cast<int64_t>(e.file_size());
  return total;
}

}  // namespace headrace::broker::group
