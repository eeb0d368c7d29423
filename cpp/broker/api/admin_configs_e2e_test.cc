// End to end over a socket: DescribeConfigs, AlterConfigs,
// IncrementalAlterConfigs (incl. effects on live partitions and persistence),
// DescribeCluster, DeleteRecords, and malformed admin bodies.
#include "broker/api/admin_e2e_fixture.h"
#include "broker/config/topic_config.h"

namespace headrace {
namespace {

// A suite name of its own: the fixture header is compiled into each file.
class AdminConfigsE2ETest : public AdminE2ETest {};

TEST_F(AdminConfigsE2ETest, DescribeConfigsTopicAllKeysFilterAndSynonyms) {
  MustCreate("cfg", 1);
  auto all = Describe(kTopic, "cfg");
  ASSERT_EQ(all.error_code, 0);
  EXPECT_FALSE(all.error_message.has_value());
  EXPECT_EQ(all.configs.size(), broker::SupportedTopicConfigKeys().size());
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
  EXPECT_EQ(v1.configs.size(), broker::SupportedTopicConfigKeys().size());

  EXPECT_EQ(Describe(kTopic, "missing").error_code, Code(KafkaError::kUnknownTopicOrPartition));
  EXPECT_EQ(Describe(kTopic, "").error_code, Code(KafkaError::kInvalidTopicException));
  EXPECT_EQ(Describe(99, "cfg").error_code, Code(KafkaError::kInvalidRequest));
}

TEST_F(AdminConfigsE2ETest, DescribeConfigsBroker) {
  // Kafka answers the cluster default "" with the dynamic defaults only.
  EXPECT_TRUE(Describe(kBroker, "").configs.empty());
  for (const std::string& name : {std::string("0")}) {
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

TEST_F(AdminConfigsE2ETest, AlterConfigsReplacesAllOverridesAndPersists) {
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

  // A repeated key takes its last value (Kafka's ZooKeeper-mode broker).
  AlterConfigsRequest repeated;
  repeated.resources = {{kTopic, "alt", {{"segment.bytes", "2097152"}, {"segment.bytes", "1048576"}}}};
  auto rr = Call<AlterConfigsResponse>(repeated, 0);
  ASSERT_EQ(rr.responses.size(), 1u);
  ASSERT_EQ(rr.responses[0].error_code, 0) << rr.responses[0].error_message.value_or("");
  EXPECT_EQ(TopicConfigs("alt")["segment.bytes"].value, "1048576");

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

TEST_F(AdminConfigsE2ETest, AlterConfigsTakesEffectOnLivePartitions) {
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

TEST_F(AdminConfigsE2ETest, AlterConfigsBrokerDynamicAndReadOnly) {
  auto r = Alter(kBroker, "0", {{"num.partitions", "3"}});
  EXPECT_EQ(r.error_code, Code(KafkaError::kInvalidRequest));
  EXPECT_NE(r.error_message.value_or("").find("num.partitions"), std::string::npos);
  EXPECT_EQ(Alter(kBroker, "0", {}).error_code, 0);
  EXPECT_EQ(Alter(kBroker, "3", {}).error_code, Code(KafkaError::kInvalidRequest));
  EXPECT_EQ(AlterIncr(kBroker, "", {{"log.retention.ms", 0, "-7"}}).error_code,
            Code(KafkaError::kInvalidRequest));
  EXPECT_EQ(AlterIncr(kBroker, "", {{"no.such.key", 0, "1"}}).error_code,
            Code(KafkaError::kInvalidRequest));

  // A cluster default and a per-broker value; the per-broker one wins.
  ASSERT_EQ(AlterIncr(kBroker, "", {{"log.retention.ms", 0, "5000"}}).error_code, 0);
  ASSERT_EQ(AlterIncr(kBroker, "0", {{"log.segment.bytes", 0, "1048576"}}).error_code, 0);
  auto def = Describe(kBroker, "");
  ASSERT_EQ(def.configs.size(), 1u);
  EXPECT_EQ(def.configs[0].name, "log.retention.ms");
  EXPECT_EQ(def.configs[0].config_source, 3);  // DYNAMIC_DEFAULT_BROKER_CONFIG
  MustCreate("dyn", 1);
  auto cfg = TopicConfigs("dyn");
  EXPECT_EQ(cfg["retention.ms"].value, "5000");
  EXPECT_EQ(cfg["retention.ms"].config_source, 3);
  EXPECT_EQ(cfg["segment.bytes"].value, "1048576");
  EXPECT_EQ(cfg["segment.bytes"].config_source, 2);  // DYNAMIC_BROKER_CONFIG
  // validate_only changes nothing.
  ASSERT_EQ(AlterIncr(kBroker, "", {{"log.retention.ms", 0, "9"}}, true).error_code, 0);
  EXPECT_EQ(TopicConfigs("dyn")["retention.ms"].value, "5000");

  RestartBroker();
  cfg = TopicConfigs("dyn");
  EXPECT_EQ(cfg["retention.ms"].value, "5000");
  EXPECT_EQ(cfg["segment.bytes"].config_source, 2);
  // APPEND on a list key starts from the effective default.
  ASSERT_EQ(AlterIncr(kBroker, "0", {{"log.cleanup.policy", 2, "compact"}}).error_code, 0);
  EXPECT_EQ(TopicConfigs("dyn")["cleanup.policy"].value, "compact,delete");
  EXPECT_EQ(AlterIncr(kBroker, "0", {{"log.segment.bytes", 2, "1"}}).error_code,
            Code(KafkaError::kInvalidRequest));
  // DELETE reverts to the static value.
  ASSERT_EQ(AlterIncr(kBroker, "", {{"log.retention.ms", 1, std::nullopt}}).error_code, 0);
  EXPECT_EQ(TopicConfigs("dyn")["retention.ms"].value, "604800000");

  AlterConfigsRequest dup;
  dup.resources = {{kTopic, "x", {}}, {kTopic, "x", {}}};
  auto d = Call<AlterConfigsResponse>(dup, 0);
  ASSERT_EQ(d.responses.size(), 2u);
  EXPECT_EQ(d.responses[0].error_code, Code(KafkaError::kInvalidRequest));
}

// ---------------------------------------------------- IncrementalAlterConfigs

TEST_F(AdminConfigsE2ETest, IncrementalAlterConfigsOperations) {
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

TEST_F(AdminConfigsE2ETest, DescribeClusterReportsThisBroker) {
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

TEST_F(AdminConfigsE2ETest, DeleteRecordsMovesLogStart) {
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
TEST_F(AdminConfigsE2ETest, MalformedAdminBodiesCloseOnlyThatConnection) {
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
TEST_F(AdminConfigsE2ETest, MutatedAdminRequestsNeverHangOrCrashTheBroker) {
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
