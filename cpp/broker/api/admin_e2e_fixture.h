// The AdminE2ETest fixture: a real headrace::Broker on 127.0.0.1:0 in a temp
// dir, spoken to over a TCP socket with requests the codec encodes, plus
// request builders for the admin APIs. Included by admin_*_e2e_test.cc.
#pragma once

#include <arpa/inet.h>
#include <gtest/gtest.h>

#include <cerrno>
#include <climits>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "broker/api/broker_test_fixture.h"
#include "broker/base/kafka_error.h"
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

inline std::string OneRecord(std::string value) {
  RecordInput r;
  r.value = std::move(value);
  return BuildBatch({r});
}

class AdminE2ETest : public testing::BrokerFixture {
 protected:
  AdminE2ETest() { base_settings_ = {{"log.retention.bytes", "1000000"}}; }

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
    req.acks = -1;  // answered once committed (visible to reads)
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
};

}  // namespace
}  // namespace headrace
