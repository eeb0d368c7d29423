#include "broker/storage/log_writers.h"

#include <pthread.h>

#include <algorithm>
#include <string>

namespace headrace::broker {

LogWriters::LogWriters(const LogDirs& dirs, int threads_per_dir) : dirs_(dirs) {
  if (threads_per_dir <= 0) return;
  for (int d = 0; d < std::max(dirs.size(), 1); ++d) {
    auto pool = std::make_unique<Pool>();
    for (int t = 0; t < threads_per_dir; ++t) {
      pool->threads.emplace_back(Run, pool.get(),
                                 "hr-write-" + std::to_string(d) + "-" + std::to_string(t));
    }
    pools_.push_back(std::move(pool));
  }
}

LogWriters::~LogWriters() {
  for (auto& pool : pools_) {
    {
      std::lock_guard<std::mutex> l(pool->mu);
      pool->stop = true;
    }
    pool->work.notify_all();
  }
  for (auto& pool : pools_) {
    for (std::thread& t : pool->threads) t.join();
  }
}

void LogWriters::Post(const void* strand, std::string_view partition_dir,
                      std::function<void()> task) {
  if (pools_.empty()) {
    task();
    return;
  }
  int i = dirs_.IndexOf(partition_dir);
  Pool& pool = *pools_[i < 0 ? 0 : i];
  {
    std::lock_guard<std::mutex> l(pool.mu);
    if (pool.stop) return;
    std::unique_ptr<Strand>& s = pool.strands[strand];
    if (!s) {
      s = std::make_unique<Strand>();
      s->key = strand;
    }
    s->tasks.push_back(std::move(task));
    if (s->scheduled) return;  // its runner takes it in turn
    s->scheduled = true;
    pool.ready.push_back(s.get());
  }
  pool.work.notify_one();
}

void LogWriters::Drain() {
  for (auto& pool : pools_) {
    std::unique_lock<std::mutex> l(pool->mu);
    pool->idle.wait(l, [&] { return pool->stop || (pool->strands.empty() && pool->running == 0); });
  }
}

void LogWriters::Run(Pool* pool, std::string name) {
  pthread_setname_np(pthread_self(), name.c_str());
  std::unique_lock<std::mutex> l(pool->mu);
  for (;;) {
    pool->work.wait(l, [&] { return pool->stop || !pool->ready.empty(); });
    if (pool->stop) return;
    Strand* s = pool->ready.front();
    pool->ready.pop_front();
    std::function<void()> task = std::move(s->tasks.front());
    s->tasks.pop_front();
    ++pool->running;
    l.unlock();
    task();
    task = nullptr;  // destroyed outside the lock too
    l.lock();
    --pool->running;
    if (!s->tasks.empty()) {
      pool->ready.push_back(s);  // one task per turn: strands share the threads fairly
      pool->work.notify_one();   // an idle thread may take it while this one takes another
    } else {
      pool->strands.erase(s->key);
    }
    if (pool->strands.empty() && pool->running == 0) pool->idle.notify_all();
  }
}

}  // namespace headrace::broker
