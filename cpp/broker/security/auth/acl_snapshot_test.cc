#include "broker/security/auth/acl_snapshot.h"

#include <gtest/gtest.h>

#include "broker/security/auth/authorizer.h"

namespace headrace::broker::auth {
namespace {

using Op = AclOperation;
using RT = ResourceType;

AclBinding Acl(RT type, std::string name, Op op, AclPermission perm = AclPermission::kAllow,
               std::string principal = "User:alice", PatternType p = PatternType::kLiteral,
               std::string host = "*") {
  return AclBinding{type, std::move(name), p, std::move(principal), std::move(host), op, perm};
}

bool Can(const AclSnapshot& s, Op op, std::string_view topic, std::string_view who = "User:alice",
         std::string_view host = "10.0.0.1", bool allow_if_none = false) {
  return s.Authorize(who, host, op, RT::kTopic, topic, allow_if_none);
}

TEST(AclSnapshotTest, LiteralAllowGrantsOnlyThatOperationAndItsImplications) {
  AclSnapshot s({Acl(RT::kTopic, "orders", Op::kWrite)});
  EXPECT_TRUE(Can(s, Op::kWrite, "orders"));
  EXPECT_TRUE(Can(s, Op::kDescribe, "orders"));  // WRITE implies DESCRIBE
  EXPECT_FALSE(Can(s, Op::kRead, "orders"));
  EXPECT_FALSE(Can(s, Op::kWrite, "orders2"));
  EXPECT_FALSE(Can(s, Op::kWrite, "orders", "User:bob"));
}

TEST(AclSnapshotTest, ImpliedOperationsAreKafkas) {
  for (Op granted : {Op::kRead, Op::kWrite, Op::kDelete, Op::kAlter, Op::kDescribe}) {
    AclSnapshot s({Acl(RT::kTopic, "t", granted)});
    EXPECT_TRUE(Can(s, Op::kDescribe, "t")) << OperationName(granted);
  }
  AclSnapshot create({Acl(RT::kTopic, "t", Op::kCreate)});
  EXPECT_FALSE(Can(create, Op::kDescribe, "t"));
  AclSnapshot alter_configs({Acl(RT::kTopic, "t", Op::kAlterConfigs)});
  EXPECT_TRUE(Can(alter_configs, Op::kDescribeConfigs, "t"));
  EXPECT_FALSE(Can(alter_configs, Op::kDescribe, "t"));
  AclSnapshot all({Acl(RT::kTopic, "t", Op::kAll)});
  for (Op op : {Op::kRead, Op::kWrite, Op::kCreate, Op::kDelete, Op::kAlter, Op::kDescribe,
                Op::kDescribeConfigs, Op::kAlterConfigs}) {
    EXPECT_TRUE(Can(all, op, "t")) << OperationName(op);
  }
}

TEST(AclSnapshotTest, DenyWinsAndIsNotImplied) {
  AclSnapshot s({Acl(RT::kTopic, "t", Op::kAll), Acl(RT::kTopic, "t", Op::kWrite, AclPermission::kDeny)});
  EXPECT_FALSE(Can(s, Op::kWrite, "t"));
  EXPECT_TRUE(Can(s, Op::kRead, "t"));
  EXPECT_TRUE(Can(s, Op::kDescribe, "t"));  // a WRITE deny does not deny DESCRIBE
  AclSnapshot deny_all({Acl(RT::kTopic, "t", Op::kRead),
                        Acl(RT::kTopic, "*", Op::kAll, AclPermission::kDeny, "User:*")});
  EXPECT_FALSE(Can(deny_all, Op::kRead, "t"));
}

TEST(AclSnapshotTest, WildcardsAndPrefixesApply) {
  AclSnapshot s({Acl(RT::kTopic, "*", Op::kRead, AclPermission::kAllow, "User:*"),
                 Acl(RT::kTopic, "pay", Op::kWrite, AclPermission::kAllow, "User:alice",
                     PatternType::kPrefixed),
                 Acl(RT::kTopic, "payroll", Op::kWrite, AclPermission::kDeny, "User:alice",
                     PatternType::kPrefixed)});
  EXPECT_TRUE(Can(s, Op::kRead, "anything", "User:bob"));
  EXPECT_TRUE(Can(s, Op::kWrite, "payments"));
  EXPECT_TRUE(Can(s, Op::kWrite, "pay"));
  EXPECT_FALSE(Can(s, Op::kWrite, "pa"));
  EXPECT_FALSE(Can(s, Op::kWrite, "payroll-2026"));  // the longer deny prefix
  EXPECT_FALSE(Can(s, Op::kWrite, "payments", "User:bob"));
}

TEST(AclSnapshotTest, HostsMatchExactlyOrByWildcard) {
  AclSnapshot s({Acl(RT::kTopic, "t", Op::kRead, AclPermission::kAllow, "User:alice",
                     PatternType::kLiteral, "10.0.0.1")});
  EXPECT_TRUE(Can(s, Op::kRead, "t", "User:alice", "10.0.0.1"));
  EXPECT_FALSE(Can(s, Op::kRead, "t", "User:alice", "10.0.0.2"));
}

TEST(AclSnapshotTest, NoAclFoundFollowsAllowEveryone) {
  AclSnapshot s({Acl(RT::kTopic, "guarded", Op::kRead, AclPermission::kAllow, "User:bob")});
  EXPECT_FALSE(Can(s, Op::kRead, "open", "User:alice", "h", false));
  EXPECT_TRUE(Can(s, Op::kRead, "open", "User:alice", "h", true));
  // An ACL for someone else exists: the resource is no longer open.
  EXPECT_FALSE(Can(s, Op::kRead, "guarded", "User:alice", "h", true));
  // Other resource types are independent.
  EXPECT_TRUE(s.Authorize("User:alice", "h", Op::kRead, RT::kGroup, "guarded", true));
}

TEST(AclSnapshotTest, AuthorizeAnyNeedsAnUncoveredAllow) {
  AclSnapshot none;
  EXPECT_FALSE(none.AuthorizeAny("User:alice", "h", Op::kWrite, RT::kTopic, false));
  EXPECT_TRUE(none.AuthorizeAny("User:alice", "h", Op::kWrite, RT::kTopic, true));
  AclSnapshot s({Acl(RT::kTopic, "t", Op::kWrite)});
  EXPECT_TRUE(s.AuthorizeAny("User:alice", "h", Op::kWrite, RT::kTopic, false));
  EXPECT_FALSE(s.AuthorizeAny("User:bob", "h", Op::kWrite, RT::kTopic, true));
  AclSnapshot covered({Acl(RT::kTopic, "t", Op::kWrite),
                       Acl(RT::kTopic, "*", Op::kWrite, AclPermission::kDeny)});
  EXPECT_FALSE(covered.AuthorizeAny("User:alice", "h", Op::kWrite, RT::kTopic, false));
}

TEST(AuthorizerTest, DisabledAllowsEverythingSuperUsersBypass) {
  Authorizer off{AuthorizerConfig{}};
  EXPECT_TRUE(off.Authorize("User:x", "h", Op::kWrite, RT::kTopic, "t"));
  AuthorizerConfig c;
  c.class_name = kKafkaAclAuthorizer;
  ASSERT_TRUE(c.Set("super.users", "User:admin; User:broker").ok());
  Authorizer on{c};
  EXPECT_FALSE(on.Authorize("User:x", "h", Op::kWrite, RT::kTopic, "t"));
  EXPECT_TRUE(on.Authorize("User:broker", "h", Op::kClusterAction, RT::kCluster, "kafka-cluster"));
  on.Publish(std::make_shared<const AclSnapshot>(
      std::vector<AclBinding>{Acl(RT::kTopic, "t", Op::kWrite, AclPermission::kAllow, "User:x")}));
  EXPECT_TRUE(on.Authorize("User:x", "h", Op::kWrite, RT::kTopic, "t"));
}

TEST(AuthorizerConfigTest, RejectsUnknownClassesAndBadPrincipals) {
  AuthorizerConfig c;
  EXPECT_TRUE(c.Set("authorizer.class.name", kKafkaStandardAuthorizer).ok());
  EXPECT_TRUE(c.Set("authorizer.class.name", kAuthorizerName).ok());
  EXPECT_TRUE(c.Set("authorizer.class.name", "").ok());
  EXPECT_FALSE(c.enabled());
  EXPECT_EQ(c.Set("authorizer.class.name", "com.example.Mine").code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(c.Set("super.users", "admin").code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(c.Set("allow.everyone.if.no.acl.found", "yes").code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace headrace::broker::auth
