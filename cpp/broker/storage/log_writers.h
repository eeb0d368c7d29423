// LogWriters: the threads that run Produce appends, so that no network
// thread waits for the disk (DESIGN.md "No disk on a network thread"). Each
// log directory has its own pool (`headrace.log.writer.threads` threads,
// "hr-write-<dir>-<n>"); within it each partition is a strand: its tasks run
// one at a time, in the order they were posted, on whichever of the
// directory's threads is free. A pwrite into a page the kernel's writeback
// holds, a segment roll, an index store or a file open then delays that
// partition's producers only (and, once every thread of the directory is
// held, that directory's); the network thread goes on serving its other
// connections. Completions go back to the request's network thread
// (Request::RunOnLoop), acks=all through the purgatory as before.
//
// Order: a network thread posts a connection's appends in the order the
// requests arrived, so appends to one partition keep that order (what
// idempotent producers' sequence numbers need). A partition moved to another
// directory is a new Partition object (a new strand); appends queued for the
// old one fail retriably (NOT_LEADER_OR_FOLLOWER), as during a move before.
//
// Cost: per append, a hand-off to a writer thread and one back to the
// network thread: two wake-ups, which at small requests (20 k produce
// requests/s of one 1 KiB record) cost more broker CPU per byte than the
// append itself (docs/performance.md "Appends off the network threads").
//
// Threading: Post and Drain from any thread but a writer's.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

#include "broker/storage/log_dirs.h"

namespace headrace::broker {

class LogWriters {
 public:
  // Starts `threads_per_dir` threads for each of `dirs`' directories; 0
  // starts none: Post then runs the task at once on the caller's thread
  // (appends on the network threads, as before the writers existed).
  LogWriters(const LogDirs& dirs, int threads_per_dir);
  ~LogWriters();  // stops the threads; tasks not started are dropped
  LogWriters(const LogWriters&) = delete;
  LogWriters& operator=(const LogWriters&) = delete;

  // Runs `task` on a writer of the directory `partition_dir` lies in (the
  // first directory's for a path in none, e.g. a test's log), after every
  // task posted earlier with the same `strand` (the partition).
  void Post(const void* strand, std::string_view partition_dir, std::function<void()> task);
  // Whether Post hands tasks to writer threads (threads_per_dir > 0).
  bool enabled() const { return !pools_.empty(); }
  // Returns once every task posted before the call has run (shutdown:
  // before the partitions close).
  void Drain();

 private:
  struct Strand {
    const void* key = nullptr;
    std::deque<std::function<void()>> tasks;
    bool scheduled = false;  // in `ready` or being run: never on two threads
  };
  struct Pool {
    std::mutex mu;  // guards everything below but `threads`
    std::condition_variable work;
    std::condition_variable idle;
    std::unordered_map<const void*, std::unique_ptr<Strand>> strands;  // with tasks only
    std::deque<Strand*> ready;
    int running = 0;
    bool stop = false;
    std::vector<std::thread> threads;
  };
  static void Run(Pool* pool, std::string name);

  const LogDirs& dirs_;
  std::vector<std::unique_ptr<Pool>> pools_;  // one per directory, in LogDirs order
};

}  // namespace headrace::broker
