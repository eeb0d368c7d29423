#include "common/fault_injecting_env.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

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

TEST_F(FaultInjectingEnvTest, UncachedWritesAreFaultedLikeOthers) {
  std::string path = dir_ + "/u.txt";
  auto fd = env_.Open(path, O_RDWR | O_CREAT);
  ASSERT_TRUE(fd.ok());
  env_.AddRule({FileOp::kWrite, "", 0, /*once=*/true, ENOSPC, /*short_write=*/true, ""});
  EXPECT_EQ(env_.WriteAt(*fd, path, "0123456789", 10, 0, WriteCache::kDrop).sys_errno(), ENOSPC);
  EXPECT_EQ(ReadWholeFile(env_, path).value(), "01234");
  EXPECT_TRUE(env_.WriteAt(*fd, path, "0123456789", 10, 0, WriteCache::kDrop).ok());
  EXPECT_EQ(ReadWholeFile(env_, path).value(), "0123456789");
  env_.Close(*fd);
}

// Pages of `fd`'s first `len` bytes in the page cache (mincore).
int64_t ResidentPages(int fd, int64_t len) {
  void* map = ::mmap(nullptr, len, PROT_READ, MAP_SHARED, fd, 0);
  if (map == MAP_FAILED) return -1;
  const int64_t page = ::sysconf(_SC_PAGESIZE);
  std::vector<unsigned char> vec((len + page - 1) / page);
  int64_t resident = -1;
  if (::mincore(map, len, vec.data()) == 0) {
    resident = 0;
    for (unsigned char v : vec) resident += v & 1;
  }
  ::munmap(map, len);
  return resident;
}

// Writes 4 MiB with `cache`, fdatasyncs, and returns the file's resident
// pages once they stop falling (uncached pages leave when their writeback
// completes), or -1.
int64_t ResidentAfterSyncedWrite(FileEnv& env, const std::string& path, WriteCache cache) {
  constexpr int64_t kLen = 4 << 20;
  auto fd = env.Open(path, O_RDWR | O_CREAT | O_TRUNC);
  if (!fd.ok()) return -1;
  std::string chunk(1 << 20, 'x');
  for (int64_t at = 0; at < kLen; at += static_cast<int64_t>(chunk.size())) {
    if (!env.WriteAt(*fd, path, chunk.data(), static_cast<int64_t>(chunk.size()), at, cache).ok())
      return -1;
  }
  if (!env.Sync(*fd, path, /*data_only=*/true).ok()) return -1;
  int64_t resident = ResidentPages(*fd, kLen);
  for (int i = 0; i < 100 && resident > 0 && cache == WriteCache::kDrop; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    resident = ResidentPages(*fd, kLen);
  }
  std::string back(kLen, '\0');
  auto got = env.ReadAt(*fd, path, back.data(), kLen, 0);
  env.Close(*fd);
  if (!got.ok() || *got != kLen || back != std::string(kLen, 'x')) return -1;
  return resident;
}

// Whether the kernel and the file system of `dir` take RWF_DONTCACHE.
bool DontCacheSupported(const std::string& dir) {
  std::string path = dir + "/probe";
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT, 0644);
  char c = 'x';
  struct iovec iov = {&c, 1};
  bool ok = fd >= 0 && ::pwritev2(fd, &iov, 1, 0, 0x80 /* RWF_DONTCACHE */) == 1;
  if (fd >= 0) ::close(fd);
  ::unlink(path.c_str());
  return ok;
}

TEST_F(FaultInjectingEnvTest, UncachedWritesStoreTheBytesAndLeaveThePageCacheWhereSupported) {
  const int64_t pages = (4 << 20) / ::sysconf(_SC_PAGESIZE);
  EXPECT_EQ(ResidentAfterSyncedWrite(env_, dir_ + "/kept", WriteCache::kKeep), pages);
  const int64_t dropped = ResidentAfterSyncedWrite(env_, dir_ + "/dropped", WriteCache::kDrop);
  if (!DontCacheSupported(dir_)) {
    EXPECT_EQ(dropped, pages);  // a plain write instead
    GTEST_SKIP() << "no RWF_DONTCACHE on " << dir_ << ": the fallback wrote the bytes";
  }
  EXPECT_EQ(dropped, 0);
}

TEST_F(FaultInjectingEnvTest, UncachedWritesFallBackToPlainWritesOnTmpfs) {
  if (!std::filesystem::is_directory("/dev/shm")) GTEST_SKIP() << "no /dev/shm";
  std::string tmpl = "/dev/shm/headrace-env-XXXXXX";
  std::string shm = mkdtemp(tmpl.data());
  const int64_t pages = (4 << 20) / ::sysconf(_SC_PAGESIZE);
  // tmpfs has no writeback: the pages stay, whatever the flag.
  EXPECT_EQ(ResidentAfterSyncedWrite(env_, shm + "/f", WriteCache::kDrop), pages);
  std::filesystem::remove_all(shm);
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
