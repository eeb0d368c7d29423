#include "log/offset_index.h"

#include "log/coding.h"

namespace headrace {

Result<std::unique_ptr<OffsetIndex>> OffsetIndex::Open(FileEnv* env, const std::string& path,
                                                       Offset base, int64_t max_bytes) {
  HR_ASSIGN_OR_RETURN(std::unique_ptr<IndexFile> f,
                      IndexFile::Open(env, path, kEntrySize, max_bytes));
  return std::unique_ptr<OffsetIndex>(new OffsetIndex(std::move(f), base));
}

OffsetIndex::Entry OffsetIndex::EntryAt(int64_t i) const {
  const uint8_t* e = file_->entry(i);
  return {base_ + static_cast<int32_t>(coding::LoadBE32(e)),
          FilePosition(coding::LoadBE32(e + 4))};
}

OffsetIndex::Entry OffsetIndex::Lookup(Offset target, FilePosition limit) const {
  int64_t lo = 0, hi = file_->entries();  // answer: last i in [0, hi) with offset <= target
  while (lo < hi) {
    int64_t mid = lo + (hi - lo) / 2;
    Entry e = EntryAt(mid);
    if (e.offset <= target && e.position < limit)
      lo = mid + 1;
    else
      hi = mid;
  }
  if (lo == 0) return {base_, FilePosition(0)};
  return EntryAt(lo - 1);
}

OffsetIndex::Entry OffsetIndex::LookupPosition(FilePosition at_most) const {
  int64_t lo = 0, hi = file_->entries();  // answer: last i in [0, hi) with position <= at_most
  while (lo < hi) {
    int64_t mid = lo + (hi - lo) / 2;
    if (EntryAt(mid).position <= at_most)
      lo = mid + 1;
    else
      hi = mid;
  }
  if (lo == 0) return {base_, FilePosition(0)};
  return EntryAt(lo - 1);
}

Status OffsetIndex::Append(Offset batch_last_offset, FilePosition batch_position) {
  uint8_t e[kEntrySize];
  coding::StoreBE32(e, static_cast<uint32_t>(batch_last_offset - base_));
  coding::StoreBE32(e + 4, static_cast<uint32_t>(batch_position.value()));
  return file_->Append(e);
}

void OffsetIndex::TruncateToPosition(FilePosition log_size) {
  int64_t n = file_->entries();
  while (n > 0 && EntryAt(n - 1).position >= log_size) --n;
  file_->TruncateEntries(n);
}

Status OffsetIndex::SanityCheck(int64_t log_size, int64_t offset_limit) const {
  if (!file_->size_was_exact())
    return Status::Corruption(file_->path() + ": size is not a whole number of entries");
  int64_t prev_rel = -1, prev_pos = -1;
  for (int64_t i = 0; i < file_->entries(); ++i) {
    const uint8_t* e = file_->entry(i);
    int64_t rel = static_cast<int32_t>(coding::LoadBE32(e));
    int64_t pos = static_cast<int32_t>(coding::LoadBE32(e + 4));
    if (rel <= prev_rel || pos <= prev_pos || rel >= offset_limit || pos >= log_size)
      return Status::Corruption(file_->path() + ": entry " + std::to_string(i) +
                                " is out of order or outside the log");
    prev_rel = rel;
    prev_pos = pos;
  }
  return Status::OK();
}

}  // namespace headrace
