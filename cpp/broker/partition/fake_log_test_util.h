// Test-only: an in-memory Log that counts flushes, plus a builder for
// minimal RecordBatch-shaped byte strings it accepts. Used where tests need
// to count fsyncs or slow them down; tests of real data use Log::Open.
#pragma once

#include <atomic>
#include <chrono>
#include <cstring>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "headrace/log.h"

namespace headrace::broker::testing {

// `records` records' worth of a v2 batch header: length at 8, magic at 16,
// last offset delta at 23, record count at 57; no valid CRC.
inline std::string FakeBatch(int records) {
  std::string b(61 + records, '\0');
  auto put32 = [&](size_t at, uint32_t v) {
    for (int i = 0; i < 4; ++i) b[at + i] = static_cast<char>(v >> (24 - 8 * i));
  };
  put32(8, static_cast<uint32_t>(b.size() - 12));
  b[16] = 2;
  put32(23, static_cast<uint32_t>(records - 1));
  put32(57, static_cast<uint32_t>(records));
  // No producer: id -1, epoch -1, base sequence -1 (bytes 43..56).
  for (size_t i = 43; i < 57; ++i) b[i] = '\xff';
  return b;
}

class FakeLog final : public Log {
 public:
  explicit FakeLog(std::string dir = "fake") : dir_(std::move(dir)) {}

  std::chrono::milliseconds flush_delay{0};
  std::atomic<bool> flush_due{false};  // what FlushDue answers
  // Called by each Flush before it takes effect (set before the log is
  // shared); an error fails that Flush.
  std::function<Status()> on_flush;
  // Called by each Append before it takes effect, without the log's lock
  // (set before the log is shared): a test holds an append here, as a
  // pwrite into a page writeback holds it.
  std::function<void()> on_append;

  Result<AppendInfo> Append(std::span<uint8_t> batches) override {
    if (on_append) on_append();
    std::lock_guard<std::mutex> l(mu_);
    if (closed_) return Status::Closed("closed");
    if (batches.empty()) return Status::InvalidArgument("empty");
    AppendInfo info;
    info.base_offset = end_;
    size_t pos = 0;
    while (pos < batches.size()) {
      if (pos + 61 > batches.size()) return Status::Corruption("short batch");
      uint32_t len = Get32(batches, pos + 8);
      int32_t delta = static_cast<int32_t>(Get32(batches, pos + 23));
      std::string bytes(reinterpret_cast<const char*>(batches.data() + pos), len + 12);
      base_.push_back(end_);
      data_.push_back(std::move(bytes));
      end_ = end_ + (delta + 1);
      info.record_count += delta + 1;
      ++info.batch_count;
      pos += len + 12;
    }
    info.last_offset = end_ - 1;
    info.bytes = static_cast<int64_t>(batches.size());
    return info;
  }

  Result<ReadResult> Read(Offset offset, int64_t max_bytes, Offset upper_bound,
                          bool min_one_batch) const override {
    std::lock_guard<std::mutex> l(mu_);
    if (closed_) return Status::Closed("closed");
    if (offset < start_ || offset > end_) return Status::OutOfRange("out of range");
    ReadResult r;
    r.first_batch_base = Offset(-1);
    for (size_t i = 0; i < data_.size(); ++i) {
      Offset next = i + 1 < base_.size() ? base_[i + 1] : end_;
      if (next <= offset || base_[i] < start_) continue;
      if (base_[i] >= upper_bound) break;
      int64_t len = static_cast<int64_t>(data_[i].size());
      if (r.bytes + len > max_bytes && !(r.slices.empty() && min_one_batch)) break;
      if (r.slices.empty()) r.first_batch_base = base_[i];
      r.slices.push_back(FileSlice{-1, FilePosition(static_cast<int64_t>(i)), len, nullptr});
      r.bytes += len;
    }
    return r;
  }

  Result<std::pair<Offset, TimestampMs>> OffsetForTime(TimestampMs) const override {
    return Status::NotFound("none");
  }
  Result<std::pair<TimestampMs, Offset>> MaxTimestamp() const override {
    return Status::NotFound("none");
  }
  Status Flush() override {
    if (flush_delay.count() > 0) std::this_thread::sleep_for(flush_delay);
    if (on_flush) HR_RETURN_IF_ERROR(on_flush());
    std::lock_guard<std::mutex> l(mu_);
    ++flushes_;
    flushed_ = end_;
    return Status::OK();
  }
  Status MaybeFlush() override {
    std::lock_guard<std::mutex> l(mu_);
    ++maybe_flushes_;
    return Status::OK();
  }
  bool FlushDue() const override {
    std::lock_guard<std::mutex> l(mu_);
    ++maybe_flushes_;
    return flush_due;
  }
  Result<AppendInfo> AppendWithOffsets(std::span<uint8_t>,
                                       WriteCache = WriteCache::kKeep) override {
    return Status::Unsupported("fake");
  }
  Status Truncate(Offset) override { return Status::Unsupported("fake"); }
  Status TruncateFullyAndStartAt(Offset) override { return Status::Unsupported("fake"); }
  Result<RetentionReport> ApplyRetention(TimestampMs) override {
    std::lock_guard<std::mutex> l(mu_);
    ++retention_runs_;
    RetentionReport r;
    r.new_start_offset = start_;
    return r;
  }
  Status DeleteRecordsBefore(Offset offset) override {
    std::lock_guard<std::mutex> l(mu_);
    start_ = offset;
    return Status::OK();
  }
  Status MaybeRoll(TimestampMs) override {
    std::lock_guard<std::mutex> l(mu_);
    ++roll_checks_;
    return Status::OK();
  }
  void SetConfig(const LogConfig& config) override {
    std::lock_guard<std::mutex> l(mu_);
    config_ = config;
  }
  Status Close() override {
    std::lock_guard<std::mutex> l(mu_);
    closed_ = true;
    return Status::OK();
  }
  Status Abandon() override { return Close(); }
  Offset start_offset() const override { std::lock_guard<std::mutex> l(mu_); return start_; }
  Offset end_offset() const override { std::lock_guard<std::mutex> l(mu_); return end_; }
  Offset flushed_offset() const override { std::lock_guard<std::mutex> l(mu_); return flushed_; }
  int64_t size_bytes() const override { return 0; }
  int segment_count() const override { return 1; }
  std::vector<Offset> segment_base_offsets() const override { return {Offset(0)}; }
  Offset active_segment_base() const override { return Offset(0); }
  const RecoveryReport& recovery_report() const override { return report_; }
  const std::string& dir() const override { return dir_; }
  bool failed() const override { return false; }
  Status failure() const override { return Status::OK(); }

  int flushes() const { std::lock_guard<std::mutex> l(mu_); return flushes_; }
  int maybe_flushes() const { std::lock_guard<std::mutex> l(mu_); return maybe_flushes_; }
  int retention_runs() const { std::lock_guard<std::mutex> l(mu_); return retention_runs_; }
  int roll_checks() const { std::lock_guard<std::mutex> l(mu_); return roll_checks_; }
  LogConfig config() const { std::lock_guard<std::mutex> l(mu_); return config_; }

 private:
  static uint32_t Get32(std::span<const uint8_t> b, size_t at) {
    return (uint32_t{b[at]} << 24) | (uint32_t{b[at + 1]} << 16) | (uint32_t{b[at + 2]} << 8) |
           b[at + 3];
  }

  const std::string dir_;
  RecoveryReport report_;
  mutable std::mutex mu_;
  bool closed_ = false;
  Offset start_{0}, end_{0}, flushed_{0};
  std::vector<Offset> base_;
  std::vector<std::string> data_;
  LogConfig config_;
  int flushes_ = 0;
  mutable int maybe_flushes_ = 0;
  int retention_runs_ = 0, roll_checks_ = 0;
};

}  // namespace headrace::broker::testing
