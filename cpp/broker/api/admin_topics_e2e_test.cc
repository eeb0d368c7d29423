// End to end over a socket: ApiVersions listing, CreateTopics, DeleteTopics and
// CreatePartitions, with their error paths and persistence across a restart.
#include <chrono>
#include <thread>

#include "broker/api/admin_e2e_fixture.h"

namespace headrace {
namespace {

// A suite name of its own: the fixture header is compiled into each file.
class AdminTopicsE2ETest : public AdminE2ETest {};

TEST_F(AdminTopicsE2ETest, ApiVersionsAdvertisesEveryAdminApi) {
  auto resp = Call<ApiVersionsResponse>(ApiVersionsRequest{}, 3);
  std::map<int16_t, std::pair<int16_t, int16_t>> got;
  for (const auto& k : resp.api_keys) got[k.api_key] = {k.min_version, k.max_version};
  std::map<int16_t, std::pair<int16_t, int16_t>> want = {
      {19, {2, 7}}, {20, {1, 6}}, {21, {0, 2}}, {32, {1, 4}},
      {33, {0, 2}}, {37, {0, 3}}, {44, {0, 1}}, {60, {0, 1}}};
  for (const auto& [key, range] : want) {
    ASSERT_TRUE(got.count(key)) << "api key " << key;
    EXPECT_EQ(got[key], range) << "api key " << key;
  }
}

// ---------------------------------------------------------------- CreateTopics

// Creating partitions (directories, files, fsyncs) runs on the admin
// worker: with one network thread, another connection is answered while a
// large CreateTopics is still being carried out, and the creation completes.
TEST_F(AdminTopicsE2ETest, CreateTopicsDoesNotStallOtherConnections) {
  client_.reset();
  ASSERT_TRUE(broker_->Stop().ok());
  broker_.reset();
  StartBroker({{"num.io.threads", "1"}});
  KafkaTestClient other(port_);
  ASSERT_TRUE(other.connected());
  using Clock = std::chrono::steady_clock;
  CreateTopicsRequest big;
  big.topics.push_back(TopicSpec("many", 300, 1));
  const auto t0 = Clock::now();
  const int32_t corr = client_->Send(big, 7);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));  // the create is under way
  std::string error;
  auto api = other.Call<ApiVersionsResponse>(ApiVersionsRequest{}, 3, &error);
  ASSERT_TRUE(api.has_value()) << error;
  const auto api_at = Clock::now() - t0;
  auto created = client_->Receive<CreateTopicsResponse>(corr, 7, &error);
  ASSERT_TRUE(created.has_value()) << error;
  const auto created_at = Clock::now() - t0;
  ASSERT_EQ(created->topics.size(), 1u);
  EXPECT_EQ(created->topics[0].error_code, 0);
  EXPECT_EQ(PartitionCount("many"), 300);
  // 300 partitions take hundreds of ms (fsyncs); ApiVersions waited for none of it.
  EXPECT_LT(api_at * 2, created_at) << "ApiVersions after "
      << std::chrono::duration<double, std::milli>(api_at).count() << " ms, create after "
      << std::chrono::duration<double, std::milli>(created_at).count() << " ms";
}

TEST_F(AdminTopicsE2ETest, CreateTopicsReturnsIdPartitionsAndConfigs) {
  auto r = Create(TopicSpec("orders", 3, 1, {{"retention.ms", "86400000"}}));
  ASSERT_EQ(r.error_code, 0) << r.error_message.value_or("");
  EXPECT_FALSE(r.error_message.has_value());
  EXPECT_FALSE(r.topic_id.is_zero());
  EXPECT_EQ(r.num_partitions, 3);
  EXPECT_EQ(r.replication_factor, 1);
  ASSERT_TRUE(r.configs.has_value());
  std::map<std::string, CreateTopicsResponse::CreatableTopicConfigs> cfg;
  for (const auto& c : *r.configs) cfg[c.name] = c;
  EXPECT_EQ(cfg["retention.ms"].value, "86400000");
  EXPECT_EQ(cfg["retention.ms"].config_source, kSourceDynamicTopic);
  EXPECT_EQ(cfg["retention.bytes"].value, "1000000");  // set in the broker's settings
  EXPECT_EQ(cfg["retention.bytes"].config_source, kSourceStaticBroker);
  EXPECT_EQ(cfg["cleanup.policy"].value, "delete");
  EXPECT_EQ(cfg["cleanup.policy"].config_source, kSourceDefault);
  EXPECT_EQ(PartitionCount("orders"), 3);

  MetadataRequest md;
  md.topics->push_back({.topic_id = {}, .name = "orders"});
  auto m = Call<MetadataResponse>(md, 12);
  ASSERT_EQ(m.topics.size(), 1u);
  EXPECT_EQ(m.topics[0].topic_id, r.topic_id);
}

TEST_F(AdminTopicsE2ETest, CreateTopicsDefaultsAndOlderVersions) {
  auto r = Create(TopicSpec("dflt", -1, -1));
  ASSERT_EQ(r.error_code, 0) << r.error_message.value_or("");
  EXPECT_EQ(r.num_partitions, 1);
  EXPECT_EQ(r.replication_factor, 1);
  EXPECT_TRUE(r.topic_id.is_zero() == false);

  auto v2 = Create(TopicSpec("old-v2", 2, 1), false, 2);
  EXPECT_EQ(v2.error_code, 0);
  EXPECT_EQ(PartitionCount("old-v2"), 2);
  auto v4 = Create(TopicSpec("old-v4", -1, -1), false, 4);
  EXPECT_EQ(v4.error_code, 0);
  auto v5 = Create(TopicSpec("old-v5", 1, 1), false, 5);
  EXPECT_EQ(v5.error_code, 0);
  EXPECT_EQ(v5.num_partitions, 1);
  auto dup = Create(TopicSpec("old-v2", 2, 1), false, 2);
  EXPECT_EQ(dup.error_code, Code(KafkaError::kTopicAlreadyExists));
  EXPECT_NE(dup.error_message.value_or(""), "");
}

TEST_F(AdminTopicsE2ETest, CreateTopicsPerTopicErrors) {
  MustCreate("exists", 1);
  struct Case {
    CreateTopicsRequest::CreatableTopic spec;
    KafkaError want;
    std::string message_part;
  };
  std::vector<Case> cases = {
      {TopicSpec("exists", 1, 1), KafkaError::kTopicAlreadyExists, "already exists"},
      {TopicSpec("bad name!", 1, 1), KafkaError::kInvalidTopicException, "illegal"},
      {TopicSpec("", 1, 1), KafkaError::kInvalidTopicException, "empty"},
      {TopicSpec(std::string(300, 'x'), 1, 1), KafkaError::kInvalidTopicException, "longer"},
      {TopicSpec("zero-parts", 0, 1), KafkaError::kInvalidPartitions, "larger than 0"},
      {TopicSpec("neg-parts", -5, 1), KafkaError::kInvalidPartitions, ""},
      {TopicSpec("huge-parts", INT32_MAX, 1), KafkaError::kInvalidPartitions, "at most"},
      {TopicSpec("rf3", 1, 3), KafkaError::kInvalidReplicationFactor, "larger than available"},
      {TopicSpec("rf0", 1, 0), KafkaError::kInvalidReplicationFactor, ""},
      {TopicSpec("rfneg", 1, -7), KafkaError::kInvalidReplicationFactor, ""},
      {TopicSpec("badcfg", 1, 1, {{"retention.ms", "soon"}}), KafkaError::kInvalidConfig,
       "retention.ms"},
      {TopicSpec("unknowncfg", 1, 1, {{"no.such.key", "1"}}), KafkaError::kInvalidConfig,
       "no.such.key"},
      {TopicSpec("nullcfg", 1, 1, {{"retention.ms", std::nullopt}}), KafkaError::kInvalidConfig,
       "Null value"},
  };
  for (const Case& c : cases) {
    auto r = Create(c.spec);
    EXPECT_EQ(r.error_code, Code(c.want)) << c.spec.name.substr(0, 20);
    EXPECT_NE(r.error_message.value_or("").find(c.message_part), std::string::npos)
        << r.error_message.value_or("<null>");
    EXPECT_EQ(r.num_partitions, -1);
    if (c.want != KafkaError::kTopicAlreadyExists && c.want != KafkaError::kInvalidTopicException) {
      EXPECT_EQ(PartitionCount(c.spec.name), -Code(KafkaError::kUnknownTopicOrPartition))
          << c.spec.name.substr(0, 20);
    }
  }
}

TEST_F(AdminTopicsE2ETest, CreateTopicsDuplicateNamesAreInvalidRequest) {
  CreateTopicsRequest req;
  req.topics = {TopicSpec("twice", 1, 1), TopicSpec("once", 1, 1), TopicSpec("twice", 2, 1)};
  auto resp = Call<CreateTopicsResponse>(req, 7);
  ASSERT_EQ(resp.topics.size(), 2u);
  EXPECT_EQ(resp.topics[0].name, "twice");
  EXPECT_EQ(resp.topics[0].error_code, Code(KafkaError::kInvalidRequest));
  EXPECT_EQ(resp.topics[1].name, "once");
  EXPECT_EQ(resp.topics[1].error_code, 0);
  EXPECT_EQ(PartitionCount("twice"), -Code(KafkaError::kUnknownTopicOrPartition));
}

TEST_F(AdminTopicsE2ETest, CreateTopicsValidateOnlyCreatesNothing) {
  auto r = Create(TopicSpec("dry", 4, 1, {{"cleanup.policy", "compact"}}), true);
  EXPECT_EQ(r.error_code, 0);
  EXPECT_EQ(r.num_partitions, 4);
  EXPECT_TRUE(r.topic_id.is_zero());
  ASSERT_TRUE(r.configs.has_value());
  EXPECT_FALSE(r.configs->empty());
  EXPECT_EQ(PartitionCount("dry"), -Code(KafkaError::kUnknownTopicOrPartition));
  EXPECT_EQ(Create(TopicSpec("dry", 1, 5), true).error_code,
            Code(KafkaError::kInvalidReplicationFactor));
}

TEST_F(AdminTopicsE2ETest, CreateTopicsManualAssignments) {
  auto spec = TopicSpec("manual", -1, -1);
  spec.assignments = {{1, {0}}, {0, {0}}};
  auto ok = Create(spec);
  EXPECT_EQ(ok.error_code, 0) << ok.error_message.value_or("");
  EXPECT_EQ(ok.num_partitions, 2);
  EXPECT_EQ(PartitionCount("manual"), 2);

  auto other_broker = TopicSpec("elsewhere", -1, -1);
  other_broker.assignments = {{0, {5}}};
  EXPECT_EQ(Create(other_broker).error_code, Code(KafkaError::kInvalidReplicaAssignment));
  auto two_replicas = TopicSpec("two-replicas", -1, -1);
  two_replicas.assignments = {{0, {0, 0}}};
  EXPECT_EQ(Create(two_replicas).error_code, Code(KafkaError::kInvalidReplicaAssignment));
  auto gap = TopicSpec("gap", -1, -1);
  gap.assignments = {{0, {0}}, {INT32_MAX, {0}}};
  EXPECT_EQ(Create(gap).error_code, Code(KafkaError::kInvalidReplicaAssignment));
  auto both = TopicSpec("both", 2, -1);
  both.assignments = {{0, {0}}};
  EXPECT_EQ(Create(both).error_code, Code(KafkaError::kInvalidRequest));
  EXPECT_EQ(PartitionCount("elsewhere"), -Code(KafkaError::kUnknownTopicOrPartition));
}

// ---------------------------------------------------------------- DeleteTopics

TEST_F(AdminTopicsE2ETest, DeleteTopicsByNameAndById) {
  MustCreate("by-name", 1);
  auto created = Create(TopicSpec("by-id", 2, 1));
  ASSERT_EQ(created.error_code, 0);

  DeleteTopicsRequest req;
  req.topics.push_back({.name = "by-name", .topic_id = {}});
  req.topics.push_back({.name = std::nullopt, .topic_id = created.topic_id});
  auto resp = Call<DeleteTopicsResponse>(req, 6);
  ASSERT_EQ(resp.responses.size(), 2u);
  EXPECT_EQ(resp.responses[0].error_code, 0);
  EXPECT_FALSE(resp.responses[0].topic_id.is_zero());
  EXPECT_EQ(resp.responses[1].error_code, 0);
  EXPECT_EQ(resp.responses[1].name, "by-id");
  EXPECT_EQ(PartitionCount("by-name"), -Code(KafkaError::kUnknownTopicOrPartition));
  EXPECT_EQ(PartitionCount("by-id"), -Code(KafkaError::kUnknownTopicOrPartition));
  // The name is free again.
  MustCreate("by-id", 1);
}

TEST_F(AdminTopicsE2ETest, DeleteTopicsErrors) {
  MustCreate("t", 1);
  Uuid unknown_id;
  unknown_id.bytes[15] = 7;
  DeleteTopicsRequest req;
  req.topics.push_back({.name = "missing", .topic_id = {}});
  req.topics.push_back({.name = std::nullopt, .topic_id = unknown_id});
  req.topics.push_back({.name = "t", .topic_id = unknown_id});      // both
  req.topics.push_back({.name = std::nullopt, .topic_id = {}});     // neither
  auto resp = Call<DeleteTopicsResponse>(req, 6);
  ASSERT_EQ(resp.responses.size(), 4u);
  EXPECT_EQ(resp.responses[0].error_code, Code(KafkaError::kUnknownTopicOrPartition));
  EXPECT_EQ(resp.responses[1].error_code, Code(KafkaError::kUnknownTopicId));
  EXPECT_FALSE(resp.responses[1].name.has_value());
  EXPECT_EQ(resp.responses[2].error_code, Code(KafkaError::kInvalidRequest));
  EXPECT_EQ(resp.responses[3].error_code, Code(KafkaError::kInvalidRequest));
  EXPECT_EQ(PartitionCount("t"), 1);  // untouched

  DeleteTopicsRequest dups;
  dups.topics.push_back({.name = "t", .topic_id = {}});
  dups.topics.push_back({.name = "t", .topic_id = {}});
  dups.topics.push_back({.name = std::nullopt, .topic_id = unknown_id});
  dups.topics.push_back({.name = std::nullopt, .topic_id = unknown_id});
  auto d = Call<DeleteTopicsResponse>(dups, 6);
  ASSERT_EQ(d.responses.size(), 2u);
  EXPECT_EQ(d.responses[0].error_code, Code(KafkaError::kInvalidRequest));
  EXPECT_EQ(d.responses[1].error_code, Code(KafkaError::kInvalidRequest));
  EXPECT_EQ(PartitionCount("t"), 1);

  DeleteTopicsRequest old;
  old.topic_names = {"t", "missing", "dup", "dup"};
  auto v1 = Call<DeleteTopicsResponse>(old, 1);
  ASSERT_EQ(v1.responses.size(), 3u);
  EXPECT_EQ(v1.responses[0].error_code, 0);
  EXPECT_EQ(v1.responses[1].error_code, Code(KafkaError::kUnknownTopicOrPartition));
  EXPECT_EQ(v1.responses[2].error_code, Code(KafkaError::kInvalidRequest));
  EXPECT_EQ(PartitionCount("t"), -Code(KafkaError::kUnknownTopicOrPartition));
}

// ------------------------------------------------------------ CreatePartitions

TEST_F(AdminTopicsE2ETest, CreatePartitionsGrowsAndRejectsShrinking) {
  MustCreate("grow", 1);
  auto call = [&](const std::string& name, int32_t count, bool validate_only = false,
                  std::optional<std::vector<int32_t>> replicas = std::nullopt) {
    CreatePartitionsRequest req;
    auto& t = req.topics.emplace_back();
    t.name = name;
    t.count = count;
    if (replicas) {
      t.assignments.emplace();
      for (int32_t b : *replicas) t.assignments->push_back({{b}});
    } else {
      t.assignments = std::nullopt;
    }
    req.validate_only = validate_only;
    auto resp = Call<CreatePartitionsResponse>(req, 3);
    EXPECT_EQ(resp.results.size(), 1u);
    return resp.results.empty() ? CreatePartitionsResponse::CreatePartitionsTopicResult{}
                                : resp.results[0];
  };
  EXPECT_EQ(call("grow", 5, true).error_code, 0);
  EXPECT_EQ(PartitionCount("grow"), 1);
  auto ok = call("grow", 3);
  EXPECT_EQ(ok.error_code, 0);
  EXPECT_FALSE(ok.error_message.has_value());
  EXPECT_EQ(PartitionCount("grow"), 3);
  EXPECT_EQ(call("grow", 3).error_code, Code(KafkaError::kInvalidPartitions));
  EXPECT_EQ(call("grow", 2).error_code, Code(KafkaError::kInvalidPartitions));
  EXPECT_EQ(call("grow", INT32_MIN).error_code, Code(KafkaError::kInvalidPartitions));
  EXPECT_EQ(call("nope", 4).error_code, Code(KafkaError::kUnknownTopicOrPartition));
  EXPECT_EQ(call("grow", 4, false, std::vector<int32_t>{9}).error_code,
            Code(KafkaError::kInvalidReplicaAssignment));
  EXPECT_EQ(call("grow", 5, false, std::vector<int32_t>{0}).error_code,
            Code(KafkaError::kInvalidReplicaAssignment));  // 2 added, 1 assignment
  EXPECT_EQ(call("grow", 4, false, std::vector<int32_t>{0}).error_code, 0);
  EXPECT_EQ(PartitionCount("grow"), 4);

  CreatePartitionsRequest dup;
  dup.topics = {{"grow", 6, std::nullopt}, {"grow", 7, std::nullopt}};
  auto d = Call<CreatePartitionsResponse>(dup, 0);
  ASSERT_EQ(d.results.size(), 1u);
  EXPECT_EQ(d.results[0].error_code, Code(KafkaError::kInvalidRequest));

  RestartBroker();
  EXPECT_EQ(PartitionCount("grow"), 4);
}

// ------------------------------------------------------------- DescribeConfigs

}  // namespace
}  // namespace headrace
