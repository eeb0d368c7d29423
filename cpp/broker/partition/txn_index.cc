#include "broker/partition/txn_index.h"

#include <algorithm>
#include <set>

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

constexpr int16_t kTxnIndexVersion = 0;

}  // namespace

std::string EncodeAbortedTxns(const std::vector<AbortedTxn>& entries) {
  std::string out(entries.size() * kAbortedTxnEntrySize, '\0');
  auto* p = reinterpret_cast<uint8_t*>(out.data());
  for (const AbortedTxn& e : entries) {
    StoreBE16(p, static_cast<uint16_t>(kTxnIndexVersion));
    StoreBE64(p + 2, static_cast<uint64_t>(e.producer_id));
    StoreBE64(p + 10, static_cast<uint64_t>(e.first_offset.value()));
    StoreBE64(p + 18, static_cast<uint64_t>(e.last_offset.value()));
    StoreBE64(p + 26, static_cast<uint64_t>(e.last_stable_offset.value()));
    p += kAbortedTxnEntrySize;
  }
  return out;
}

Result<std::vector<AbortedTxn>> DecodeAbortedTxns(std::string_view bytes) {
  if (bytes.size() % kAbortedTxnEntrySize != 0) {
    return Status::Corruption("txnindex size " + std::to_string(bytes.size()) +
                              " is not a multiple of 34");
  }
  std::vector<AbortedTxn> out;
  const auto* p = reinterpret_cast<const uint8_t*>(bytes.data());
  for (size_t i = 0; i < bytes.size(); i += kAbortedTxnEntrySize, p += kAbortedTxnEntrySize) {
    const int16_t version = static_cast<int16_t>(LoadBE16(p));
    if (version != kTxnIndexVersion) {
      return Status::Corruption("txnindex entry version " + std::to_string(version));
    }
    out.push_back({static_cast<int64_t>(LoadBE64(p + 2)),
                   Offset(static_cast<int64_t>(LoadBE64(p + 10))),
                   Offset(static_cast<int64_t>(LoadBE64(p + 18))),
                   Offset(static_cast<int64_t>(LoadBE64(p + 26)))});
  }
  return out;
}

AbortedTxnIndex::AbortedTxnIndex(std::string dir, FileEnv* env)
    : dir_(std::move(dir)), env_(env ? env : FileEnv::Default()) {}

Status AbortedTxnIndex::Load() {
  segments_.clear();
  if (dir_.empty()) return Status::OK();
  HR_ASSIGN_OR_RETURN(std::vector<std::string> names, env_->ListDir(dir_));
  for (const std::string& name : names) {
    std::optional<Offset> base = filename::ParseOffsetFileName(name, filename::kTxnIndexExtension);
    if (!base) continue;
    const std::string path = dir_ + "/" + name;
    Result<std::string> bytes = ReadWholeFile(*env_, path);
    if (!bytes.ok()) return bytes.status();
    Result<std::vector<AbortedTxn>> entries = DecodeAbortedTxns(*bytes);
    if (!entries.ok()) {
      HR_LOG(kWarn) << "ignoring " << path << ": " << entries.status().ToString();
      dirty_[*base] = true;  // rewritten from what the replay indexes again
      continue;
    }
    if (!entries->empty()) segments_[*base] = std::move(*entries);
  }
  return Status::OK();
}

void AbortedTxnIndex::Append(Offset segment_base, const AbortedTxn& txn) {
  for (const auto& [base, entries] : segments_) {
    for (const AbortedTxn& e : entries) {
      if (e.last_offset == txn.last_offset) return;
    }
  }
  segments_[segment_base].push_back(txn);
  dirty_[segment_base] = true;
  dropped_.erase(segment_base);
}

std::vector<AbortedTxn> AbortedTxnIndex::Collect(Offset from, Offset to) const {
  std::vector<AbortedTxn> out;
  for (const auto& [base, entries] : segments_) {
    for (const AbortedTxn& e : entries) {
      if (e.last_offset >= from && e.first_offset < to) out.push_back(e);
    }
  }
  std::sort(out.begin(), out.end(),
            [](const AbortedTxn& a, const AbortedTxn& b) { return a.first_offset < b.first_offset; });
  return out;
}

void AbortedTxnIndex::DropSegmentsBefore(Offset first_base) {
  for (auto it = segments_.begin(); it != segments_.end() && it->first < first_base;) {
    dropped_[it->first] = true;
    dirty_.erase(it->first);
    it = segments_.erase(it);
  }
}

size_t AbortedTxnIndex::ForgetRemovedMarkers(
    Offset below, const std::vector<std::pair<int64_t, int64_t>>& kept) {
  std::set<std::pair<int64_t, int64_t>> keep(kept.begin(), kept.end());
  size_t removed = 0;
  for (auto it = segments_.begin(); it != segments_.end();) {
    std::vector<AbortedTxn>& entries = it->second;
    const size_t before = entries.size();
    std::erase_if(entries, [&](const AbortedTxn& e) {
      return e.last_offset < below && !keep.count({e.producer_id, e.last_offset.value()});
    });
    removed += before - entries.size();
    if (entries.empty()) {
      dropped_[it->first] = true;
      dirty_.erase(it->first);
      it = segments_.erase(it);
      continue;
    }
    if (entries.size() != before) dirty_[it->first] = true;
    ++it;
  }
  return removed;
}

void AbortedTxnIndex::TruncateFrom(Offset offset) {
  for (auto it = segments_.begin(); it != segments_.end();) {
    std::vector<AbortedTxn>& entries = it->second;
    const size_t before = entries.size();
    std::erase_if(entries, [&](const AbortedTxn& e) { return e.last_offset >= offset; });
    if (entries.empty()) {
      dropped_[it->first] = true;
      dirty_.erase(it->first);
      it = segments_.erase(it);
      continue;
    }
    if (entries.size() != before) dirty_[it->first] = true;
    ++it;
  }
}

void AbortedTxnIndex::Clear() { TruncateFrom(Offset(-1)); }

size_t AbortedTxnIndex::size() const {
  size_t n = 0;
  for (const auto& [base, entries] : segments_) n += entries.size();
  return n;
}

AbortedTxnIndex::FileWrites AbortedTxnIndex::TakeDirty() {
  FileWrites w;
  w.dir = dir_;
  w.env = env_;
  for (const auto& [base, unused] : dirty_) {
    auto it = segments_.find(base);
    if (it == segments_.end()) {
      w.removed.push_back(base);
    } else {
      w.contents.emplace_back(base, EncodeAbortedTxns(it->second));
    }
  }
  for (const auto& [base, unused] : dropped_) w.removed.push_back(base);
  dirty_.clear();
  dropped_.clear();
  return w;
}

Status WriteTxnIndexFiles(const AbortedTxnIndex::FileWrites& w) {
  if (w.dir.empty() || w.empty()) return Status::OK();
  for (const auto& [base, bytes] : w.contents) {
    HR_RETURN_IF_ERROR(WriteFileAtomically(
        *w.env, w.dir, filename::OffsetFileName(base, filename::kTxnIndexExtension), bytes));
  }
  bool unlinked = false;
  for (Offset base : w.removed) {
    Status st = w.env->Unlink(w.dir + "/" + filename::OffsetFileName(base, filename::kTxnIndexExtension));
    if (st.ok()) unlinked = true;
    else if (st.code() != StatusCode::kNotFound) return st;
  }
  if (unlinked) HR_RETURN_IF_ERROR(w.env->SyncDir(w.dir));
  return Status::OK();
}

}  // namespace headrace::broker
