// LogWriters (log_writers.h): a pool per log directory, each partition a
// strand (its tasks in posting order, never two at once), a held partition
// not holding the others back, Drain.
#include "broker/storage/log_writers.h"

#include <gtest/gtest.h>
#include <pthread.h>

#include <atomic>
#include <future>
#include <mutex>
#include <string>
#include <vector>

#include "log/testing.h"

namespace headrace::broker {
namespace {

using headrace::testing::TempDir;

std::unique_ptr<LogDirs> TwoDirs(const TempDir& a, const TempDir& b) {
  LogDirs::Options o;
  o.paths = {a.path(), b.path()};
  o.lock = false;
  auto dirs = LogDirs::Open(std::move(o));
  EXPECT_TRUE(dirs.ok()) << dirs.status().ToString();
  return std::move(*dirs);
}

std::string ThreadName() {
  char name[16] = {};
  pthread_getname_np(pthread_self(), name, sizeof name);
  return name;
}

// The name of the thread a task posted for (strand, dir) runs on.
std::string RunsOn(LogWriters& w, const void* strand, const std::string& dir) {
  std::promise<std::string> name;
  w.Post(strand, dir, [&name] { name.set_value(ThreadName()); });
  return name.get_future().get();
}

TEST(LogWriters, EachDirectoryHasItsOwnThreads) {
  TempDir a, b;
  auto dirs = TwoDirs(a, b);
  LogWriters writers(*dirs, 2);
  int p0 = 0, p1 = 0;
  EXPECT_EQ(RunsOn(writers, &p0, a.path() + "/t-0").rfind("hr-write-0-", 0), 0u);
  EXPECT_EQ(RunsOn(writers, &p1, b.path() + "/t-0").rfind("hr-write-1-", 0), 0u);
  // A path in no directory (a test's log) goes to the first.
  EXPECT_EQ(RunsOn(writers, &p0, "/elsewhere/t-0").rfind("hr-write-0-", 0), 0u);
}

TEST(LogWriters, APartitionsTasksRunInOrderOneAtATime) {
  TempDir a, b;
  auto dirs = TwoDirs(a, b);
  LogWriters writers(*dirs, 4);
  int partition = 0;
  std::mutex mu;
  std::vector<int> ran;
  std::atomic<int> inside{0};
  std::atomic<bool> overlapped{false};
  for (int i = 0; i < 500; ++i) {
    writers.Post(&partition, a.path() + "/t-0", [&, i] {
      if (inside.fetch_add(1) != 0) overlapped = true;
      {
        std::lock_guard<std::mutex> l(mu);
        ran.push_back(i);
      }
      inside.fetch_sub(1);
    });
  }
  writers.Drain();
  EXPECT_FALSE(overlapped.load());
  std::lock_guard<std::mutex> l(mu);
  ASSERT_EQ(ran.size(), 500u);
  for (int i = 0; i < 500; ++i) EXPECT_EQ(ran[i], i);
}

TEST(LogWriters, AHeldPartitionDoesNotHoldBackTheOthersOfItsDirectory) {
  TempDir a, b;
  auto dirs = TwoDirs(a, b);
  LogWriters writers(*dirs, 2);
  int held = 0, other = 0;
  std::atomic<bool> release{false};
  std::atomic<bool> after_held{false};
  writers.Post(&held, a.path() + "/held-0", [&] {
    while (!release.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  });
  writers.Post(&held, a.path() + "/held-0", [&] { after_held = true; });
  // Same directory, another partition: served by the directory's other thread.
  EXPECT_EQ(RunsOn(writers, &other, a.path() + "/other-0").rfind("hr-write-0-", 0), 0u);
  EXPECT_FALSE(after_held.load());  // the held partition's next task waits its turn
  release = true;
  writers.Drain();
  EXPECT_TRUE(after_held.load());
}

}  // namespace
}  // namespace headrace::broker
