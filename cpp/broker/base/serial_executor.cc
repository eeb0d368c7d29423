#include "broker/base/serial_executor.h"

#include <pthread.h>

namespace headrace::broker {

SerialExecutor::SerialExecutor(const char* thread_name)
    : thread_([q = q_, thread_name] { Run(q, thread_name); }) {}

SerialExecutor::~SerialExecutor() {
  std::deque<std::function<void()>> dropped;
  {
    std::lock_guard<std::mutex> l(q_->mu);
    q_->stop = true;
    dropped.swap(q_->tasks);
  }
  q_->cv.notify_all();
  if (std::this_thread::get_id() == thread_.get_id()) thread_.detach();
  else thread_.join();
}  // `dropped` destroyed here, outside the lock

void SerialExecutor::Post(std::function<void()> task) {
  {
    std::lock_guard<std::mutex> l(q_->mu);
    if (q_->stop) return;
    q_->tasks.push_back(std::move(task));
  }
  q_->cv.notify_one();
}

void SerialExecutor::Run(std::shared_ptr<Queue> q, const char* thread_name) {
  pthread_setname_np(pthread_self(), thread_name);
  for (;;) {
    std::function<void()> task;
    {
      std::unique_lock<std::mutex> l(q->mu);
      q->cv.wait(l, [&] { return q->stop || !q->tasks.empty(); });
      if (q->stop) return;
      task = std::move(q->tasks.front());
      q->tasks.pop_front();
    }
    task();
  }
}

}  // namespace headrace::broker
