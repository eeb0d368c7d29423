#include "broker/storage/offline_log.h"

namespace headrace::broker {
namespace {

class OfflineLog final : public Log {
 public:
  OfflineLog(std::string dir, Status cause) : dir_(std::move(dir)), cause_(std::move(cause)) {}
  Result<AppendInfo> Append(std::span<uint8_t>) override { return cause_; }
  Result<AppendInfo> AppendWithOffsets(std::span<uint8_t>,
                                       WriteCache = WriteCache::kKeep) override {
    return cause_;
  }
  Result<ReadResult> Read(Offset, int64_t, Offset, bool) const override { return cause_; }
  Result<std::pair<Offset, TimestampMs>> OffsetForTime(TimestampMs) const override {
    return cause_;
  }
  Result<std::pair<TimestampMs, Offset>> MaxTimestamp() const override { return cause_; }
  Status Flush() override { return cause_; }
  Status MaybeFlush() override { return cause_; }
  bool FlushDue() const override { return false; }
  Status Truncate(Offset) override { return cause_; }
  Status TruncateFullyAndStartAt(Offset) override { return cause_; }
  Result<RetentionReport> ApplyRetention(TimestampMs) override { return cause_; }
  Status DeleteRecordsBefore(Offset) override { return cause_; }
  Status MaybeRoll(TimestampMs) override { return Status::OK(); }
  void SetConfig(const LogConfig&) override {}
  Status Close() override { return Status::OK(); }
  Status Abandon() override { return Status::OK(); }
  Offset start_offset() const override { return Offset(0); }
  Offset end_offset() const override { return Offset(0); }
  Offset flushed_offset() const override { return Offset(0); }
  int64_t size_bytes() const override { return 0; }
  int segment_count() const override { return 0; }
  std::vector<Offset> segment_base_offsets() const override { return {Offset(0)}; }
  Offset active_segment_base() const override { return Offset(0); }
  const RecoveryReport& recovery_report() const override { return report_; }
  const std::string& dir() const override { return dir_; }
  bool failed() const override { return true; }
  Status failure() const override { return cause_; }

 private:
  const std::string dir_;
  const Status cause_;
  RecoveryReport report_;
};

}  // namespace

std::unique_ptr<Log> MakeOfflineLog(std::string dir, Status cause) {
  return std::make_unique<OfflineLog>(std::move(dir), std::move(cause));
}

}  // namespace headrace::broker
