// AdminWorker: one thread that runs topic administration (CreateTopics,
// CreatePartitions, DeleteTopics) off the network threads. Those requests
// create, fsync and rename directories and files — milliseconds per
// partition — and on a network thread that time stalls every connection the
// thread serves. Jobs run one at a time in the order they were posted (so a
// delete and a re-create of the same name stay in order) and answer their
// request themselves (Request::Reply is safe from any thread).
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

namespace headrace::broker {

class AdminWorker {
 public:
  AdminWorker();   // starts the thread ("hr-admin")
  ~AdminWorker();  // Stop()
  AdminWorker(const AdminWorker&) = delete;
  AdminWorker& operator=(const AdminWorker&) = delete;

  // Queues `job`. After Stop() the job runs at once on the caller's thread
  // (every posted job runs exactly once).
  void Post(std::function<void()> job);
  // Runs the jobs already queued, then stops the thread. Idempotent.
  void Stop();

 private:
  void Loop();

  std::mutex mu_;  // guards the fields below
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
  bool stopping_ = false;
  std::thread thread_;  // last: started after the members above exist
};

}  // namespace headrace::broker
