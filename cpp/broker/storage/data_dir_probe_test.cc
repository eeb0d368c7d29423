#include "broker/storage/data_dir_probe.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <thread>

#include "common/fault_injecting_env.h"

namespace headrace::broker {
namespace {

FaultRule Fail(FileOp op, bool once, int err) {
  FaultRule r;
  r.op = op;
  r.path_substr = ".headrace-ready-probe";
  r.once = once;
  r.err = err;
  return r;
}

class DataDirProbeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/headrace_probe_XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { ::rmdir(dir_.c_str()); }
  std::string dir_;
  FaultInjectingEnv env_{FileEnv::Default()};
};

TEST_F(DataDirProbeTest, WritableDirectoryPassesAndKeepsNoFile) {
  ASSERT_TRUE(ProbeDataDir(env_, dir_).ok());
  EXPECT_EQ(::access((dir_ + "/.headrace-ready-probe").c_str(), F_OK), -1);  // removed
}

TEST_F(DataDirProbeTest, FailedWriteOrFsyncIsAnIOErrorNamingTheFile) {
  env_.AddRule(Fail(FileOp::kSync, true, EIO));
  Status st = ProbeDataDir(env_, dir_);
  EXPECT_EQ(st.code(), StatusCode::kIOError);
  EXPECT_NE(st.message().find(".headrace-ready-probe"), std::string::npos) << st.ToString();
  env_.AddRule(Fail(FileOp::kWrite, true, ENOSPC));
  EXPECT_FALSE(ProbeDataDir(env_, dir_).ok());
  EXPECT_TRUE(ProbeDataDir(env_, dir_).ok());  // both rules fired once
}

TEST_F(DataDirProbeTest, CachedAnswerIsKeptForItsMaxAge) {
  CachedDataDirProbe probe(std::chrono::milliseconds(200));
  EXPECT_EQ(probe.Problem(env_, {dir_}), "");
  env_.AddRule(Fail(FileOp::kSync, false, EIO));
  EXPECT_EQ(probe.Problem(env_, {dir_}), "");  // cached
  std::this_thread::sleep_for(std::chrono::milliseconds(250));
  const std::string problem = probe.Problem(env_, {dir_});
  EXPECT_EQ(problem.rfind("data directory " + dir_ + " is not writable: ", 0), 0u) << problem;
  env_.ClearRules();
  std::this_thread::sleep_for(std::chrono::milliseconds(250));
  EXPECT_EQ(probe.Problem(env_, {dir_}), "");
}

}  // namespace
}  // namespace headrace::broker
