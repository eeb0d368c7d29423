#include "broker/topics/admin_worker.h"

#include <pthread.h>

namespace headrace::broker {

AdminWorker::AdminWorker() : thread_([this] { Loop(); }) {}

AdminWorker::~AdminWorker() { Stop(); }

void AdminWorker::Post(std::function<void()> job) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!stopping_) {
      queue_.push_back(std::move(job));
      cv_.notify_one();
      return;
    }
  }
  job();
}

void AdminWorker::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_one();
  if (thread_.joinable()) thread_.join();
}

void AdminWorker::Loop() {
  pthread_setname_np(pthread_self(), "hr-admin");
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping, nothing left
    std::function<void()> job = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    job();
    lock.lock();
  }
}

}  // namespace headrace::broker
