// End to end: a real headrace::Broker on 127.0.0.1:0 in a temp dir, spoken
// to over a TCP socket with requests the codec encodes. Covers the admin
// APIs: CreateTopics, DeleteTopics, CreatePartitions, DescribeConfigs,
// AlterConfigs, IncrementalAlterConfigs, DescribeCluster, DeleteRecords,
// including their error paths, persistence across a restart, and that
// config changes reach the live partitions.
#include <arpa/inet.h>
#include <gtest/gtest.h>

#include <cerrno>
#include <climits>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "broker/api/kafka_test_client.h"
#include "broker/kafka_error.h"
#include "headrace/broker.h"
#include "headrace/record_batch.h"
#include "log/testing.h"

namespace headrace {
namespace {

using broker::Code;
using broker::KafkaError;
using namespace protocol;  // message structs
using testing::KafkaTestClient;
using testing::TempDir;
using ConfigRow = DescribeConfigsResponse::DescribeConfigsResourceResult;

constexpr int8_t kTopic = 2;
constexpr int8_t kBroker = 4;
constexpr int8_t kSourceDynamicTopic = 1;
constexpr int8_t kSourceStaticBroker = 4;
constexpr int8_t kSourceDefault = 5;

std::string OneRecord(std::string value) {
  RecordInput r;
  r.value = std::move(value);
  return BuildBatch({r});
}

class AdminE2ETest : public ::testing::Test {
 protected:
  void SetUp() override { StartBroker(); }
  void TearDown() override {
    if (broker_) {
      EXPECT_TRUE(broker_->Stop().ok());
    }
  }

  void StartBroker() {
    auto created = Broker::Create({{"log.dirs", dir_.path()},
                                   {"listeners", "PLAINTEXT://127.0.0.1:0"},
                                   {"log.retention.bytes", "1000000"}});
    ASSERT_TRUE(created.ok()) << created.status().ToString();
    broker_ = std::move(*created);
    Status st = broker_->Start();
    ASSERT_TRUE(st.ok()) << st.ToString();
    std::string addr = broker_->listen_address();
    port_ = std::stoi(addr.substr(addr.rfind(':') + 1));
    client_ = std::make_unique<KafkaTestClient>(port_);
    ASSERT_TRUE(client_->connected());
  }
  void RestartBroker() {
    client_.reset();
    ASSERT_TRUE(broker_->Stop().ok());
    broker_.reset();
    StartBroker();
  }

  template <typename Resp, typename Req>
  Resp Call(const Req& req, int16_t version) {
    std::string error;
    auto resp = client_->Call<Resp>(req, version, &error);
    EXPECT_TRUE(resp.has_value()) << error;
    return resp.value_or(Resp{});
  }

  static CreateTopicsRequest::CreatableTopic TopicSpec(
      const std::string& name, int32_t partitions, int16_t rf,
      std::map<std::string, std::optional<std::string>> configs = {}) {
    CreateTopicsRequest::CreatableTopic t;
    t.name = name;
    t.num_partitions = partitions;
    t.replication_factor = rf;
    for (auto& [k, v] : configs) t.configs.push_back({k, v});
    return t;
  }
  CreateTopicsResponse::CreatableTopicResult Create(const CreateTopicsRequest::CreatableTopic& t,
                                                    bool validate_only = false,
                                                    int16_t version = 7) {
    CreateTopicsRequest req;
    req.topics.push_back(t);
    req.validate_only = validate_only;
    auto resp = Call<CreateTopicsResponse>(req, version);
    if (resp.topics.size() != 1) {
      ADD_FAILURE() << "create topics response has " << resp.topics.size() << " topics";
      return {};
    }
    return resp.topics[0];
  }
  void MustCreate(const std::string& name, int32_t partitions) {
    auto r = Create(TopicSpec(name, partitions, 1));
    ASSERT_EQ(r.error_code, 0) << r.error_message.value_or("");
  }

  // Partition count per Metadata (no auto-creation), or -error code.
  int PartitionCount(const std::string& topic) {
    MetadataRequest req;
    req.topics->push_back({.topic_id = {}, .name = topic});
    req.allow_auto_topic_creation = false;
    auto md = Call<MetadataResponse>(req, 12);
    if (md.topics.size() != 1) return INT_MIN;
    if (md.topics[0].error_code != 0) return -md.topics[0].error_code;
    return static_cast<int>(md.topics[0].partitions.size());
  }

  DescribeConfigsResponse::DescribeConfigsResult Describe(
      int8_t type, const std::string& name,
      std::optional<std::vector<std::string>> keys = std::nullopt, bool synonyms = false,
      int16_t version = 4) {
    DescribeConfigsRequest req;
    req.resources.push_back({type, name, std::move(keys)});
    req.include_synonyms = synonyms;
    req.include_documentation = true;
    auto resp = Call<DescribeConfigsResponse>(req, version);
    if (resp.results.size() != 1) {
      ADD_FAILURE() << "describe configs response has " << resp.results.size() << " results";
      return {};
    }
    return resp.results[0];
  }
  std::map<std::string, ConfigRow> TopicConfigs(const std::string& topic) {
    std::map<std::string, ConfigRow> out;
    auto r = Describe(kTopic, topic);
    EXPECT_EQ(r.error_code, 0) << r.error_message.value_or("");
    for (auto& c : r.configs) out[c.name] = c;
    return out;
  }

  AlterConfigsResponse::AlterConfigsResourceResponse Alter(
      int8_t type, const std::string& name, std::map<std::string, std::optional<std::string>> cfg,
      bool validate_only = false, int16_t version = 2) {
    AlterConfigsRequest req;
    auto& r = req.resources.emplace_back();
    r.resource_type = type;
    r.resource_name = name;
    for (auto& [k, v] : cfg) r.configs.push_back({k, v});
    req.validate_only = validate_only;
    auto resp = Call<AlterConfigsResponse>(req, version);
    if (resp.responses.size() != 1) {
      ADD_FAILURE() << "alter configs response has the wrong shape";
      return {};
    }
    return resp.responses[0];
  }

  struct Op {
    std::string key;
    int8_t op;
    std::optional<std::string> value;
  };
  IncrementalAlterConfigsResponse::AlterConfigsResourceResponse AlterIncr(
      int8_t type, const std::string& name, const std::vector<Op>& ops, bool validate_only = false,
      int16_t version = 1) {
    IncrementalAlterConfigsRequest req;
    auto& r = req.resources.emplace_back();
    r.resource_type = type;
    r.resource_name = name;
    for (const Op& o : ops) r.configs.push_back({o.key, o.op, o.value});
    req.validate_only = validate_only;
    auto resp = Call<IncrementalAlterConfigsResponse>(req, version);
    if (resp.responses.size() != 1) {
      ADD_FAILURE() << "incremental alter configs response has the wrong shape";
      return {};
    }
    return resp.responses[0];
  }

  ProduceResponse::PartitionProduceResponse Produce(const std::string& topic, std::string batch) {
    ProduceRequest req;
    req.acks = 1;
    req.timeout_ms = 5000;
    auto& t = req.topic_data.emplace_back();
    t.name = topic;
    t.partition_data.push_back({0, Records::FromBytes(std::move(batch))});
    auto resp = Call<ProduceResponse>(req, 9);
    if (resp.responses.size() != 1 || resp.responses[0].partition_responses.size() != 1) {
      ADD_FAILURE() << "produce response has the wrong shape";
      return {};
    }
    return resp.responses[0].partition_responses[0];
  }

  DeleteRecordsResponse::DeleteRecordsPartitionResult DeleteRecords(const std::string& topic,
                                                                    int32_t partition,
                                                                    int64_t offset,
                                                                    int16_t version = 2) {
    DeleteRecordsRequest req;
    req.timeout_ms = 5000;
    auto& t = req.topics.emplace_back();
    t.name = topic;
    t.partitions.push_back({partition, offset});
    auto resp = Call<DeleteRecordsResponse>(req, version);
    if (resp.topics.size() != 1 || resp.topics[0].partitions.size() != 1) {
      ADD_FAILURE() << "delete records response has the wrong shape";
      return {};
    }
    return resp.topics[0].partitions[0];
  }

  int64_t EarliestOffset(const std::string& topic) {
    ListOffsetsRequest req;
    req.replica_id = -1;
    auto& t = req.topics.emplace_back();
    t.name = topic;
    t.partitions.push_back({.partition_index = 0, .timestamp = -2});
    auto resp = Call<ListOffsetsResponse>(req, 7);
    if (resp.topics.size() != 1 || resp.topics[0].partitions.size() != 1) return INT64_MIN;
    return resp.topics[0].partitions[0].offset;
  }

  TempDir dir_;
  std::unique_ptr<Broker> broker_;
  std::unique_ptr<KafkaTestClient> client_;
  int port_ = 0;
};

TEST_F(AdminE2ETest, ApiVersionsAdvertisesEveryAdminApi) {
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

TEST_F(AdminE2ETest, CreateTopicsReturnsIdPartitionsAndConfigs) {
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

TEST_F(AdminE2ETest, CreateTopicsDefaultsAndOlderVersions) {
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

TEST_F(AdminE2ETest, CreateTopicsPerTopicErrors) {
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

TEST_F(AdminE2ETest, CreateTopicsDuplicateNamesAreInvalidRequest) {
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

TEST_F(AdminE2ETest, CreateTopicsValidateOnlyCreatesNothing) {
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

TEST_F(AdminE2ETest, CreateTopicsManualAssignments) {
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

TEST_F(AdminE2ETest, DeleteTopicsByNameAndById) {
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

TEST_F(AdminE2ETest, DeleteTopicsErrors) {
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

TEST_F(AdminE2ETest, CreatePartitionsGrowsAndRejectsShrinking) {
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

TEST_F(AdminE2ETest, DescribeConfigsTopicAllKeysFilterAndSynonyms) {
  MustCreate("cfg", 1);
  auto all = Describe(kTopic, "cfg");
  ASSERT_EQ(all.error_code, 0);
  EXPECT_FALSE(all.error_message.has_value());
  EXPECT_EQ(all.configs.size(), 12u);
  for (const auto& c : all.configs) {
    EXPECT_TRUE(c.value.has_value()) << c.name;
    EXPECT_FALSE(c.read_only);
    EXPECT_TRUE(c.documentation.has_value()) << c.name;
    EXPECT_NE(c.config_type, 0) << c.name;
    EXPECT_TRUE(c.synonyms.empty());
  }

  auto some = Describe(kTopic, "cfg", std::vector<std::string>{"retention.bytes", "bogus"}, true);
  ASSERT_EQ(some.configs.size(), 1u);
  const auto& rb = some.configs[0];
  EXPECT_EQ(rb.name, "retention.bytes");
  EXPECT_EQ(rb.value, "1000000");
  EXPECT_EQ(rb.config_source, kSourceStaticBroker);
  EXPECT_EQ(rb.config_type, 5);  // LONG
  ASSERT_EQ(rb.synonyms.size(), 2u);
  EXPECT_EQ(rb.synonyms[0].name, "log.retention.bytes");
  EXPECT_EQ(rb.synonyms[0].source, kSourceStaticBroker);
  EXPECT_EQ(rb.synonyms[1].value, "-1");
  EXPECT_EQ(rb.synonyms[1].source, kSourceDefault);

  auto v1 = Describe(kTopic, "cfg", std::vector<std::string>{}, false, 1);
  EXPECT_EQ(v1.configs.size(), 12u);

  EXPECT_EQ(Describe(kTopic, "missing").error_code, Code(KafkaError::kUnknownTopicOrPartition));
  EXPECT_EQ(Describe(kTopic, "").error_code, Code(KafkaError::kInvalidTopicException));
  EXPECT_EQ(Describe(99, "cfg").error_code, Code(KafkaError::kInvalidRequest));
}

TEST_F(AdminE2ETest, DescribeConfigsBroker) {
  for (const std::string& name : {std::string("0"), std::string("")}) {
    auto r = Describe(kBroker, name, std::nullopt, true);
    ASSERT_EQ(r.error_code, 0) << r.error_message.value_or("");
    std::map<std::string, ConfigRow> rows;
    for (const auto& c : r.configs) rows[c.name] = c;
    EXPECT_EQ(rows["num.partitions"].value, "1");
    EXPECT_EQ(rows["num.partitions"].config_source, kSourceDefault);
    EXPECT_TRUE(rows["num.partitions"].read_only);
    EXPECT_EQ(rows["log.retention.bytes"].value, "1000000");
    EXPECT_EQ(rows["log.retention.bytes"].config_source, kSourceStaticBroker);
    EXPECT_EQ(rows["log.dirs"].value, dir_.path());
    EXPECT_EQ(rows["advertised.listeners"].value,
              "PLAINTEXT://127.0.0.1:" + std::to_string(port_));
    EXPECT_EQ(rows["log.retention.ms"].value, "604800000");
  }
  EXPECT_EQ(Describe(kBroker, "7").error_code, Code(KafkaError::kInvalidRequest));
  EXPECT_EQ(Describe(kBroker, "abc").error_code, Code(KafkaError::kInvalidRequest));
  auto one = Describe(kBroker, "0", std::vector<std::string>{"node.id"});
  ASSERT_EQ(one.configs.size(), 1u);
  EXPECT_EQ(one.configs[0].value, "0");
}

// ---------------------------------------------------------------- AlterConfigs

TEST_F(AdminE2ETest, AlterConfigsReplacesAllOverridesAndPersists) {
  MustCreate("alt", 1);
  auto r = Alter(kTopic, "alt", {{"retention.ms", "1000"}, {"cleanup.policy", "compact,delete"}});
  ASSERT_EQ(r.error_code, 0) << r.error_message.value_or("");
  EXPECT_FALSE(r.error_message.has_value());
  auto cfg = TopicConfigs("alt");
  EXPECT_EQ(cfg["retention.ms"].value, "1000");
  EXPECT_EQ(cfg["retention.ms"].config_source, kSourceDynamicTopic);
  EXPECT_EQ(cfg["cleanup.policy"].value, "compact,delete");

  // Full replacement: retention.ms and cleanup.policy revert to defaults.
  ASSERT_EQ(Alter(kTopic, "alt", {{"segment.bytes", "1048576"}}).error_code, 0);
  cfg = TopicConfigs("alt");
  EXPECT_EQ(cfg["retention.ms"].value, "604800000");
  EXPECT_EQ(cfg["retention.ms"].config_source, kSourceDefault);
  EXPECT_EQ(cfg["cleanup.policy"].value, "delete");
  EXPECT_EQ(cfg["segment.bytes"].value, "1048576");

  // validate_only and errors change nothing.
  EXPECT_EQ(Alter(kTopic, "alt", {{"retention.ms", "5"}}, true).error_code, 0);
  auto bad = Alter(kTopic, "alt", {{"retention.ms", "-9"}});
  EXPECT_EQ(bad.error_code, Code(KafkaError::kInvalidConfig));
  EXPECT_NE(bad.error_message.value_or("").find("retention.ms"), std::string::npos);
  EXPECT_EQ(Alter(kTopic, "alt", {{"foo.bar", "1"}}).error_code, Code(KafkaError::kInvalidConfig));
  EXPECT_EQ(Alter(kTopic, "alt", {{"retention.ms", std::nullopt}}).error_code,
            Code(KafkaError::kInvalidRequest));
  EXPECT_EQ(Alter(kTopic, "missing", {}).error_code, Code(KafkaError::kUnknownTopicOrPartition));
  EXPECT_EQ(Alter(17, "alt", {}).error_code, Code(KafkaError::kInvalidRequest));
  EXPECT_EQ(TopicConfigs("alt")["retention.ms"].value, "604800000");

  RestartBroker();
  cfg = TopicConfigs("alt");
  EXPECT_EQ(cfg["segment.bytes"].value, "1048576");
  EXPECT_EQ(cfg["segment.bytes"].config_source, kSourceDynamicTopic);
}

TEST_F(AdminE2ETest, AlterConfigsTakesEffectOnLivePartitions) {
  MustCreate("live", 1);
  std::string batch = OneRecord(std::string(500, 'v'));
  ASSERT_EQ(Produce("live", batch).error_code, 0);
  ASSERT_EQ(Alter(kTopic, "live", {{"max.message.bytes", "200"}}).error_code, 0);
  EXPECT_EQ(Produce("live", batch).error_code, Code(KafkaError::kMessageTooLarge));
  RestartBroker();
  EXPECT_EQ(Produce("live", batch).error_code, Code(KafkaError::kMessageTooLarge));
  ASSERT_EQ(Alter(kTopic, "live", {}).error_code, 0);  // back to the default
  EXPECT_EQ(Produce("live", batch).error_code, 0);
}

TEST_F(AdminE2ETest, AlterConfigsBrokerIsNotDynamic) {
  auto r = Alter(kBroker, "0", {{"num.partitions", "3"}});
  EXPECT_EQ(r.error_code, Code(KafkaError::kInvalidRequest));
  EXPECT_NE(r.error_message.value_or("").find("num.partitions"), std::string::npos);
  EXPECT_EQ(Alter(kBroker, "0", {}).error_code, 0);
  EXPECT_EQ(Alter(kBroker, "3", {}).error_code, Code(KafkaError::kInvalidRequest));
  EXPECT_EQ(AlterIncr(kBroker, "", {{"log.retention.ms", 0, "1"}}).error_code,
            Code(KafkaError::kInvalidRequest));

  AlterConfigsRequest dup;
  dup.resources = {{kTopic, "x", {}}, {kTopic, "x", {}}};
  auto d = Call<AlterConfigsResponse>(dup, 0);
  ASSERT_EQ(d.responses.size(), 2u);
  EXPECT_EQ(d.responses[0].error_code, Code(KafkaError::kInvalidRequest));
}

// ---------------------------------------------------- IncrementalAlterConfigs

TEST_F(AdminE2ETest, IncrementalAlterConfigsOperations) {
  MustCreate("inc", 1);
  ASSERT_EQ(AlterIncr(kTopic, "inc", {{"retention.ms", 0, "5000"}, {"segment.ms", 0, "60000"}})
                .error_code,
            0);
  auto cfg = TopicConfigs("inc");
  EXPECT_EQ(cfg["retention.ms"].value, "5000");
  EXPECT_EQ(cfg["segment.ms"].value, "60000");

  ASSERT_EQ(AlterIncr(kTopic, "inc", {{"cleanup.policy", 2, "compact"}}).error_code, 0);
  EXPECT_EQ(TopicConfigs("inc")["cleanup.policy"].value, "compact,delete");
  ASSERT_EQ(AlterIncr(kTopic, "inc", {{"cleanup.policy", 3, "delete"}}).error_code, 0);
  EXPECT_EQ(TopicConfigs("inc")["cleanup.policy"].value, "compact");
  ASSERT_EQ(AlterIncr(kTopic, "inc", {{"retention.ms", 1, std::nullopt}}).error_code, 0);
  cfg = TopicConfigs("inc");
  EXPECT_EQ(cfg["retention.ms"].config_source, kSourceDefault);
  EXPECT_EQ(cfg["segment.ms"].value, "60000");  // untouched by the DELETE

  EXPECT_EQ(AlterIncr(kTopic, "inc", {{"retention.ms", 2, "1"}}).error_code,
            Code(KafkaError::kInvalidRequest));  // APPEND on a non-list key
  EXPECT_EQ(AlterIncr(kTopic, "inc", {{"retention.ms", 9, "1"}}).error_code,
            Code(KafkaError::kInvalidRequest));  // unknown operation
  EXPECT_EQ(AlterIncr(kTopic, "inc", {{"retention.ms", -1, "1"}}).error_code,
            Code(KafkaError::kInvalidRequest));
  EXPECT_EQ(AlterIncr(kTopic, "inc", {{"retention.ms", 0, std::nullopt}}).error_code,
            Code(KafkaError::kInvalidRequest));
  EXPECT_EQ(AlterIncr(kTopic, "inc", {{"retention.ms", 0, "1"}, {"retention.ms", 0, "2"}})
                .error_code,
            Code(KafkaError::kInvalidRequest));
  EXPECT_EQ(AlterIncr(kTopic, "inc", {{"retention.ms", 0, "x"}}).error_code,
            Code(KafkaError::kInvalidConfig));
  EXPECT_EQ(AlterIncr(kTopic, "inc", {{"nope", 0, "1"}}).error_code,
            Code(KafkaError::kInvalidConfig));
  EXPECT_EQ(AlterIncr(kTopic, "inc", {{"cleanup.policy", 3, "compact"}}).error_code,
            Code(KafkaError::kInvalidConfig));  // would leave an empty list
  EXPECT_EQ(AlterIncr(kTopic, "gone", {{"retention.ms", 0, "1"}}).error_code,
            Code(KafkaError::kUnknownTopicOrPartition));
  EXPECT_EQ(AlterIncr(kTopic, "inc", {{"retention.ms", 0, "7"}}, true, 0).error_code, 0);
  EXPECT_EQ(TopicConfigs("inc")["retention.ms"].config_source, kSourceDefault);

  RestartBroker();
  EXPECT_EQ(TopicConfigs("inc")["cleanup.policy"].value, "compact");
}

// ------------------------------------------------------------- DescribeCluster

TEST_F(AdminE2ETest, DescribeClusterReportsThisBroker) {
  for (int16_t version : {0, 1}) {
    DescribeClusterRequest req;
    req.include_cluster_authorized_operations = version == 1;
    auto resp = Call<DescribeClusterResponse>(req, version);
    EXPECT_EQ(resp.error_code, 0);
    EXPECT_EQ(resp.cluster_id, broker_->cluster_id());
    EXPECT_EQ(resp.controller_id, 0);
    ASSERT_EQ(resp.brokers.size(), 1u);
    EXPECT_EQ(resp.brokers[0].broker_id, 0);
    EXPECT_EQ(resp.brokers[0].host, "127.0.0.1");
    EXPECT_EQ(resp.brokers[0].port, port_);
    EXPECT_FALSE(resp.brokers[0].rack.has_value());
    if (version == 1) {
      EXPECT_EQ(resp.endpoint_type, 1);
      EXPECT_NE(resp.cluster_authorized_operations, INT32_MIN);
    } else {
      EXPECT_EQ(resp.cluster_authorized_operations, INT32_MIN);
    }
  }
  DescribeClusterRequest controllers;
  controllers.endpoint_type = 2;
  auto c = Call<DescribeClusterResponse>(controllers, 1);
  EXPECT_EQ(c.error_code, Code(KafkaError::kMismatchedEndpointType));
  EXPECT_TRUE(c.brokers.empty());
  DescribeClusterRequest weird;
  weird.endpoint_type = 42;
  EXPECT_EQ(Call<DescribeClusterResponse>(weird, 1).error_code,
            Code(KafkaError::kUnsupportedEndpointType));
}

// --------------------------------------------------------------- DeleteRecords

TEST_F(AdminE2ETest, DeleteRecordsMovesLogStart) {
  MustCreate("dr", 2);
  for (int i = 0; i < 5; ++i) {
    ASSERT_EQ(Produce("dr", OneRecord("v")).error_code, 0);
  }
  auto r = DeleteRecords("dr", 0, 2);
  EXPECT_EQ(r.error_code, 0);
  EXPECT_EQ(r.low_watermark, 2);
  EXPECT_EQ(EarliestOffset("dr"), 2);
  EXPECT_EQ(DeleteRecords("dr", 0, 1, 0).low_watermark, 2);  // never backwards

  auto beyond = DeleteRecords("dr", 0, 6);
  EXPECT_EQ(beyond.error_code, Code(KafkaError::kOffsetOutOfRange));
  EXPECT_EQ(beyond.low_watermark, -1);
  EXPECT_EQ(DeleteRecords("dr", 0, -7).error_code, Code(KafkaError::kOffsetOutOfRange));
  EXPECT_EQ(DeleteRecords("dr", 9, 0).error_code, Code(KafkaError::kUnknownTopicOrPartition));
  EXPECT_EQ(DeleteRecords("dr", -1, 0).error_code, Code(KafkaError::kUnknownTopicOrPartition));
  EXPECT_EQ(DeleteRecords("nope", 0, 0).error_code, Code(KafkaError::kUnknownTopicOrPartition));
  EXPECT_EQ(DeleteRecords("dr", 1, -1).low_watermark, 0);  // empty partition: HW 0

  auto all = DeleteRecords("dr", 0, -1, 1);
  EXPECT_EQ(all.error_code, 0);
  EXPECT_EQ(all.low_watermark, 5);
  RestartBroker();
  EXPECT_EQ(EarliestOffset("dr"), 5);
}

// ------------------------------------------------------------- robustness

// A truncated admin request body closes the connection (as Kafka does); the
// broker keeps serving others.
TEST_F(AdminE2ETest, MalformedAdminBodiesCloseOnlyThatConnection) {
  const std::map<int16_t, int16_t> min_versions = {{19, 2}, {20, 1}, {21, 0}, {32, 1},
                                                   {33, 0}, {37, 0}, {44, 0}, {60, 0}};
  for (const auto& [key, version] : min_versions) {
    OutputBuffer out;
    Writer w(out);
    RequestHeader h;
    h.request_api_key = key;
    h.request_api_version = version;
    h.correlation_id = 1;
    h.client_id = "junk";
    h.Encode(w, RequestHeaderVersion(key, version));
    w.Int32(INT32_MAX);  // an absurd array length, then nothing
    std::string body = out.Flatten();
    uint32_t size = htonl(static_cast<uint32_t>(body.size()));
    std::string frame(reinterpret_cast<const char*>(&size), 4);
    frame += body;
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port_));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    ASSERT_EQ(::send(fd, frame.data(), frame.size(), MSG_NOSIGNAL),
              static_cast<ssize_t>(frame.size()));
    timeval tv{10, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    char b;
    EXPECT_LE(::recv(fd, &b, 1, 0), 0) << "api key " << key;
    ::close(fd);
  }
  auto resp = Call<DescribeClusterResponse>(DescribeClusterRequest{}, 0);
  EXPECT_EQ(resp.error_code, 0);
}

// Sends one raw frame on a fresh connection and waits for the broker to
// answer it or close the connection. False when it does neither in time.
bool AnsweredOrClosed(int port, const std::string& request) {
  uint32_t size = htonl(static_cast<uint32_t>(request.size()));
  std::string frame(reinterpret_cast<const char*>(&size), 4);
  frame += request;
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  timeval tv{10, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
            ::send(fd, frame.data(), frame.size(), MSG_NOSIGNAL) ==
                static_cast<ssize_t>(frame.size());
  char b;
  ssize_t n = ok ? ::recv(fd, &b, 1, 0) : -1;
  bool timed_out = n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
  ::close(fd);
  return ok && !timed_out;
}

template <typename Req>
std::string Encoded(const Req& req, int16_t version, size_t* header_size) {
  OutputBuffer header_only;
  Writer hw(header_only);
  RequestHeader h;
  h.request_api_key = Req::kApiKey;
  h.request_api_version = version;
  h.correlation_id = 9;
  h.client_id = "fuzz";
  h.Encode(hw, RequestHeaderVersion(Req::kApiKey, version));
  *header_size = header_only.Flatten().size();
  OutputBuffer out;
  EncodeRequest(out, 9, "fuzz", version, req);
  return out.Flatten();
}

// Valid requests with a few random body bytes changed: every one is answered
// or its connection closed, and the broker keeps serving. (CreateTopics and
// CreatePartitions are left out: a flipped count could create ~100000
// partitions; their extreme values are covered by the tests above.)
TEST_F(AdminE2ETest, MutatedAdminRequestsNeverHangOrCrashTheBroker) {
  MustCreate("fz", 2);
  ASSERT_EQ(Produce("fz", OneRecord("v")).error_code, 0);
  std::vector<std::pair<std::string, size_t>> seeds;
  size_t hs = 0;
  {
    DeleteTopicsRequest r;
    r.topics.push_back({.name = "fz-missing", .topic_id = {}});
    r.topic_names = {"fz-missing"};
    for (int16_t v : {1, 5, 6}) seeds.emplace_back(Encoded(r, v, &hs), hs);
  }
  {
    DescribeConfigsRequest r;
    r.resources.push_back({kTopic, "fz", std::vector<std::string>{"retention.ms"}});
    r.resources.push_back({kBroker, "0", std::nullopt});
    r.include_synonyms = true;
    for (int16_t v : {1, 3, 4}) seeds.emplace_back(Encoded(r, v, &hs), hs);
  }
  {
    AlterConfigsRequest r;
    r.resources.push_back({kTopic, "fz", {{"retention.ms", "1000"}}});
    for (int16_t v : {0, 2}) seeds.emplace_back(Encoded(r, v, &hs), hs);
  }
  {
    IncrementalAlterConfigsRequest r;
    r.resources.push_back({kTopic, "fz", {{"cleanup.policy", 2, "compact"}}});
    for (int16_t v : {0, 1}) seeds.emplace_back(Encoded(r, v, &hs), hs);
  }
  {
    DeleteRecordsRequest r;
    r.topics.push_back({"fz", {{0, 0}, {1, -1}}});
    for (int16_t v : {0, 2}) seeds.emplace_back(Encoded(r, v, &hs), hs);
  }
  {
    DescribeClusterRequest r;
    for (int16_t v : {0, 1}) seeds.emplace_back(Encoded(r, v, &hs), hs);
  }
  uint64_t rng = 0x9e3779b97f4a7c15ull;
  auto next = [&] {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
  };
  for (const auto& [bytes, header_size] : seeds) {
    ASSERT_TRUE(AnsweredOrClosed(port_, bytes));
    for (int i = 0; i < 40; ++i) {
      std::string m = bytes;
      if (m.size() <= header_size) break;
      int flips = 1 + static_cast<int>(next() % 3);
      for (int f = 0; f < flips; ++f) {
        size_t pos = header_size + next() % (m.size() - header_size);
        m[pos] = static_cast<char>(next());
      }
      if (next() % 4 == 0) m.resize(header_size + next() % (m.size() - header_size + 1));
      ASSERT_TRUE(AnsweredOrClosed(port_, m)) << "request hung, seed size " << bytes.size();
    }
  }
  auto resp = Call<DescribeClusterResponse>(DescribeClusterRequest{}, 0);
  EXPECT_EQ(resp.error_code, 0);
}

}  // namespace
}  // namespace headrace
