#include "broker/partition/producer_snapshot.h"

#include <algorithm>
#include <limits>

#include "common/crc32c.h"
#include "common/file_env.h"
#include "common/logging.h"
#include "log/coding.h"
#include "log/filename.h"

namespace headrace::broker {
using coding::LoadBE16;
using coding::LoadBE32;
using coding::LoadBE64;
using coding::StoreBE16;
using coding::StoreBE32;
using coding::StoreBE64;

namespace {

constexpr int16_t kSnapshotVersion = 1;
constexpr size_t kHeaderSize = 2 + 4 + 4;  // version, crc, entry count
constexpr size_t kEntrySize = 8 + 2 + 4 + 8 + 4 + 8 + 4 + 8;

std::string PathOf(const std::string& dir, Offset offset) {
  return dir + "/" + filename::OffsetFileName(offset, filename::kSnapshotExtension);
}

}  // namespace

std::string EncodeProducerSnapshot(const ProducerStateTable& table) {
  std::string out(kHeaderSize + table.size() * kEntrySize, '\0');
  auto* p = reinterpret_cast<uint8_t*>(out.data());
  StoreBE16(p, static_cast<uint16_t>(kSnapshotVersion));
  StoreBE32(p + 6, static_cast<uint32_t>(table.size()));
  uint8_t* e = p + kHeaderSize;
  for (const auto& [pid, entry] : table.entries()) {
    const bool any = entry.count > 0;
    const ProducerBatch last = any ? entry.last() : ProducerBatch{};
    StoreBE64(e, static_cast<uint64_t>(pid));
    StoreBE16(e + 8, static_cast<uint16_t>(entry.epoch));
    StoreBE32(e + 10, static_cast<uint32_t>(last.last_seq));
    StoreBE64(e + 14, static_cast<uint64_t>(last.last_offset.value()));
    StoreBE32(e + 22, static_cast<uint32_t>(any ? last.last_offset - last.first_offset : 0));
    StoreBE64(e + 26, static_cast<uint64_t>(entry.last_timestamp.value()));
    StoreBE32(e + 34, static_cast<uint32_t>(entry.coordinator_epoch));
    StoreBE64(e + 38, static_cast<uint64_t>(entry.current_txn_first_offset.value()));
    e += kEntrySize;
  }
  StoreBE32(p + 2, crc32c::Value(p + 6, out.size() - 6));
  return out;
}

Status DecodeProducerSnapshot(std::string_view bytes, ProducerStateTable* table) {
  const auto* p = reinterpret_cast<const uint8_t*>(bytes.data());
  if (bytes.size() < kHeaderSize) return Status::Corruption("snapshot shorter than its header");
  const int16_t version = static_cast<int16_t>(LoadBE16(p));
  if (version != kSnapshotVersion) {
    return Status::Corruption("snapshot version " + std::to_string(version));
  }
  if (crc32c::Value(p + 6, bytes.size() - 6) != LoadBE32(p + 2)) {
    return Status::Corruption("snapshot CRC mismatch");
  }
  const uint32_t count = LoadBE32(p + 6);
  if (bytes.size() != kHeaderSize + static_cast<size_t>(count) * kEntrySize) {
    return Status::Corruption("snapshot size does not match its entry count");
  }
  const uint8_t* e = p + kHeaderSize;
  for (uint32_t i = 0; i < count; ++i, e += kEntrySize) {
    ProducerEntry entry;
    entry.epoch = static_cast<int16_t>(LoadBE16(e + 8));
    const int32_t last_seq = static_cast<int32_t>(LoadBE32(e + 10));
    const Offset last_offset(static_cast<int64_t>(LoadBE64(e + 14)));
    const int32_t delta = static_cast<int32_t>(LoadBE32(e + 22));
    entry.last_timestamp = TimestampMs(static_cast<int64_t>(LoadBE64(e + 26)));
    entry.coordinator_epoch = static_cast<int32_t>(LoadBE32(e + 34));
    entry.current_txn_first_offset = Offset(static_cast<int64_t>(LoadBE64(e + 38)));
    if (last_seq >= 0) {
      // The first sequence of the last batch, wrapping below 0 as Kafka's
      // sequences wrap past INT32_MAX.
      int64_t first_seq = int64_t{last_seq} - delta;
      if (first_seq < 0) first_seq += int64_t{std::numeric_limits<int32_t>::max()} + 1;
      entry.Push({static_cast<int32_t>(first_seq), last_seq, last_offset - delta, last_offset});
    }
    table->Restore(static_cast<int64_t>(LoadBE64(e)), entry);
  }
  return Status::OK();
}

Result<std::vector<Offset>> ListProducerSnapshots(FileEnv& env, const std::string& dir) {
  HR_ASSIGN_OR_RETURN(std::vector<std::string> names, env.ListDir(dir));
  std::vector<Offset> out;
  for (const std::string& name : names) {
    if (auto o = filename::ParseOffsetFileName(name, filename::kSnapshotExtension)) out.push_back(*o);
  }
  std::sort(out.begin(), out.end());
  return out;
}

Status WriteProducerSnapshot(FileEnv& env, const std::string& dir, Offset offset,
                             std::string_view bytes) {
  HR_RETURN_IF_ERROR(WriteFileAtomically(
      env, dir, filename::OffsetFileName(offset, filename::kSnapshotExtension), bytes));
  HR_ASSIGN_OR_RETURN(std::vector<Offset> all, ListProducerSnapshots(env, dir));
  for (size_t i = 0; i + kSnapshotsKept < all.size(); ++i) {
    Status st = env.Unlink(PathOf(dir, all[i]));
    if (!st.ok() && st.code() != StatusCode::kNotFound) return st;
  }
  return Status::OK();
}

Status DeleteProducerSnapshotsAbove(FileEnv& env, const std::string& dir, Offset offset) {
  HR_ASSIGN_OR_RETURN(std::vector<Offset> all, ListProducerSnapshots(env, dir));
  for (Offset o : all) {
    if (o <= offset) continue;
    Status st = env.Unlink(PathOf(dir, o));
    if (!st.ok() && st.code() != StatusCode::kNotFound) return st;
  }
  return Status::OK();
}

Result<Offset> LoadNewestProducerSnapshot(FileEnv& env, const std::string& dir, Offset max_offset,
                                          ProducerStateTable* table) {
  HR_ASSIGN_OR_RETURN(std::vector<Offset> all, ListProducerSnapshots(env, dir));
  for (auto it = all.rbegin(); it != all.rend(); ++it) {
    if (*it > max_offset) continue;
    table->Clear();
    const std::string path = PathOf(dir, *it);
    Result<std::string> bytes = ReadWholeFile(env, path);
    Status st = bytes.ok() ? DecodeProducerSnapshot(*bytes, table) : bytes.status();
    if (st.ok()) return *it;
    HR_LOG(kWarn) << "ignoring producer snapshot " << path << ": " << st.ToString();
  }
  table->Clear();
  return Offset(-1);
}

}  // namespace headrace::broker
