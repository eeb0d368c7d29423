#include "broker/partition/producer_id_allocator.h"

#include <cctype>
#include <limits>
#include <memory>

#include "common/file_env.h"

namespace headrace::broker {

Result<std::unique_ptr<ProducerIdAllocator>> ProducerIdAllocator::Open(
    const std::string& data_dir, FileEnv* env) {
  if (env == nullptr) env = FileEnv::Default();
  int64_t next = 0;
  Result<std::string> text = ReadWholeFile(*env, data_dir + "/" + kFileName);
  if (text.ok()) {
    const std::string& s = *text;
    size_t i = 0;
    int64_t v = 0;
    for (; i < s.size() && std::isdigit(static_cast<unsigned char>(s[i])); ++i) {
      if (v > (std::numeric_limits<int64_t>::max() - 9) / 10) break;
      v = v * 10 + (s[i] - '0');
    }
    if (i == 0 || (i < s.size() && s.substr(i) != "\n")) {
      return Status::Corruption(data_dir + "/" + kFileName + " does not hold a producer id");
    }
    next = v;
  } else if (text.status().code() != StatusCode::kNotFound) {
    return text.status();
  }
  return std::unique_ptr<ProducerIdAllocator>(new ProducerIdAllocator(data_dir, env, next));
}

Result<ProducerIdAndEpoch> ProducerIdAllocator::AllocateLocked() {
  if (next_ >= block_end_) {
    const int64_t end = next_ + kBlockSize;
    const std::string text = std::to_string(end) + "\n";
    HR_RETURN_IF_ERROR(WriteFileAtomically(*env_, data_dir_, kFileName, text));
    block_end_ = end;
  }
  ProducerIdAndEpoch out{next_++ * stride_ + stripe_, 0};
  epochs_[out.producer_id] = 0;
  return out;
}

Result<ProducerIdAndEpoch> ProducerIdAllocator::Allocate() {
  std::lock_guard<std::mutex> l(mu_);
  return AllocateLocked();
}

Result<ProducerIdAndEpoch> ProducerIdAllocator::BumpOrAllocate(ProducerIdAndEpoch current) {
  std::lock_guard<std::mutex> l(mu_);
  auto it = epochs_.find(current.producer_id);
  if (it == epochs_.end() || it->second != current.epoch ||
      current.epoch == std::numeric_limits<int16_t>::max()) {
    return AllocateLocked();
  }
  ++it->second;
  return ProducerIdAndEpoch{current.producer_id, it->second};
}

}  // namespace headrace::broker
