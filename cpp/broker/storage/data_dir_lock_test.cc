#include "broker/storage/data_dir_lock.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "common/fault_injecting_env.h"
#include "common/file_env.h"

namespace headrace::broker {
namespace {

namespace fs = std::filesystem;

class DataDirLockTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("hr_lock_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name()) / "data";
    fs::remove_all(dir_.parent_path());
  }
  void TearDown() override { fs::remove_all(dir_.parent_path()); }
  fs::path dir_;
};

TEST_F(DataDirLockTest, CreatesTheDirectoryAndWritesThePid) {
  auto lock = DataDirLock::Acquire(dir_.string());
  ASSERT_TRUE(lock.ok()) << lock.status().ToString();
  auto text = ReadWholeFile(*FileEnv::Default(), (dir_ / ".lock").string());
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(text.value(), std::to_string(::getpid()) + "\n");
}

TEST_F(DataDirLockTest, SecondHolderIsRefusedWithDirectoryAndPid) {
  auto first = DataDirLock::Acquire(dir_.string());
  ASSERT_TRUE(first.ok());
  auto second = DataDirLock::Acquire(dir_.string());
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), StatusCode::kIOError);
  const std::string& m = second.status().message();
  EXPECT_NE(m.find("data directory " + dir_.string() + " is in use"), std::string::npos) << m;
  EXPECT_NE(m.find("pid " + std::to_string(::getpid())), std::string::npos) << m;
}

TEST_F(DataDirLockTest, ReleasedLockCanBeTakenAgainAndTheFileStays) {
  { ASSERT_TRUE(DataDirLock::Acquire(dir_.string()).ok()); }
  EXPECT_TRUE(fs::exists(dir_ / ".lock"));
  EXPECT_TRUE(DataDirLock::Acquire(dir_.string()).ok());
}

// The pid goes through the I/O seam: a disk whose fdatasync fails (or whose
// write fails) is refused with the errno text, and the lock is let go.
TEST_F(DataDirLockTest, AFailingDiskIsRefusedAndTheLockLetGo) {
  for (FileOp op : {FileOp::kSync, FileOp::kWrite}) {
    FaultInjectingEnv env(FileEnv::Default());
    FaultRule rule;
    rule.op = op;
    rule.path_substr = "/.lock";
    rule.err = op == FileOp::kSync ? EIO : ENOSPC;
    env.AddRule(rule);
    auto lock = DataDirLock::Acquire(dir_.string(), env);
    ASSERT_FALSE(lock.ok());
    const std::string& m = lock.status().message();
    EXPECT_EQ(m.rfind("data directory " + dir_.string() + " is not writable: ", 0), 0u) << m;
    EXPECT_NE(m.find(op == FileOp::kSync ? "Input/output error" : "No space left"),
              std::string::npos) << m;
    EXPECT_TRUE(DataDirLock::Acquire(dir_.string()).ok());
  }
}

}  // namespace
}  // namespace headrace::broker
