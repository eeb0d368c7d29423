#include "net/page_cache_loader.h"

#include <pthread.h>

#include <algorithm>
#include <string>

#include "common/file_slice.h"

namespace headrace::net {
namespace {
// Bytes read per pread (into a per-thread scratch buffer that is discarded).
constexpr int64_t kReadStep = 1 << 20;
}  // namespace

PageCacheLoader::~PageCacheLoader() { Stop(); }

void PageCacheLoader::Load(FileSlice range, Done done) {
  std::lock_guard<std::mutex> lock(mu_);
  if (stopped_) return;
  jobs_.push_back({std::move(range), std::move(done)});
  if (threads_.size() < static_cast<size_t>(kThreads)) {
    threads_.emplace_back([this, n = threads_.size()] {
      std::string name = "hr-net-load-" + std::to_string(n);
      pthread_setname_np(pthread_self(), name.c_str());
      Run();
    });
  }
  cv_.notify_one();
}

void PageCacheLoader::Stop() {
  std::vector<std::thread> threads;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopped_ = true;
    jobs_.clear();
    threads.swap(threads_);
  }
  cv_.notify_all();
  for (auto& t : threads) t.join();
}

void PageCacheLoader::Run() {
  std::vector<uint8_t> scratch;
  for (;;) {
    Job job;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return stopped_ || !jobs_.empty(); });
      if (stopped_) return;
      job = std::move(jobs_.front());
      jobs_.pop_front();
    }
    job.done(ReadThrough(job.range, &scratch));
  }
}

// Reads the range in steps into *scratch (so the pages land in the cache).
Status PageCacheLoader::ReadThrough(const FileSlice& range, std::vector<uint8_t>* scratch) {
  scratch->resize(static_cast<size_t>(std::min(range.length, kReadStep)));
  for (int64_t done = 0; done < range.length;) {
    FileSlice step{.fd = range.fd,
                   .position = FilePosition(range.position.value() + done),
                   .length = std::min(range.length - done, kReadStep),
                   .keepalive = nullptr};
    HR_RETURN_IF_ERROR(ReadSlice(step, scratch->data()));
    done += step.length;
  }
  return Status::OK();
}

}  // namespace headrace::net
