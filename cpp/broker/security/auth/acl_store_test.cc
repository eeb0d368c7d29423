#include "broker/security/auth/acl_store.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "common/fault_injecting_env.h"

namespace headrace::broker::auth {
namespace {

namespace fs = std::filesystem;

class AclStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("hr_acl_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    config_.class_name = kAuthorizerName;
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
  AuthorizerConfig config_;
};

AclBinding Read(std::string topic, std::string principal = "User:ANONYMOUS") {
  return AclBinding{ResourceType::kTopic, std::move(topic), PatternType::kLiteral,
                    std::move(principal), "*", AclOperation::kRead, AclPermission::kAllow};
}

TEST_F(AclStoreTest, CreatedAclsAreEnforcedAndSurviveReopen) {
  {
    Authorizer a(config_);
    auto store = FileAclStore::Open(nullptr, dir_.string(), &a);
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    ASSERT_TRUE((*store)->Create({Read("a"), Read("b"), Read("a")}).ok());
    EXPECT_EQ(a.snapshot()->bindings().size(), 2u);
    EXPECT_TRUE(a.Authorize("User:ANONYMOUS", "h", AclOperation::kRead, ResourceType::kTopic, "a"));
  }
  Authorizer again(config_);
  auto store = FileAclStore::Open(nullptr, dir_.string(), &again);
  ASSERT_TRUE(store.ok());
  EXPECT_EQ(again.snapshot()->bindings().size(), 2u);
  AclBindingFilter f;
  f.resource_name = "a";
  auto removed = (*store)->Delete({f, AclBindingFilter{}});
  ASSERT_TRUE(removed.ok());
  EXPECT_EQ((*removed)[0].size(), 1u);
  EXPECT_EQ((*removed)[1].size(), 2u);  // a filter matching everything
  EXPECT_TRUE(again.snapshot()->empty());
  EXPECT_FALSE(again.Authorize("User:ANONYMOUS", "h", AclOperation::kRead, ResourceType::kTopic, "a"));
}

TEST_F(AclStoreTest, AFailedWriteLeavesTheAclsInForceUnchanged) {
  FaultInjectingEnv env(FileEnv::Default());
  Authorizer a(config_);
  auto store = FileAclStore::Open(&env, dir_.string(), &a);
  ASSERT_TRUE(store.ok());
  ASSERT_TRUE((*store)->Create({Read("a")}).ok());
  for (FileOp op : {FileOp::kWrite, FileOp::kSync, FileOp::kRename}) {
    env.AddRule({op, FileAclStore::kFileName, 0, /*once=*/true, ENOSPC, false, ""});
    EXPECT_EQ((*store)->Create({Read("b")}).code(), StatusCode::kIOError) << FileOpName(op);
    EXPECT_EQ(a.snapshot()->bindings().size(), 1u);
    env.ClearRules();
  }
  Authorizer reopened(config_);
  ASSERT_TRUE(FileAclStore::Open(nullptr, dir_.string(), &reopened).ok());
  EXPECT_EQ(reopened.snapshot()->bindings(), std::vector<AclBinding>{Read("a")});
}

TEST_F(AclStoreTest, RejectsACorruptFile) {
  ASSERT_TRUE(WriteFileAtomically(*FileEnv::Default(), dir_.string(), FileAclStore::kFileName,
                                  "{\"version\":1,\"acls\":[{\"name\":1}]}").ok());
  Authorizer a(config_);
  EXPECT_EQ(FileAclStore::Open(nullptr, dir_.string(), &a).status().code(), StatusCode::kCorruption);
  ASSERT_TRUE(WriteFileAtomically(*FileEnv::Default(), dir_.string(), FileAclStore::kFileName,
                                  "{\"version\":2,\"acls\":[]}").ok());
  EXPECT_EQ(FileAclStore::Open(nullptr, dir_.string(), &a).status().code(), StatusCode::kUnsupported);
}

}  // namespace
}  // namespace headrace::broker::auth
