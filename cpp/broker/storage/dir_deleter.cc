#include "broker/storage/dir_deleter.h"

#include <filesystem>

namespace headrace::broker {

DirDeleter::DirDeleter() : thread_([this] { Loop(); }) {}

DirDeleter::~DirDeleter() { Stop(); }

void DirDeleter::Enqueue(std::string path) {
  std::lock_guard<std::mutex> lock(mu_);
  queue_.push_back(std::move(path));
  cv_.notify_all();
}

void DirDeleter::Drain() {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return (queue_.empty() && !busy_) || stopping_; });
}

void DirDeleter::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
    if (stopping_) return;
    std::string path = std::move(queue_.front());
    queue_.pop_front();
    busy_ = true;
    lock.unlock();
    std::error_code ec;  // a failure leaves the dir for the next start
    std::filesystem::remove_all(path, ec);
    lock.lock();
    busy_ = false;
    if (!ec) ++removed_;
    cv_.notify_all();
  }
}

void DirDeleter::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  std::lock_guard<std::mutex> join_lock(join_mu_);
  if (thread_.joinable()) thread_.join();
}

int DirDeleter::removed() const {
  std::lock_guard<std::mutex> lock(mu_);
  return removed_;
}

}  // namespace headrace::broker
