// Client quotas below the API: Kafka's rate and throttle arithmetic, entity
// paths, AlterClientQuotas checks, the describe filter, precedence and the
// store's file.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "broker/security/quota/client_quota_store.h"
#include "broker/security/quota/cluster_quotas.h"
#include "broker/security/quota/quota_manager.h"
#include "broker/security/quota/sampled_rate.h"

namespace headrace::broker::quota {
namespace {

namespace fs = std::filesystem;

TEST(SampledRateTest, YoungRateDividesByAtLeastSamplesMinusOneWindows) {
  SampledRate r(11, 1000);
  r.Record(10000, 0);
  // 10 000 bytes over the 10 s floor: 1000/s.
  EXPECT_DOUBLE_EQ(r.Rate(0), 1000.0);
  EXPECT_EQ(r.WindowMs(500), 10500);
}

TEST(SampledRateTest, ThrottleIsTheTimeToComeBackToTheBound) {
  SampledRate r(11, 1000);
  r.Record(20000, 0);  // 2000/s over 10 s against a bound of 1000/s
  // (2000 - 1000) / 1000 * 10 000 ms.
  EXPECT_EQ(r.ThrottleMs(1000, 0), 10000);
  EXPECT_EQ(r.ThrottleMs(5000, 0), 0);
}

TEST(SampledRateTest, SamplesOlderThanAllWindowsExpire) {
  SampledRate r(11, 1000);
  r.Record(50000, 0);
  for (int64_t t = 1000; t <= 10000; t += 1000) r.Record(0, t);
  EXPECT_GT(r.Rate(10999), 0);
  r.Record(0, 11000);  // the first sample is reused
  EXPECT_DOUBLE_EQ(r.Rate(11000), 0.0);
}

TEST(EntityTest, PathsAreKafkasZooKeeperLayoutWithSanitisedNames) {
  ClientQuotaEntity e{EntityPart::Name("alice"), EntityPart::Name("app 1*")};
  EXPECT_EQ(e.Path(), "users/alice/clients/app%201%2A");
  auto back = ClientQuotaEntity::FromPath(e.Path());
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, e);
  ClientQuotaEntity d{EntityPart::Default(), {}};
  EXPECT_EQ(d.Path(), "users/<default>");
  ClientQuotaEntity c{{}, EntityPart::Default()};
  EXPECT_EQ(c.Path(), "clients/<default>");
  auto parsed = ClientQuotaEntity::FromPath("clients/<default>");
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(*parsed, c);
  EXPECT_FALSE(ClientQuotaEntity::FromPath("brokers/1").ok());
  EXPECT_FALSE(ClientQuotaEntity::FromPath("users/a%2").ok());
}

TEST(EntityTest, ValuesAreWrittenAsKafkaDoes) {
  EXPECT_EQ(FormatQuotaValue(kProducerByteRate, 1048576), "1048576");
  EXPECT_EQ(FormatQuotaValue(kRequestPercentage, 50), "50.0");
  EXPECT_EQ(FormatQuotaValue(kRequestPercentage, 12.5), "12.5");
  auto value = ParseQuotaValue("1048576");
  ASSERT_TRUE(value.ok());
  EXPECT_DOUBLE_EQ(*value, 1048576);
  EXPECT_FALSE(ParseQuotaValue("abc").ok());
}

TEST(AlterChecksTest, EntityErrorsAreKafkas) {
  ClientQuotaEntity e;
  EXPECT_EQ(EntityFromWire({}, &e).code, KafkaError::kInvalidRequest);
  EXPECT_EQ(EntityFromWire({{"group", "g"}}, &e).message, "Unhandled client quota entity type: group");
  EXPECT_EQ(EntityFromWire({{"user", "a"}, {"user", "b"}}, &e).code, KafkaError::kInvalidRequest);
  EXPECT_EQ(EntityFromWire({{"user", "a"}, {"ip", "1.2.3.4"}}, &e).code,
            KafkaError::kInvalidRequest);
  EXPECT_TRUE(EntityFromWire({{"user", std::nullopt}, {"client-id", "c"}}, &e).ok());
  EXPECT_EQ(e.user.kind, EntityPart::Kind::kDefault);
  EXPECT_EQ(e.client_id.name, "c");
}

TEST(AlterChecksTest, OpErrorsAreKafkas) {
  QuotaValues v;
  EXPECT_EQ(ApplyOps({{"bogus", 1, false}}, &v).message, "Invalid configuration key bogus");
  EXPECT_EQ(ApplyOps({{kProducerByteRate, 1.5, false}}, &v).message,
            "Configuration producer_byte_rate must be a Long value");
  EXPECT_EQ(ApplyOps({{kConsumerByteRate, -1, false}}, &v).code, KafkaError::kInvalidRequest);
  EXPECT_TRUE(ApplyOps({{kRequestPercentage, 12.5, false}, {kProducerByteRate, 100, false}}, &v).ok());
  EXPECT_DOUBLE_EQ(v[kRequestPercentage], 12.5);
  EXPECT_TRUE(ApplyOps({{kRequestPercentage, 0, true}}, &v).ok());
  EXPECT_EQ(v.count(kRequestPercentage), 0u);
}

QuotaEntry Entry(EntityPart user, EntityPart client, QuotaValues values) {
  return {{std::move(user), std::move(client)}, std::move(values)};
}

TEST(DescribeFilterTest, StrictAndNonStrictMatchAsKafka) {
  QuotaTable t;
  for (QuotaEntry e : {Entry(EntityPart::Name("a"), {}, {{kProducerByteRate, 1}}),
                       Entry(EntityPart::Name("a"), EntityPart::Name("c"), {{kProducerByteRate, 2}}),
                       Entry({}, EntityPart::Default(), {{kConsumerByteRate, 3}})}) {
    t[e.entity.Path()] = e;
  }
  EXPECT_EQ(SelectEntries(t, {}, false).size(), 3u);
  EXPECT_EQ(SelectEntries(t, {}, true).size(), 0u);
  EXPECT_EQ(SelectEntries(t, {{kUserType, 0, "a"}}, false).size(), 2u);
  EXPECT_EQ(SelectEntries(t, {{kUserType, 0, "a"}}, true).size(), 1u);
  EXPECT_EQ(SelectEntries(t, {{kClientIdType, 1, std::nullopt}}, false).size(), 1u);
  EXPECT_EQ(SelectEntries(t, {{kClientIdType, 2, std::nullopt}}, false).size(), 2u);
  EXPECT_EQ(CheckFilter({{kUserType, 0, "a"}, {kUserType, 0, "b"}}).code,
            KafkaError::kInvalidRequest);
  EXPECT_EQ(CheckFilter({{"topic", 0, "a"}}).code, KafkaError::kInvalidRequest);
  EXPECT_EQ(CheckFilter({{kUserType, 0, std::nullopt}}).code, KafkaError::kInvalidRequest);
}

std::unique_ptr<ClientQuotaStore> MemoryStore() { return std::move(ClientQuotaStore::Open("", nullptr)).value(); }

TEST(QuotaManagerTest, PrecedenceIsKafkasPerQuotaKind) {
  auto store = MemoryStore();
  QuotaManager m(QuotaConfig{}, store.get());
  EXPECT_FALSE(m.Enabled(QuotaKind::kProduce));
  ASSERT_TRUE(store->Apply({Entry({}, EntityPart::Default(), {{kProducerByteRate, 8}}),
                            Entry({}, EntityPart::Name("app"), {{kProducerByteRate, 7}}),
                            Entry(EntityPart::Default(), {}, {{kProducerByteRate, 6}}),
                            Entry(EntityPart::Name("alice"), {}, {{kConsumerByteRate, 3}})})
                  .ok());
  EXPECT_TRUE(m.Enabled(QuotaKind::kProduce));
  // users/<default> wins over clients/app and clients/<default>.
  EXPECT_DOUBLE_EQ(m.QuotaFor(QuotaKind::kProduce, "bob", "app"), 6);
  // alice's user entity has no producer_byte_rate: the next level applies.
  EXPECT_DOUBLE_EQ(m.QuotaFor(QuotaKind::kProduce, "alice", "x"), 6);
  EXPECT_DOUBLE_EQ(m.QuotaFor(QuotaKind::kFetch, "alice", "x"), 3);
  EXPECT_DOUBLE_EQ(m.QuotaFor(QuotaKind::kFetch, "bob", "x"), 0);
  ASSERT_TRUE(store->Apply({Entry(EntityPart::Name("bob"), EntityPart::Name("app"),
                                  {{kProducerByteRate, 1}})})
                  .ok());
  EXPECT_DOUBLE_EQ(m.QuotaFor(QuotaKind::kProduce, "bob", "app"), 1);
  ASSERT_TRUE(store->Apply({Entry(EntityPart::Default(), {}, {})}).ok());  // removed
  EXPECT_DOUBLE_EQ(m.QuotaFor(QuotaKind::kProduce, "carol", "app"), 7);
  EXPECT_DOUBLE_EQ(m.QuotaFor(QuotaKind::kProduce, "carol", "other"), 8);
}

TEST(QuotaManagerTest, OverTheQuotaThrottlesAndAUserQuotaIsSharedByItsClients) {
  auto store = MemoryStore();
  QuotaManager m(QuotaConfig{}, store.get());
  ASSERT_TRUE(store->Apply({Entry(EntityPart::Name("alice"), {}, {{kProducerByteRate, 1000}})}).ok());
  EXPECT_EQ(m.Record(QuotaKind::kProduce, "alice", "c1", 5000), 0);   // 500/s over 10 s
  EXPECT_EQ(m.Record(QuotaKind::kProduce, "alice", "c2", 5000), 0);   // 1000/s: at the bound
  int32_t t = m.Record(QuotaKind::kProduce, "alice", "c1", 10000);   // 2000/s
  EXPECT_NEAR(t, 10000, 50);
  EXPECT_EQ(m.Record(QuotaKind::kProduce, "bob", "c1", 1e9), 0);  // no quota for bob
  EXPECT_EQ(m.throttled_responses(QuotaKind::kProduce), 1u);
  EXPECT_EQ(m.MaxValueInWindow(QuotaKind::kProduce, "alice", "x"), 10000);
}

TEST(QuotaManagerTest, RequestTimeThrottleIsCappedAtOneWindow) {
  auto store = MemoryStore();
  QuotaManager m(QuotaConfig{}, store.get());
  ASSERT_TRUE(store->Apply({Entry({}, EntityPart::Name("c"), {{kRequestPercentage, 1}})}).ok());
  EXPECT_EQ(m.RequestThrottle("ANONYMOUS", "c"), 0);
  m.RecordRequestNanos("ANONYMOUS", "c", 5'000'000'000);  // 5 s of a thread
  EXPECT_EQ(m.RequestThrottle("ANONYMOUS", "c"), 1000);
}

TEST(QuotaManagerTest, IdleClientsAndTheirRatesAreForgotten) {
  auto store = MemoryStore();
  QuotaManager m(QuotaConfig{}, store.get(), /*idle_expiry_ms=*/100, /*sweep_interval_ms=*/20);
  ASSERT_TRUE(store->Apply({Entry({}, EntityPart::Default(), {{kProducerByteRate, 1000}})}).ok());
  for (int i = 0; i < 50; ++i) {
    EXPECT_EQ(m.Record(QuotaKind::kProduce, "ANONYMOUS", "once-" + std::to_string(i), 10), 0);
  }
  EXPECT_EQ(m.tracked_clients(), 50u);
  EXPECT_EQ(m.tracked_rates(), 50u);  // clients/<default>: a rate per client id
  // A client that keeps coming stays, with its rate and its throttle.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(300);
  while (std::chrono::steady_clock::now() < deadline) {
    (void)m.Record(QuotaKind::kProduce, "ANONYMOUS", "steady", 1);
    usleep(10'000);
  }
  EXPECT_EQ(m.tracked_clients(), 1u);
  EXPECT_EQ(m.tracked_rates(), 1u);
  EXPECT_GT(m.Record(QuotaKind::kProduce, "ANONYMOUS", "steady", 20'000), 0);  // still counted
}

TEST(QuotaStoreTest, TheFileSurvivesAReopen) {
  fs::path dir = fs::temp_directory_path() / ("hr_quota_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  {
    auto s = ClientQuotaStore::Open(dir.string(), nullptr);
    ASSERT_TRUE(s.ok());
    ASSERT_TRUE((*s)->Apply({Entry(EntityPart::Name("a/b"), EntityPart::Default(),
                                   {{kProducerByteRate, 1048576}, {kRequestPercentage, 25.5}})})
                    .ok());
  }
  auto s = ClientQuotaStore::Open(dir.string(), nullptr);
  ASSERT_TRUE(s.ok());
  auto table = (*s)->table();
  ASSERT_EQ(table->size(), 1u);
  EXPECT_EQ(table->begin()->first, "users/a%2Fb/clients/<default>");
  EXPECT_DOUBLE_EQ(table->begin()->second.values.at(kRequestPercentage), 25.5);
  fs::remove_all(dir);
}

TEST(QuotaStoreTest, ClusterStateReplacesTheTable) {
  auto store = MemoryStore();
  ApplyClusterQuotas(R"({"client_quotas": {"clients/app": {"consumer_byte_rate": "2048"}}})",
                     store.get());
  ASSERT_EQ(store->table()->size(), 1u);
  const uint64_t v = store->version();
  ApplyClusterQuotas(R"({"client_quotas": {"clients/app": {"consumer_byte_rate": "2048"}}})",
                     store.get());
  EXPECT_EQ(store->version(), v);  // unchanged: not republished
  ApplyClusterQuotas(R"({"topics": []})", store.get());  // no member: left as is
  EXPECT_EQ(store->table()->size(), 1u);
  ApplyClusterQuotas(R"({"client_quotas": {}})", store.get());
  EXPECT_TRUE(store->table()->empty());
}

}  // namespace
}  // namespace headrace::broker::quota
