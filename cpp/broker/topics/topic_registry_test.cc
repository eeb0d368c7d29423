#include "broker/topics/topic_registry.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <functional>
#include <thread>

#include "broker/topics/broker_state.h"
#include "broker/base/kafka_error.h"
#include "headrace/record_batch.h"

namespace headrace::broker {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

class TopicRegistryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("hr_reg_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    config_.data_dir = dir_.string();
    config_.log_defaults.segment_bytes = 64 * 1024;
    config_.log_defaults.max_index_bytes = 4096;
  }
  void TearDown() override {
    registry_.reset();
    store_.reset();
    fs::remove_all(dir_);
  }
  void Open() {
    registry_.reset();
    auto store = FileMetadataStore::Open(dir_.string());
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    store_ = std::move(store).value();
    TopicRegistry::Options o;
    o.config = config_;
    o.store = store_.get();
    o.post_admin_job = poster_;
    auto r = TopicRegistry::Open(std::move(o));
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    registry_ = std::move(r).value();
  }
  Result<CreatedTopic> Create(const std::string& name, int32_t partitions, ConfigMap configs = {},
                              int16_t rf = -1) {
    CreateTopicRequest req;
    req.name = name;
    req.num_partitions = partitions;
    req.replication_factor = rf;
    req.configs = std::move(configs);
    return registry_->CreateTopic(req);
  }
  static void Produce(Partition& p, const std::string& value) {
    std::string b = BuildBatch({RecordInput{std::nullopt, value, {}, TimestampMs(1000)}});
    auto r = p.AppendAsLeader({reinterpret_cast<uint8_t*>(b.data()), b.size()});
    ASSERT_TRUE(r.ok()) << r.status().ToString();
  }
  static std::vector<std::string> Consume(const Partition& p) {
    auto r = p.Read(p.log_start_offset(), 1 << 20, IsolationLevel::kReadUncommitted);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    std::string bytes;
    for (const FileSlice& s : r->data.slices) {
      std::string chunk(s.length, '\0');
      EXPECT_EQ(::pread(s.fd, chunk.data(), s.length, s.position.value()), s.length);
      bytes += chunk;
    }
    auto recs = DecodeRecords({reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()});
    EXPECT_TRUE(recs.ok()) << recs.status().ToString();
    std::vector<std::string> values;
    for (const Record& rec : recs.value()) values.push_back(rec.value.value_or("<null>"));
    return values;
  }

  fs::path dir_;
  AdminJobPoster poster_;  // null: auto-creation runs on the caller
  BrokerConfig config_;
  std::unique_ptr<FileMetadataStore> store_;
  std::unique_ptr<TopicRegistry> registry_;
};

TEST_F(TopicRegistryTest, TopicsReloadWithTheirDataAndIds) {
  Open();
  auto created = Create("orders", 2, {{"retention.ms", "86400000"}});
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  EXPECT_FALSE(created->id.is_zero());
  Produce(*registry_->FindPartition("orders", 0), "a");
  Produce(*registry_->FindPartition("orders", 0), "b");
  Produce(*registry_->FindPartition("orders", 1), "c");
  std::string cluster = registry_->identity().cluster_id;

  Open();  // a restart
  EXPECT_EQ(registry_->identity().cluster_id, cluster);
  EXPECT_EQ(registry_->startup_report().topics, 1);
  EXPECT_EQ(registry_->startup_report().partitions, 2);
  auto topic = registry_->FindTopic("orders");
  ASSERT_TRUE(topic);
  EXPECT_EQ(topic->id, created->id);
  EXPECT_EQ(registry_->FindTopicById(created->id), topic);
  EXPECT_EQ(topic->settings.log.retention_ms, 86400000);
  EXPECT_EQ(Consume(*topic->partitions[0]), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(Consume(*topic->partitions[1]), (std::vector<std::string>{"c"}));
  EXPECT_EQ(topic->partitions[0]->high_watermark(), Offset(2));
  EXPECT_TRUE(fs::is_directory(dir_ / "orders-0"));
  EXPECT_TRUE(fs::exists(dir_ / "headrace-meta.json"));
}

TEST_F(TopicRegistryTest, CreateErrorsMapToKafkaCodes) {
  Open();
  ASSERT_TRUE(Create("t.x", 1).ok());
  auto code = [&](Result<CreatedTopic> r) { return ToKafkaError(r.status()); };
  EXPECT_EQ(code(Create("bad name", 1)), KafkaError::kInvalidTopicException);
  EXPECT_EQ(code(Create("..", 1)), KafkaError::kInvalidTopicException);
  EXPECT_EQ(code(Create("t.x", 1)), KafkaError::kTopicAlreadyExists);
  EXPECT_EQ(code(Create("t_x", 1)), KafkaError::kInvalidTopicException);  // collides
  EXPECT_EQ(code(Create("p0", 0)), KafkaError::kInvalidPartitions);
  EXPECT_EQ(code(Create("p0", -5)), KafkaError::kInvalidPartitions);
  EXPECT_EQ(code(Create("rf", 1, {}, 3)), KafkaError::kInvalidReplicationFactor);
  EXPECT_EQ(code(Create("rf", 1, {}, 0)), KafkaError::kInvalidReplicationFactor);
  auto bad_cfg = Create("cfg", 1, {{"retention.ms", "-9"}});
  EXPECT_EQ(ToKafkaError(bad_cfg.status()), KafkaError::kInvalidConfig);
  EXPECT_EQ(bad_cfg.status().message(), "retention.ms: must be an integer >= -1");
  EXPECT_EQ(code(Create("cfg", 1, {{"nope", "1"}})), KafkaError::kInvalidConfig);
  EXPECT_EQ(registry_->ListTopics().size(), 1u);

  CreateTopicRequest dry;
  dry.name = "dry";
  dry.validate_only = true;
  auto d = registry_->CreateTopic(dry);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->num_partitions, 1);  // num.partitions default
  EXPECT_EQ(d->replication_factor, 1);
  EXPECT_EQ(d->configs.size(), SupportedTopicConfigKeys().size());
  EXPECT_FALSE(registry_->FindTopic("dry"));
  EXPECT_FALSE(fs::exists(dir_ / "dry-0"));
}

TEST_F(TopicRegistryTest, DeleteRemovesMetadataThenDirectories) {
  Open();
  auto created = Create("gone", 2);
  ASSERT_TRUE(created.ok());
  auto held = registry_->FindPartition("gone", 0);  // a request in flight
  Produce(*held, "x");
  ASSERT_TRUE(registry_->DeleteTopic("gone").ok());
  EXPECT_FALSE(registry_->FindTopic("gone"));
  EXPECT_FALSE(registry_->FindTopicById(created->id));
  EXPECT_EQ(ToKafkaError(registry_->GetPartition("gone", 0).status()),
            KafkaError::kUnknownTopicOrPartition);
  std::string b = BuildBatch({RecordInput{std::nullopt, std::string("late"), {}, TimestampMs(1)}});
  auto late = held->AppendAsLeader({reinterpret_cast<uint8_t*>(b.data()), b.size()});
  EXPECT_EQ(ToKafkaError(late.status()), KafkaError::kNotLeaderOrFollower);
  registry_->DrainDeletions();
  for (const auto& e : fs::directory_iterator(dir_)) {
    EXPECT_EQ(e.path().filename().string().rfind("gone", 0), std::string::npos) << e.path();
  }
  EXPECT_EQ(ToKafkaError(registry_->DeleteTopic("gone")), KafkaError::kUnknownTopicOrPartition);
  EXPECT_EQ(ToKafkaError(registry_->DeleteTopicById(created->id).status()),
            KafkaError::kUnknownTopicId);

  ASSERT_TRUE(Create("gone", 1).ok());  // same name again starts empty
  EXPECT_EQ(registry_->FindPartition("gone", 0)->log_end_offset(), Offset(0));
  Open();
  EXPECT_EQ(registry_->ListTopics().size(), 1u);
  auto by_id = registry_->DeleteTopicById(registry_->FindTopic("gone")->id);
  ASSERT_TRUE(by_id.ok());
  EXPECT_EQ(by_id.value(), "gone");
}

TEST_F(TopicRegistryTest, CreatePartitionsGrowsAndPersists) {
  Open();
  ASSERT_TRUE(Create("grow", 2).ok());
  auto code = [&](int32_t n) { return ToKafkaError(registry_->CreatePartitions("grow", n, false)); };
  EXPECT_EQ(code(2), KafkaError::kInvalidPartitions);
  EXPECT_EQ(code(1), KafkaError::kInvalidPartitions);
  EXPECT_EQ(ToKafkaError(registry_->CreatePartitions("none", 3, false)),
            KafkaError::kUnknownTopicOrPartition);
  ASSERT_TRUE(registry_->CreatePartitions("grow", 5, /*validate_only=*/true).ok());
  EXPECT_EQ(registry_->FindTopic("grow")->partition_count(), 2);
  auto p0 = registry_->FindPartition("grow", 0);
  ASSERT_TRUE(registry_->CreatePartitions("grow", 5, false).ok());
  EXPECT_EQ(registry_->FindTopic("grow")->partition_count(), 5);
  EXPECT_EQ(registry_->FindPartition("grow", 0), p0);  // existing ones untouched
  EXPECT_TRUE(registry_->FindPartition("grow", 4));
  EXPECT_FALSE(registry_->FindPartition("grow", 5));
  Open();
  EXPECT_EQ(registry_->FindTopic("grow")->partition_count(), 5);
}

TEST_F(TopicRegistryTest, AlterConfigsReplaceAndIncrementalPersist) {
  config_.log_defaults.retention_ms = 5000;
  config_.explicitly_set.insert("log.retention.ms");
  Open();
  ASSERT_TRUE(Create("cfg", 1, {{"segment.ms", "100000"}}).ok());
  ASSERT_TRUE(registry_->AlterTopicConfig("cfg", {{"retention.ms", "777"}}, false).ok());
  auto t = registry_->FindTopic("cfg");
  EXPECT_EQ(t->overrides, (ConfigMap{{"retention.ms", "777"}}));  // segment.ms reverted
  EXPECT_EQ(ToKafkaError(registry_->AlterTopicConfig("cfg", {{"flush.ms", "x"}}, false)),
            KafkaError::kInvalidConfig);
  EXPECT_EQ(ToKafkaError(registry_->AlterTopicConfig("nope", {}, false)),
            KafkaError::kUnknownTopicOrPartition);
  ASSERT_TRUE(registry_
                  ->IncrementalAlterTopicConfig(
                      "cfg",
                      {{"retention.ms", AlterConfigOp::kDelete, std::nullopt},
                       {"cleanup.policy", AlterConfigOp::kAppend, "compact"}},
                      false)
                  .ok());
  Open();
  auto described = registry_->DescribeTopicConfig("cfg");
  ASSERT_TRUE(described.ok());
  for (const ConfigEntry& e : described.value()) {
    if (e.name == "retention.ms") {
      EXPECT_EQ(e.value, "5000");
      EXPECT_EQ(e.source, ConfigSource::kStaticBrokerConfig);
    }
    if (e.name == "cleanup.policy") {
      EXPECT_EQ(e.value, "compact,delete");
      EXPECT_EQ(e.source, ConfigSource::kDynamicTopicConfig);
    }
    if (e.name == "segment.ms") {
      EXPECT_EQ(e.source, ConfigSource::kDefaultConfig);
    }
  }
  EXPECT_TRUE(registry_->FindTopic("cfg")->settings.cleanup_compact);
}

TEST_F(TopicRegistryTest, StartupRemovesStrayAndHalfDeletedDirectories) {
  fs::create_directories(dir_ / "ghost-0");
  std::ofstream(dir_ / "ghost-0" / "00000000000000000000.log") << "old";
  fs::create_directories(dir_ / "t-3.0123abcd-delete");
  fs::create_directories(dir_ / "not-a-partition-dir.x");
  Open();
  registry_->DrainDeletions();
  EXPECT_EQ(registry_->startup_report().stray_dirs_removed, 1);
  EXPECT_EQ(registry_->startup_report().deleted_dirs_resumed, 1);
  EXPECT_FALSE(fs::exists(dir_ / "ghost-0"));
  EXPECT_FALSE(fs::exists(dir_ / "t-3.0123abcd-delete"));
  EXPECT_TRUE(fs::exists(dir_ / "not-a-partition-dir.x"));
  ASSERT_TRUE(Create("ghost", 1).ok());
  EXPECT_EQ(registry_->FindPartition("ghost", 0)->log_end_offset(), Offset(0));
}

TEST_F(TopicRegistryTest, AutoCreateFollowsTheBrokerSetting) {
  config_.num_partitions = 3;
  Open();
  auto t = registry_->FindOrAutoCreate("auto");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t.value()->partition_count(), 3);
  EXPECT_EQ(ToKafkaError(registry_->FindOrAutoCreate("bad/name").status()),
            KafkaError::kInvalidTopicException);
  config_.auto_create_topics_enable = false;
  Open();
  EXPECT_EQ(ToKafkaError(registry_->FindOrAutoCreate("other").status()),
            KafkaError::kUnknownTopicOrPartition);
  EXPECT_TRUE(registry_->FindOrAutoCreate("auto").ok());
}

TEST_F(TopicRegistryTest, AutoCreateIsPostedOnceAndAnswersLeaderNotAvailableMeanwhile) {
  std::vector<std::function<void()>> jobs;
  poster_ = [&jobs](std::function<void()> job) { jobs.push_back(std::move(job)); };
  Open();
  auto first = registry_->FindOrAutoCreate("later");
  EXPECT_EQ(ToKafkaError(first.status()), KafkaError::kLeaderNotAvailable);
  EXPECT_EQ(first.status().message(), "Topic later is being created.");
  EXPECT_EQ(ToKafkaError(registry_->FindOrAutoCreate("later").status()),
            KafkaError::kLeaderNotAvailable);
  ASSERT_EQ(jobs.size(), 1u);  // one creation per name while it is pending
  EXPECT_EQ(registry_->FindTopic("later"), nullptr);
  jobs[0]();
  auto t = registry_->FindOrAutoCreate("later");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t.value()->name, "later");
  EXPECT_EQ(jobs.size(), 1u);
}

TEST_F(TopicRegistryTest, PartitionLimitsArePolicyViolationsNamingTheLimit) {
  config_.max_partitions = 10;
  config_.max_partitions_per_request = 6;
  Open();
  auto over_request = Create("a", 7);
  EXPECT_EQ(ToKafkaError(over_request.status()), KafkaError::kPolicyViolation);
  EXPECT_EQ(over_request.status().message(),
            "Creating 7 partitions exceeds headrace.max.partitions.per.request (6 per request; 6 "
            "left in this request).");
  ASSERT_TRUE(Create("a", 6).ok());
  auto over_broker = Create("b", 5);
  EXPECT_EQ(ToKafkaError(over_broker.status()), KafkaError::kPolicyViolation);
  EXPECT_EQ(over_broker.status().message(),
            "Creating 5 partitions would exceed headrace.max.partitions (10); this broker hosts 6.");
  CreateTopicRequest budgeted;
  budgeted.name = "b";
  budgeted.num_partitions = 3;
  budgeted.partition_budget = 2;  // what an earlier topic of the request left
  EXPECT_EQ(ToKafkaError(registry_->CreateTopic(budgeted).status()), KafkaError::kPolicyViolation);
  ASSERT_TRUE(Create("b", 4).ok());
  Status grow = registry_->CreatePartitions("b", 5, /*validate_only=*/true);
  EXPECT_EQ(ToKafkaError(grow), KafkaError::kPolicyViolation);
  EXPECT_NE(grow.message().find("headrace.max.partitions (10)"), std::string::npos);
  EXPECT_EQ(ToKafkaError(registry_->FindOrAutoCreate("auto").status()),
            KafkaError::kPolicyViolation);  // 10 hosted: no room for one more
  ASSERT_TRUE(registry_->DeleteTopic("a").ok());
  EXPECT_TRUE(registry_->CreatePartitions("b", 5, false).ok());
  EXPECT_TRUE(registry_->FindOrAutoCreate("auto").ok());
}

TEST_F(TopicRegistryTest, LookupsRunConcurrentlyWithAdmin) {
  Open();
  ASSERT_TRUE(Create("hot", 4).ok());
  std::atomic<bool> stop{false};
  std::atomic<int64_t> found{0};
  std::vector<std::thread> readers;
  for (int i = 0; i < 3; ++i) {
    readers.emplace_back([&] {
      while (!stop) {
        if (registry_->FindPartition("hot", 3)) ++found;
        registry_->FindPartition("churn", 0);
        registry_->ListTopics();
      }
    });
  }
  for (int i = 0; i < 20; ++i) {
    ASSERT_TRUE(Create("churn", 1).ok());
    ASSERT_TRUE(registry_->DeleteTopic("churn").ok());
  }
  stop = true;
  for (auto& r : readers) r.join();
  EXPECT_GT(found.load(), 0);
}

TEST(BrokerStateTest, AcksAllProduceAndLongPollFetchEndToEnd) {
  fs::path dir = fs::temp_directory_path() / ("hr_state_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  BrokerConfig config;
  config.data_dir = dir.string();
  auto state = BrokerState::Open(config);
  ASSERT_TRUE(state.ok()) << state.status().ToString();
  BrokerState& s = *state.value();
  CreateTopicRequest req;
  req.name = "e2e";
  ASSERT_TRUE(s.topics().CreateTopic(req).ok());
  auto p = s.topics().FindPartition("e2e", 0);

  // A long-poll fetch waits for the HW to pass what it read; an acks=all
  // produce for the HW to pass its last offset. With headrace.acks.all.fsync
  // (the default) both complete only after the flusher's fsync.
  std::atomic<int> fetch_woke{0}, acked{0};
  auto seen = p->Read(Offset(0), 1 << 20, IsolationLevel::kReadUncommitted);
  ASSERT_TRUE(seen.ok());
  s.purgatory().Wait({{p, Watermark::kHighWatermark, seen->high_watermark + 1}},
                     Purgatory::Clock::now() + 10s, nullptr,
                     [&](WakeReason r) { fetch_woke += r == WakeReason::kReady; });

  std::string b = BuildBatch({RecordInput{std::nullopt, std::string("v"), {}, TimestampMs(5)}});
  auto info = p->AppendAsLeader({reinterpret_cast<uint8_t*>(b.data()), b.size()}, -1);
  ASSERT_TRUE(info.ok());
  s.purgatory().Wait({{p, Watermark::kHighWatermark, info->last_offset + 1}},
                     Purgatory::Clock::now() + 10s, nullptr,
                     [&](WakeReason r) { acked += r == WakeReason::kReady; });
  for (int i = 0; i < 2000 && (acked == 0 || fetch_woke == 0); ++i) std::this_thread::sleep_for(1ms);
  EXPECT_EQ(fetch_woke.load(), 1);
  EXPECT_EQ(acked.load(), 1);
  EXPECT_GT(p->flushed_offset(), info->last_offset);
  EXPECT_GT(p->high_watermark(), info->last_offset);
  ASSERT_TRUE(s.Close().ok());
  state.value().reset();
  fs::remove_all(dir);
}

// A coordinator's log served as an internal topic: found by name, id and
// partition lookups, never listed, retained or changed by admin requests.
TEST_F(TopicRegistryTest, InternalTopicIsFoundButNotListedOrChanged) {
  Open();
  ASSERT_TRUE(Create("plain", 1).ok());
  auto log = Partition::Open(dir_.string() + "/__group_metadata_test", {"__group_metadata", 0},
                             Uuid(), TopicSettings{}, PartitionServices{});
  ASSERT_TRUE(log.ok()) << log.status().ToString();
  registry_->SetInternalTopic("__consumer_offsets", *log, {{"cleanup.policy", "compact"}});

  auto t = registry_->FindTopic("__consumer_offsets");
  ASSERT_NE(t, nullptr);
  EXPECT_TRUE(t->internal);
  EXPECT_FALSE(t->id.is_zero());
  EXPECT_EQ(registry_->FindTopicById(t->id), t);
  EXPECT_EQ(registry_->FindPartition("__consumer_offsets", 0), *log);
  EXPECT_EQ(registry_->FindPartition("__consumer_offsets", 1), nullptr);
  ASSERT_EQ(registry_->InternalTopics().size(), 1u);
  EXPECT_EQ(registry_->ListTopics().size(), 1u);     // "plain" only
  EXPECT_EQ(registry_->AllPartitions().size(), 1u);  // retention never sees the log

  auto described = registry_->DescribeTopicConfig("__consumer_offsets");
  ASSERT_TRUE(described.ok());
  for (const ConfigEntry& e : *described) {
    if (e.name == "cleanup.policy") {
      EXPECT_EQ(e.value, "compact");
    }
  }
  EXPECT_EQ(ToKafkaError(registry_->DeleteTopic("__consumer_offsets")),
            KafkaError::kInvalidTopicException);
  EXPECT_EQ(ToKafkaError(registry_->CreatePartitions("__consumer_offsets", 3, false)),
            KafkaError::kInvalidTopicException);
  EXPECT_EQ(ToKafkaError(registry_->AlterTopicConfig("__consumer_offsets", {}, false)),
            KafkaError::kInvalidTopicException);
  EXPECT_EQ(ToKafkaError(Create("__consumer_offsets", 1).status()),
            KafkaError::kTopicAlreadyExists);
  // A dynamic default change leaves the coordinator's log alone.
  registry_->SetDynamicTopicDefaults({{"retention.ms", "1"}}, {});
  EXPECT_EQ(registry_->FindTopic("plain")->settings.log.retention_ms, 1);

  registry_->SetInternalTopic("__consumer_offsets", nullptr);
  EXPECT_EQ(registry_->FindTopic("__consumer_offsets"), nullptr);
  (void)(*log)->Close();
}

}  // namespace
}  // namespace headrace::broker
