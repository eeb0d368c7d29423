// SerialExecutor: a LoopExecutor with one thread of its own. Work that must
// not run on the thread that makes it ready — a purgatory waiter whose
// callback takes a lock the waking thread may hold (the transaction
// coordinator appends to its log under its mutex, and that append can
// complete an earlier append's waiter inline) — is posted here instead.
//
// Contract: tasks run one at a time, in the order they were posted, on the
// executor's thread, with no lock of the executor held. The destructor
// drops the tasks not yet started and joins the thread (from one of its own
// tasks it detaches it instead: that task is the last one to run).
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

#include "net/request_handler.h"

namespace headrace::broker {

class SerialExecutor final : public net::LoopExecutor {
 public:
  explicit SerialExecutor(const char* thread_name);
  ~SerialExecutor() override;
  SerialExecutor(const SerialExecutor&) = delete;
  SerialExecutor& operator=(const SerialExecutor&) = delete;

  // Any thread. Dropped once the destructor has started.
  void Post(std::function<void()> task) override;
  std::thread::id thread_id() const { return thread_.get_id(); }

 private:
  // Shared with the thread, which may outlive the executor (detached).
  struct Queue {
    std::mutex mu;
    std::condition_variable cv;
    std::deque<std::function<void()>> tasks;  // guarded by mu
    bool stop = false;                        // guarded by mu
  };
  static void Run(std::shared_ptr<Queue> q, const char* thread_name);

  std::shared_ptr<Queue> q_ = std::make_shared<Queue>();
  std::thread thread_;  // last: started after q_
};

}  // namespace headrace::broker
