// The router of a broker's group coordinators (group_coordinators.h):
// lookups by group id, the errors for groups coordinated elsewhere, and the
// one shared timer that ticks every coordinator.
#include "broker/coordinator/group/group_coordinators.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <random>
#include <thread>

#include "broker/partition/flusher.h"
#include "broker/coordinator/base/group_partition.h"

namespace headrace::broker::group {
namespace {

namespace fs = std::filesystem;

class GroupCoordinatorsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    base_ = fs::temp_directory_path() / ("group_router_" + std::to_string(std::random_device{}()));
  }
  void TearDown() override { fs::remove_all(base_); }
  // A coordinator on its own data dir, without a timer of its own.
  std::shared_ptr<GroupCoordinator> Open(const std::string& name) {
    GroupCoordinator::Options o;
    o.config.min_session_timeout_ms = 10;
    o.config.initial_rebalance_delay_ms = 0;
    o.log_services.flusher = &flusher_;
    o.data_dir = (base_ / name).string();
    fs::create_directories(o.data_dir);
    o.start_timer = false;
    o.now_ms = [this] { return now_.load(); };
    auto c = GroupCoordinator::Open(std::move(o));
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    return std::shared_ptr<GroupCoordinator>(std::move(c).value());
  }
  fs::path base_;
  Flusher flusher_;
  std::atomic<int64_t> now_{1000};
};

TEST_F(GroupCoordinatorsTest, RoutesByGroupPartition) {
  GroupCoordinators router(KafkaError::kNotCoordinator);
  // No __consumer_offsets yet: nobody coordinates.
  EXPECT_EQ(router.For("g").error, KafkaError::kCoordinatorNotAvailable);
  EXPECT_EQ(router.PartitionFor("g"), -1);
  router.SetPartitionCount(6);
  auto two = Open("p2");
  router.Set(2, two);
  // "gr\xc3\xbcppe" hashes to 2 of 6, "a" to 1 of 6 (group_partition_test).
  CoordinatorLookup here = router.For("gr\xc3\xbcppe");
  EXPECT_EQ(here.error, KafkaError::kNone);
  EXPECT_EQ(here.coordinator, two);
  EXPECT_EQ(here.partition, 2);
  CoordinatorLookup elsewhere = router.For("a");
  EXPECT_EQ(elsewhere.coordinator, nullptr);
  EXPECT_EQ(elsewhere.error, KafkaError::kNotCoordinator);
  EXPECT_EQ(elsewhere.partition, 1);
  EXPECT_EQ(router.ForPartition(2), two);
  EXPECT_EQ(router.All().size(), 1u);
  EXPECT_EQ(router.Take(2), two);
  EXPECT_EQ(router.Take(2), nullptr);
  EXPECT_EQ(router.For("gr\xc3\xbcppe").error, KafkaError::kNotCoordinator);
  two->Stop();
}

TEST_F(GroupCoordinatorsTest, SingleNodeAnswersCoordinatorNotAvailableWithoutOne) {
  GroupCoordinators router(KafkaError::kCoordinatorNotAvailable);
  router.SetPartitionCount(1);
  EXPECT_EQ(router.For("any").error, KafkaError::kCoordinatorNotAvailable);
  auto only = Open("single");
  router.Set(0, only);
  for (const char* id : {"a", "my-group", "polygenelubricants", ""}) {
    EXPECT_EQ(router.For(id).coordinator, only) << id;
  }
  only->Stop();
}

TEST_F(GroupCoordinatorsTest, OneTimerTicksEveryCoordinator) {
  GroupCoordinators router(KafkaError::kNotCoordinator);
  router.SetPartitionCount(2);
  std::shared_ptr<GroupCoordinator> cs[2] = {Open("t0"), Open("t1")};
  // A member joins a group on each coordinator; its session then runs out
  // on the fake clock, and only a Tick (the router's timer) expires it.
  for (int p = 0; p < 2; ++p) {
    router.Set(p, cs[p]);
    JoinRequest r;
    r.group_id = "g";
    r.session_timeout_ms = 100;
    r.rebalance_timeout_ms = 100;
    r.protocol_type = "consumer";
    r.protocols = {{"range", "m"}};
    std::string id;  // KIP-394: the first join hands out the member id
    cs[p]->Join(r, [&id](JoinResult res) { id = res.member_id; });
    r.member_id = id;
    cs[p]->Join(r, [](JoinResult) {});
  }
  for (auto& c : cs) ASSERT_EQ(c->Describe("g").members.size(), 1u);
  now_ += 10'000;
  router.StartTimer(5);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  auto expired = [&] {
    for (auto& c : cs)
      if (!c->Describe("g").members.empty()) return false;
    return true;
  };
  while (!expired() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_TRUE(expired());
  router.StopTimer();
  for (auto& c : cs) c->Stop();
}

}  // namespace
}  // namespace headrace::broker::group
