// PageCacheLoader: a few threads that read file ranges into the page cache,
// so that an I/O thread never waits for the disk in sendfile(2): the
// TransmitQueue finds a range not cached, the loop hands it here, and the
// completion (posted back to the loop) resumes the send from the cache.
//
// Threads start on first use (kThreads of them, named hr-net-load-N) and
// take ranges in arrival order. Thread-safety: every method may be called
// from any thread.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "headrace/status.h"
#include "headrace/types.h"

namespace headrace::net {

class PageCacheLoader {
 public:
  static constexpr int kThreads = 2;
  // Completion: OK once the whole range has been read, else the read error
  // (IOError, or Corruption when the file ends inside the range). Runs on a
  // loader thread.
  using Done = std::function<void(Status)>;

  PageCacheLoader() = default;
  ~PageCacheLoader();  // Stop()
  PageCacheLoader(const PageCacheLoader&) = delete;
  PageCacheLoader& operator=(const PageCacheLoader&) = delete;

  // Reads `range` (range.keepalive keeps its file open meanwhile) and then
  // calls done. After Stop() the range is dropped and done never runs.
  void Load(FileSlice range, Done done);
  // Drops queued ranges, waits for the ones being read (their completions
  // run) and joins the threads.
  void Stop();

 private:
  struct Job {
    FileSlice range;
    Done done;
  };
  void Run();
  static Status ReadThrough(const FileSlice& range, std::vector<uint8_t>* scratch);

  std::mutex mu_;
  std::condition_variable cv_;
  // Guarded by mu_.
  bool stopped_ = false;
  std::deque<Job> jobs_;
  std::vector<std::thread> threads_;
};

}  // namespace headrace::net
