// Removes directories (deleted partitions) on a background thread, so that
// DeleteTopics answers without waiting for the files to go.
//
// Directories still queued at Stop() are left on disk; TopicRegistry::Open
// finds them by their "-delete" suffix at the next start and queues them
// again.
#pragma once

#include <condition_variable>
#include <deque>
#include <mutex>
#include <string>
#include <thread>

namespace headrace::broker {

class DirDeleter {
 public:
  DirDeleter();
  ~DirDeleter();  // Stop()
  DirDeleter(const DirDeleter&) = delete;
  DirDeleter& operator=(const DirDeleter&) = delete;

  void Enqueue(std::string path);
  // Blocks until the queue is empty (tests).
  void Drain();
  void Stop();
  int removed() const;  // directories removed so far

 private:
  void Loop();

  mutable std::mutex mu_;  // guards the fields below
  std::condition_variable cv_;
  std::deque<std::string> queue_;
  bool busy_ = false;
  bool stopping_ = false;
  int removed_ = 0;
  std::mutex join_mu_;
  std::thread thread_;
};

}  // namespace headrace::broker
