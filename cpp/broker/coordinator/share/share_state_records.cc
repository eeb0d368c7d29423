#include "broker/coordinator/share/share_state_records.h"

#include <iterator>
#include <map>
#include <span>

#include "common/output_buffer.h"
#include "protocol/wire.h"

namespace headrace::broker::share {
namespace {

constexpr int16_t kSnapshotKeyVersion = 0;
constexpr int16_t kSnapshotValueVersion = 0;

std::span<uint8_t> Bytes(std::string_view b) {
  return {reinterpret_cast<uint8_t*>(const_cast<char*>(b.data())), b.size()};
}

Status Bad(const char* what) {
  return Status::Corruption(std::string("share state record: ") + what);
}

bool KnownState(int8_t s) {
  return s == static_cast<int8_t>(RecordState::kAvailable) ||
         s == static_cast<int8_t>(RecordState::kAcknowledged) ||
         s == static_cast<int8_t>(RecordState::kArchived);
}

}  // namespace

std::string EncodeShareStateKey(const SharePartitionKey& key) {
  OutputBuffer out;
  protocol::Writer w(out);
  w.Int16(kSnapshotKeyVersion);
  w.String(key.group, /*compact=*/false);
  w.WriteUuid(key.topic_id);
  w.Int32(key.partition);
  return out.Flatten();
}

std::string EncodeShareStateValue(const ShareState& state) {
  OutputBuffer out;
  protocol::Writer w(out);
  w.Int16(kSnapshotValueVersion);
  w.Uint16(static_cast<uint16_t>(state.snapshot_epoch));
  w.Int32(state.state_epoch);
  w.Int32(state.leader_epoch);
  w.Int64(state.start_offset);
  w.ArrayLength(state.batches.size(), /*compact=*/true);
  for (const StateBatch& b : state.batches) {
    w.Int64(b.first);
    w.Int64(b.last);
    w.Int8(static_cast<int8_t>(b.state));
    w.Int16(b.delivery_count);
    w.UVarint(0);  // no tagged fields
  }
  w.UVarint(0);
  return out.Flatten();
}

Result<SharePartitionKey> DecodeShareStateKey(std::string_view bytes) {
  protocol::Reader r(Bytes(bytes));
  int16_t version = 0;
  if (!r.Int16(&version).ok()) return Bad("truncated key");
  if (version != kSnapshotKeyVersion) return Bad("unsupported key version");
  SharePartitionKey key;
  if (!r.String(&key.group, false).ok() || !r.ReadUuid(&key.topic_id).ok() ||
      !r.Int32(&key.partition).ok()) {
    return Bad("truncated key");
  }
  return key;
}

Result<ShareState> DecodeShareStateValue(std::string_view bytes) {
  protocol::Reader r(Bytes(bytes));
  int16_t version = 0;
  uint16_t snapshot_epoch = 0;
  ShareState s;
  if (!r.Int16(&version).ok()) return Bad("truncated value");
  if (version != kSnapshotValueVersion) return Bad("unsupported value version");
  int32_t n = 0;
  if (!r.Uint16(&snapshot_epoch).ok() || !r.Int32(&s.state_epoch).ok() ||
      !r.Int32(&s.leader_epoch).ok() || !r.Int64(&s.start_offset).ok() ||
      !r.ArrayLength(&n, /*compact=*/true, 20, /*allow_null=*/false).ok()) {
    return Bad("truncated value");
  }
  s.snapshot_epoch = snapshot_epoch;
  int64_t previous_last = s.start_offset - 1;
  for (int32_t i = 0; i < n; ++i) {
    StateBatch b;
    int8_t state = 0;
    if (!r.Int64(&b.first).ok() || !r.Int64(&b.last).ok() || !r.Int8(&state).ok() ||
        !r.Int16(&b.delivery_count).ok() || !r.SkipTaggedFields().ok()) {
      return Bad("truncated state batch");
    }
    if (!KnownState(state)) return Bad("unknown delivery state");
    if (b.first > b.last || b.first <= previous_last || b.delivery_count < 0) {
      return Bad("state batches out of order");
    }
    b.state = static_cast<RecordState>(state);
    previous_last = b.last;
    s.batches.push_back(b);
  }
  if (!r.SkipTaggedFields().ok()) return Bad("truncated value");
  return s;
}

std::vector<StateBatch> MergeStateBatches(const std::vector<StateBatch>& base,
                                          const std::vector<StateBatch>& update,
                                          int64_t start_offset) {
  std::map<int64_t, StateBatch> m;  // by first offset, not overlapping
  for (const StateBatch& b : base) m[b.first] = b;
  for (const StateBatch& u : update) {
    // Cut what `u` covers out of the batches already there.
    auto it = m.upper_bound(u.first);
    if (it != m.begin() && std::prev(it)->second.last >= u.first) --it;
    while (it != m.end() && it->second.first <= u.last) {
      const StateBatch old = it->second;
      it = m.erase(it);
      if (old.first < u.first) {
        m[old.first] = StateBatch{old.first, u.first - 1, old.state, old.delivery_count};
      }
      if (old.last > u.last) {
        m[u.last + 1] = StateBatch{u.last + 1, old.last, old.state, old.delivery_count};
        break;
      }
    }
    m[u.first] = u;
  }
  std::vector<StateBatch> out;
  for (auto& [first, b] : m) {
    if (b.last < start_offset) continue;
    StateBatch c = b;
    c.first = std::max(c.first, start_offset);
    if (!out.empty() && out.back().last + 1 == c.first && out.back().state == c.state &&
        out.back().delivery_count == c.delivery_count) {
      out.back().last = c.last;
    } else {
      out.push_back(c);
    }
  }
  return out;
}

std::string ShareCoordinatorKey(const SharePartitionKey& key) {
  return key.group + ":" + key.topic_id.ToBase64() + ":" + std::to_string(key.partition);
}

}  // namespace headrace::broker::share
