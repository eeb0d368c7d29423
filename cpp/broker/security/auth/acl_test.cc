#include "broker/security/auth/acl.h"

#include <gtest/gtest.h>

namespace headrace::broker::auth {
namespace {

AclBinding Topic(std::string name, PatternType p = PatternType::kLiteral) {
  return AclBinding{ResourceType::kTopic, std::move(name), p, "User:alice", "*",
                    AclOperation::kRead, AclPermission::kAllow};
}

TEST(AclTest, NamesRoundTripAndParseLoosely) {
  EXPECT_EQ(ParseResourceType("transactional_id"), ResourceType::kTransactionalId);
  EXPECT_EQ(ParseResourceType("Topic"), ResourceType::kTopic);
  EXPECT_EQ(ParseOperation("DESCRIBE_CONFIGS"), AclOperation::kDescribeConfigs);
  EXPECT_EQ(ParseOperation("IdempotentWrite"), AclOperation::kIdempotentWrite);
  EXPECT_EQ(ParsePermission("deny"), AclPermission::kDeny);
  EXPECT_EQ(ParsePatternType("prefixed"), PatternType::kPrefixed);
  EXPECT_EQ(ParseOperation("fly"), AclOperation::kUnknown);
  EXPECT_STREQ(ResourceTypeName(ResourceType::kTransactionalId), "TransactionalId");
  EXPECT_EQ(OperationFromWire(99), AclOperation::kUnknown);
  EXPECT_EQ(OperationFromWire(12), AclOperation::kIdempotentWrite);
}

TEST(AclTest, ValidationRejectsWhatKafkaRejects) {
  EXPECT_TRUE(ValidateBinding(Topic("t")).ok());
  AclBinding b = Topic("t");
  b.principal = "alice";
  EXPECT_EQ(ValidateBinding(b).code(), StatusCode::kInvalidArgument);
  b = Topic("t");
  b.resource_type = ResourceType::kCluster;
  EXPECT_EQ(ValidateBinding(b).code(), StatusCode::kInvalidArgument);  // must be kafka-cluster
  b.resource_name = "kafka-cluster";
  EXPECT_TRUE(ValidateBinding(b).ok());
  b = Topic("t", PatternType::kMatch);
  EXPECT_FALSE(ValidateBinding(b).ok());
  b = Topic("t");
  b.operation = AclOperation::kAny;
  EXPECT_FALSE(ValidateBinding(b).ok());
  b = Topic("");
  EXPECT_FALSE(ValidateBinding(b).ok());
  AclBindingFilter f;
  EXPECT_TRUE(ValidateFilter(f).ok());
  f.pattern_type = PatternType::kUnknown;
  EXPECT_FALSE(ValidateFilter(f).ok());
}

TEST(AclTest, FiltersMatchAsKafkaResourcePatternFilter) {
  AclBindingFilter any;
  EXPECT_TRUE(any.Matches(Topic("orders")));
  AclBindingFilter match;
  match.resource_type = ResourceType::kTopic;
  match.resource_name = "orders-eu";
  match.pattern_type = PatternType::kMatch;
  EXPECT_TRUE(match.Matches(Topic("orders-eu")));
  EXPECT_TRUE(match.Matches(Topic("*")));
  EXPECT_TRUE(match.Matches(Topic("orders", PatternType::kPrefixed)));
  EXPECT_FALSE(match.Matches(Topic("orders")));  // literal, not equal
  EXPECT_FALSE(match.Matches(Topic("payments", PatternType::kPrefixed)));
  AclBindingFilter literal;
  literal.resource_name = "orders";
  literal.pattern_type = PatternType::kLiteral;
  EXPECT_TRUE(literal.Matches(Topic("orders")));
  EXPECT_FALSE(literal.Matches(Topic("orders", PatternType::kPrefixed)));
  AclBindingFilter by_principal;
  by_principal.principal = "User:bob";
  EXPECT_FALSE(by_principal.Matches(Topic("orders")));
}

TEST(AclTest, JsonRoundTrip) {
  std::vector<AclBinding> in = {Topic("a"), Topic("b", PatternType::kPrefixed)};
  in[1].permission = AclPermission::kDeny;
  in[1].operation = AclOperation::kAll;
  auto out = BindingsFromJson(BindingsToJson(in));
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(*out, in);
  auto bad = json::Parse(R"([{"resource_type":"Topic"}])");
  EXPECT_FALSE(BindingsFromJson(*bad).ok());
}

}  // namespace
}  // namespace headrace::broker::auth
