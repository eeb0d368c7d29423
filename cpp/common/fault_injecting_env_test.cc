#include "common/fault_injecting_env.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <thread>

namespace headrace {
namespace {

class FaultInjectingEnvTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (std::filesystem::temp_directory_path() / "headrace-env-XXXXXX").string();
    dir_ = mkdtemp(tmpl.data());
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string dir_;
  FaultInjectingEnv env_{FileEnv::Default()};
};

TEST(FaultRuleParse, ReadsEveryPart) {
  auto rules = ParseFaultRules("fsync:path=.log:after=3:errno=EIO,write:errno=ENOSPC:once:short");
  ASSERT_TRUE(rules.ok()) << rules.status().ToString();
  ASSERT_EQ(rules->size(), 2u);
  EXPECT_EQ((*rules)[0].op, FileOp::kSync);
  EXPECT_EQ((*rules)[0].path_substr, ".log");
  EXPECT_EQ((*rules)[0].after, 3);
  EXPECT_EQ((*rules)[0].err, EIO);
  EXPECT_FALSE((*rules)[0].once);
  EXPECT_EQ((*rules)[1].op, FileOp::kWrite);
  EXPECT_EQ((*rules)[1].err, ENOSPC);
  EXPECT_TRUE((*rules)[1].once);
  EXPECT_TRUE((*rules)[1].short_write);
  EXPECT_EQ(FaultRuleToString((*rules)[0]), "fsync:path=.log:after=3:errno=EIO");
  EXPECT_EQ(ParseFaultRules("fdatasync:errno=EDQUOT")->at(0).err, EDQUOT);
}

TEST(FaultRuleParse, RejectsNonsense) {
  EXPECT_EQ(ParseFaultRules("").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseFaultRules("explode").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseFaultRules("fsync:after=x").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseFaultRules("fsync:short").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseFaultRules("fsync:errno=EWHAT").status().code(), StatusCode::kInvalidArgument);
}

TEST_F(FaultInjectingEnvTest, FailsFromTheNthMatchingCallOnByPath) {
  env_.AddRule({FileOp::kSync, "b.txt", /*after=*/1, /*once=*/false, ENOSPC, false, ""});
  auto a = env_.Open(dir_ + "/a.txt", O_RDWR | O_CREAT);
  auto b = env_.Open(dir_ + "/b.txt", O_RDWR | O_CREAT);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_TRUE(env_.Sync(*a, dir_ + "/a.txt", true).ok());  // other path: not counted
  EXPECT_TRUE(env_.Sync(*b, dir_ + "/b.txt", true).ok());  // first match let through
  for (int i = 0; i < 2; ++i) {
    Status st = env_.Sync(*b, dir_ + "/b.txt", true);
    EXPECT_EQ(st.code(), StatusCode::kIOError);
    EXPECT_EQ(st.sys_errno(), ENOSPC);
    EXPECT_NE(st.message().find("b.txt"), std::string::npos) << st.message();
    EXPECT_NE(st.message().find("ENOSPC"), std::string::npos) << st.message();
  }
  EXPECT_EQ(env_.injected(), 2);
  env_.ClearRules();
  EXPECT_TRUE(env_.Sync(*b, dir_ + "/b.txt", true).ok());
  env_.Close(*a);
  env_.Close(*b);
}

TEST_F(FaultInjectingEnvTest, OnceFailsOneCallAndShortWriteLeavesHalf) {
  std::string path = dir_ + "/c.txt";
  auto fd = env_.Open(path, O_RDWR | O_CREAT);
  ASSERT_TRUE(fd.ok());
  env_.AddRule({FileOp::kWrite, "", 0, /*once=*/true, EDQUOT, /*short_write=*/true, ""});
  Status st = env_.WriteAt(*fd, path, "0123456789", 10, 0);
  EXPECT_EQ(st.sys_errno(), EDQUOT);
  EXPECT_EQ(ReadWholeFile(env_, path).value(), "01234");
  EXPECT_TRUE(env_.WriteAt(*fd, path, "0123456789", 10, 0).ok());
  EXPECT_EQ(ReadWholeFile(env_, path).value(), "0123456789");
  env_.Close(*fd);
}

TEST_F(FaultInjectingEnvTest, HoldMakesSelectedCallsWaitWhileTheFileExists) {
  auto rules = ParseFaultRules("fsync:path=held:hold=" + dir_ + "/hold");
  ASSERT_TRUE(rules.ok()) << rules.status().ToString();
  EXPECT_EQ(FaultRuleToString(rules->at(0)), "fsync:path=held:after=0:errno=EIO:hold=" + dir_ + "/hold");
  env_.AddRule(rules->at(0));
  auto f = env_.Open(dir_ + "/held", O_RDWR | O_CREAT);
  ASSERT_TRUE(f.ok());
  EXPECT_TRUE(env_.Sync(*f, dir_ + "/held", true).ok());  // no hold file: goes through
  std::FILE* h = std::fopen((dir_ + "/hold").c_str(), "w");
  ASSERT_NE(h, nullptr);
  std::fclose(h);
  std::atomic<bool> done{false};
  std::thread syncer([&] {
    EXPECT_TRUE(env_.Sync(*f, dir_ + "/held", true).ok());
    done = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(done.load());  // held
  std::filesystem::remove(dir_ + "/hold");
  syncer.join();
  EXPECT_TRUE(done.load());
  env_.Close(*f);
}

TEST_F(FaultInjectingEnvTest, WriteFileAtomicallyKeepsTheOldContentsWhenTheRenameFails) {
  ASSERT_TRUE(WriteFileAtomically(env_, dir_, "m.json", "old").ok());
  env_.AddRule({FileOp::kRename, "m.json", 0, false, EIO, false, ""});
  EXPECT_EQ(WriteFileAtomically(env_, dir_, "m.json", "new").code(), StatusCode::kIOError);
  EXPECT_EQ(ReadWholeFile(env_, dir_ + "/m.json").value(), "old");
  EXPECT_EQ(ReadWholeFile(env_, dir_ + "/nope").status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace headrace
