#include "broker/coordinator/txn/txn_metadata.h"

#include <map>
#include <strings.h>
#include <vector>

#include "common/output_buffer.h"
#include "protocol/wire.h"

namespace headrace::broker::txn {
namespace {

constexpr int16_t kVersion = 0;
constexpr const char* kNames[] = {"Empty",          "Ongoing",       "PrepareCommit",
                                  "PrepareAbort",   "CompleteCommit", "CompleteAbort",
                                  "Dead",           "PrepareEpochFence"};

std::span<uint8_t> Bytes(std::string_view b) {
  return {reinterpret_cast<uint8_t*>(const_cast<char*>(b.data())), b.size()};
}

Status Bad(const char* what) { return Status::Corruption(std::string("transaction record: ") + what); }

}  // namespace

const char* TxnStateName(TxnState s) {
  auto i = static_cast<size_t>(s);
  return i < std::size(kNames) ? kNames[i] : "Unknown";
}

std::optional<TxnState> TxnStateFromName(std::string_view name) {
  for (size_t i = 0; i < std::size(kNames); ++i) {
    if (name.size() == std::strlen(kNames[i]) &&
        strncasecmp(name.data(), kNames[i], name.size()) == 0) {
      return static_cast<TxnState>(i);
    }
  }
  return std::nullopt;
}

std::string EncodeTxnKey(const std::string& transactional_id) {
  OutputBuffer out;
  protocol::Writer w(out);
  w.Int16(kVersion);
  w.String(transactional_id, /*compact=*/false);
  return out.Flatten();
}

std::string EncodeTxnValue(const TxnMetadata& m) {
  OutputBuffer out;
  protocol::Writer w(out);
  w.Int16(kVersion);
  w.Int64(m.producer_id);
  w.Int16(m.producer_epoch);
  w.Int32(m.timeout_ms);
  w.Int8(static_cast<int8_t>(m.state));
  std::map<std::string, std::vector<int32_t>> by_topic;
  for (const auto& [topic, p] : m.partitions) by_topic[topic].push_back(p);
  w.Int32(static_cast<int32_t>(by_topic.size()));
  for (const auto& [topic, ps] : by_topic) {
    w.String(topic, false);
    w.Int32(static_cast<int32_t>(ps.size()));
    for (int32_t p : ps) w.Int32(p);
  }
  w.Int64(m.update_ms);
  w.Int64(m.start_ms);
  return out.Flatten();
}

Result<std::string> DecodeTxnKey(std::string_view bytes) {
  protocol::Reader r(Bytes(bytes));
  int16_t version = 0;
  std::string id;
  if (!r.Int16(&version).ok() || version != kVersion) return Bad("unknown key version");
  if (!r.String(&id, false).ok()) return Bad("truncated key");
  return id;
}

Result<TxnMetadata> DecodeTxnValue(std::string_view bytes) {
  protocol::Reader r(Bytes(bytes));
  TxnMetadata m;
  int16_t version = 0;
  int8_t state = 0;
  int32_t topics = 0;
  if (!r.Int16(&version).ok() || version != kVersion) return Bad("unknown value version");
  if (!r.Int64(&m.producer_id).ok() || !r.Int16(&m.producer_epoch).ok() ||
      !r.Int32(&m.timeout_ms).ok() || !r.Int8(&state).ok() || !r.Int32(&topics).ok()) {
    return Bad("truncated value");
  }
  if (state < 0 || state > static_cast<int8_t>(TxnState::kPrepareEpochFence)) {
    return Bad("unknown state");
  }
  m.state = static_cast<TxnState>(state);
  for (int32_t t = 0; t < topics; ++t) {
    std::string topic;
    int32_t n = 0;
    if (!r.String(&topic, false).ok() || !r.Int32(&n).ok() || n < 0) return Bad("truncated topic");
    for (int32_t i = 0; i < n; ++i) {
      int32_t p = 0;
      if (!r.Int32(&p).ok()) return Bad("truncated partitions");
      m.partitions.insert({topic, p});
    }
  }
  if (!r.Int64(&m.update_ms).ok() || !r.Int64(&m.start_ms).ok()) return Bad("truncated times");
  return m;
}

}  // namespace headrace::broker::txn
