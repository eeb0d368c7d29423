#include "log/time_index.h"

#include "log/coding.h"

namespace headrace {

Result<std::unique_ptr<TimeIndex>> TimeIndex::Open(FileEnv* env, const std::string& path,
                                                   Offset base, int64_t max_bytes) {
  HR_ASSIGN_OR_RETURN(std::unique_ptr<IndexFile> f,
                      IndexFile::Open(env, path, kEntrySize, max_bytes));
  return std::unique_ptr<TimeIndex>(new TimeIndex(std::move(f), base));
}

TimeIndex::Entry TimeIndex::EntryAt(int64_t i) const {
  const uint8_t* e = file_->entry(i);
  return {TimestampMs(static_cast<int64_t>(coding::LoadBE64(e))),
          base_ + static_cast<int32_t>(coding::LoadBE32(e + 8))};
}

std::optional<TimeIndex::Entry> TimeIndex::LookupBefore(TimestampMs ts) const {
  int64_t lo = 0, hi = file_->entries();
  while (lo < hi) {
    int64_t mid = lo + (hi - lo) / 2;
    if (EntryAt(mid).timestamp < ts)
      lo = mid + 1;
    else
      hi = mid;
  }
  if (lo == 0) return std::nullopt;
  return EntryAt(lo - 1);
}

std::optional<TimeIndex::Entry> TimeIndex::Last() const {
  int64_t n = file_->entries();
  if (n == 0) return std::nullopt;
  return EntryAt(n - 1);
}

Status TimeIndex::MaybeAppend(TimestampMs ts, Offset offset) {
  std::optional<Entry> last = Last();
  if (last && ts <= last->timestamp) return Status::OK();
  if (!last && ts < TimestampMs(0)) return Status::OK();
  uint8_t e[kEntrySize];
  coding::StoreBE64(e, static_cast<uint64_t>(ts.value()));
  coding::StoreBE32(e + 8, static_cast<uint32_t>(offset - base_));
  return file_->Append(e);
}

void TimeIndex::TruncateToOffset(Offset end) {
  int64_t n = file_->entries();
  while (n > 0 && EntryAt(n - 1).offset >= end) --n;
  file_->TruncateEntries(n);
}

Status TimeIndex::SanityCheck(int64_t offset_limit) const {
  if (!file_->size_was_exact())
    return Status::Corruption(file_->path() + ": size is not a whole number of entries");
  int64_t prev_ts = INT64_MIN, prev_rel = 0;
  for (int64_t i = 0; i < file_->entries(); ++i) {
    const uint8_t* e = file_->entry(i);
    int64_t ts = static_cast<int64_t>(coding::LoadBE64(e));
    int64_t rel = static_cast<int32_t>(coding::LoadBE32(e + 8));
    if (ts <= prev_ts || rel < prev_rel || rel >= offset_limit)
      return Status::Corruption(file_->path() + ": entry " + std::to_string(i) +
                                " is out of order or outside the log");
    prev_ts = ts;
    prev_rel = rel;
  }
  return Status::OK();
}

}  // namespace headrace
