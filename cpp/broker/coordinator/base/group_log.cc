#include "broker/coordinator/base/group_log.h"

#include "common/file_slice.h"
#include "headrace/record_batch.h"

namespace headrace::broker::group {
namespace {

constexpr int64_t kReplayChunkBytes = 4 << 20;
constexpr size_t kRewriteBatchBytes = 1 << 20;  // one batch per ~1 MiB of live records

// Reads the bytes of `slices` into one buffer.
Result<std::vector<uint8_t>> ReadAllSlices(const std::vector<FileSlice>& slices, int64_t total) {
  std::vector<uint8_t> buf(static_cast<size_t>(total));
  Status st = ReadSlices(slices, buf.data());
  if (!st.ok()) return Status::IOError("group log read: " + st.ToString());
  return buf;
}

}  // namespace

Result<std::unique_ptr<GroupLog>> GroupLog::Open(const std::string& data_dir,
                                                 const PartitionServices& services,
                                                 int64_t segment_bytes, FileEnv* env,
                                                 const char* dir_name) {
  LogConfig cfg;
  cfg.segment_bytes = segment_bytes;
  cfg.retention_ms = -1;
  cfg.max_message_bytes = 64 << 20;
  cfg.max_index_bytes = 1 << 20;
  cfg = PartitionLogConfig(cfg);  // the flusher fsyncs
  HR_ASSIGN_OR_RETURN(std::unique_ptr<Log> log,
                      Log::Open(data_dir + "/" + dir_name, cfg, env));
  TopicSettings settings;
  settings.log = cfg;
  settings.cleanup_delete = false;
  auto partition = std::make_shared<Partition>(TopicPartition{dir_name, 0}, Uuid(),
                                               std::move(log), settings, services);
  return std::unique_ptr<GroupLog>(new GroupLog(std::move(partition)));
}

Status GroupLog::Append(const std::vector<Entry>& entries) {
  std::vector<RecordInput> records;
  records.reserve(entries.size());
  for (const Entry& e : entries) {
    RecordInput r;
    r.key = e.key;
    r.value = e.value;
    records.push_back(std::move(r));
  }
  std::string batch = BuildBatch(records);
  std::span<uint8_t> bytes(reinterpret_cast<uint8_t*>(batch.data()), batch.size());
  HR_RETURN_IF_ERROR(partition_->AppendAsLeader(bytes).status());
  return FinishRewrite();
}

Status GroupLog::Replay(const std::function<void(const Entry&)>& fn) const {
  Offset next = partition_->log_start_offset();
  const Offset end = partition_->log_end_offset();
  while (next < end) {
    // Up to the log end, not the HW: a follower that just became the leader
    // may not have learnt the HW that covers the commits it holds (its HW
    // lags the old leader's by one fetch), and what its log holds is what it
    // keeps as leader (as Kafka's coordinator loads to the log end).
    HR_ASSIGN_OR_RETURN(PartitionRead read, partition_->ReadForFollower(next, kReplayChunkBytes));
    ReadResult& r = read.data;
    if (r.slices.empty()) break;
    HR_ASSIGN_OR_RETURN(std::vector<uint8_t> buf, ReadAllSlices(r.slices, r.bytes));
    // Advance by whole batches so an empty batch can never stall replay.
    size_t pos = 0;
    while (buf.size() - pos >= static_cast<size_t>(kBatchHeaderSize)) {
      auto h = ParseBatchHeader(std::span<const uint8_t>(buf).subspan(pos));
      if (!h.ok()) break;
      next = h->last_offset() + 1;
      pos += static_cast<size_t>(h->total_size());
    }
    HR_ASSIGN_OR_RETURN(std::vector<Record> records,
                        DecodeRecords(std::span<const uint8_t>(buf.data(), pos)));
    for (const Record& rec : records) fn(Entry{rec.key.value_or(""), rec.value});
    if (pos == 0) break;
  }
  return Status::OK();
}

Status GroupLog::Rewrite(const std::vector<Entry>& live) {
  const Offset first = partition_->log_end_offset();
  std::vector<Entry> chunk;
  size_t chunk_bytes = 0;
  for (const Entry& e : live) {
    chunk.push_back(e);
    chunk_bytes += e.key.size() + (e.value ? e.value->size() : 0);
    if (chunk_bytes >= kRewriteBatchBytes) {
      HR_RETURN_IF_ERROR(Append(chunk));
      chunk.clear();
      chunk_bytes = 0;
    }
  }
  if (!chunk.empty()) HR_RETURN_IF_ERROR(Append(chunk));
  // The old records go only once the new copy is on disk.
  rewrite_start_ = first;
  rewrite_end_ = partition_->log_end_offset();
  partition_->RequestFlush();
  return FinishRewrite();
}

Status GroupLog::FinishRewrite() {
  if (rewrite_end_.value() < 0 || partition_->flushed_offset() < rewrite_end_) return Status::OK();
  const Offset start = rewrite_start_;
  rewrite_start_ = rewrite_end_ = Offset(-1);
  return partition_->DeleteRecordsBefore(start).status();
}

Status GroupLog::Close() { return owned_ ? partition_->Close() : Status::OK(); }

}  // namespace headrace::broker::group
