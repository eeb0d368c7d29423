#include "broker/coordinator/group/group_records.h"

#include <cstring>

#include "broker/coordinator/group/group_record_io.h"

namespace headrace::broker::group {
namespace {

using record_io::In;
using record_io::Out;

constexpr int16_t kValueVersion = 0;

Status Truncated(const char* what) {
  return Status::Corruption(std::string("group log: truncated or invalid ") + what);
}

}  // namespace

std::string EncodeKey(const RecordKey& key) {
  Out o;
  o.I16(static_cast<int16_t>(key.kind));
  if (key.kind == RecordKind::kTxnEnd) {
    o.I64(key.producer_id);
    return o.Take();
  }
  o.Str(key.group);
  if (IsConsumerGroupMemberKind(key.kind)) o.Str(key.member_id);
  if (key.kind == RecordKind::kPendingTxnOffset) o.I64(key.producer_id);
  if (key.kind == RecordKind::kOffset || key.kind == RecordKind::kPendingTxnOffset) {
    o.Str(key.topic);
    o.I32(key.partition);
  }
  return o.Take();
}

namespace {

void PutOffset(Out& o, const OffsetValue& v) {
  o.I64(v.offset);
  o.I32(v.leader_epoch);
  o.NullableStr(v.metadata);
  o.I64(v.commit_time_ms);
}

OffsetValue GetOffset(In& in) {
  OffsetValue v;
  v.offset = in.I64();
  v.leader_epoch = in.I32();
  v.metadata = in.NullableStr();
  v.commit_time_ms = in.I64();
  return v;
}

}  // namespace

std::string EncodeOffsetValue(const OffsetValue& v) {
  Out o;
  o.I16(kValueVersion);
  PutOffset(o, v);
  return o.Take();
}

std::string EncodePendingTxnOffsetValue(const PendingTxnOffsetValue& v) {
  Out o;
  o.I16(kValueVersion);
  o.I16(v.producer_epoch);
  PutOffset(o, v.offset);
  return o.Take();
}

std::string EncodeTxnEndValue(const TxnEndValue& v) {
  Out o;
  o.I16(kValueVersion);
  o.I8(v.fence_only ? 2 : v.commit ? 1 : 0);
  o.I16(v.producer_epoch);
  o.I64(v.end_time_ms);
  return o.Take();
}

std::string EncodeGroupValue(const GroupValue& v) {
  Out o;
  o.I16(kValueVersion);
  o.Str(v.protocol_type);
  o.I32(v.generation);
  o.NullableStr(v.protocol);
  o.Str(v.leader);
  o.I64(v.state_time_ms);
  o.I32(static_cast<int32_t>(v.members.size()));
  for (const StoredMember& m : v.members) {
    o.Str(m.member_id);
    o.NullableStr(m.instance_id);
    o.Str(m.client_id);
    o.Str(m.client_host);
    o.I32(m.session_timeout_ms);
    o.I32(m.rebalance_timeout_ms);
    o.Bytes(m.metadata);
    o.Bytes(m.assignment);
  }
  return o.Take();
}

Result<RecordKey> DecodeKey(std::string_view bytes) {
  In in(bytes);
  RecordKey k;
  int16_t kind = in.I16();
  bool classic = kind >= static_cast<int16_t>(RecordKind::kOffset) &&
                 kind <= static_cast<int16_t>(RecordKind::kTxnEnd);
  bool consumer = kind >= static_cast<int16_t>(RecordKind::kConsumerGroupMetadata) &&
                  kind <= static_cast<int16_t>(RecordKind::kConsumerGroupCurrentMemberAssignment);
  if (!classic && !consumer)
    return Status::Corruption("group log: unknown key kind " + std::to_string(kind));
  k.kind = static_cast<RecordKind>(kind);
  if (k.kind == RecordKind::kTxnEnd) {
    k.producer_id = in.I64();
  } else {
    k.group = in.Str();
    if (IsConsumerGroupMemberKind(k.kind)) k.member_id = in.Str();
    if (k.kind == RecordKind::kPendingTxnOffset) k.producer_id = in.I64();
    if (k.kind == RecordKind::kOffset || k.kind == RecordKind::kPendingTxnOffset) {
      k.topic = in.Str();
      k.partition = in.I32();
    }
  }
  if (!in.ok() || !in.done()) return Truncated("key");
  return k;
}

Result<OffsetValue> DecodeOffsetValue(std::string_view bytes) {
  In in(bytes);
  if (in.I16() != kValueVersion) return Truncated("offset value version");
  OffsetValue v = GetOffset(in);
  if (!in.ok() || !in.done()) return Truncated("offset value");
  return v;
}

Result<PendingTxnOffsetValue> DecodePendingTxnOffsetValue(std::string_view bytes) {
  In in(bytes);
  if (in.I16() != kValueVersion) return Truncated("pending offset value version");
  PendingTxnOffsetValue v;
  v.producer_epoch = in.I16();
  v.offset = GetOffset(in);
  if (!in.ok() || !in.done()) return Truncated("pending offset value");
  return v;
}

Result<TxnEndValue> DecodeTxnEndValue(std::string_view bytes) {
  In in(bytes);
  if (in.I16() != kValueVersion) return Truncated("transaction end value version");
  TxnEndValue v;
  int8_t result = in.I8();
  if (in.ok() && !in.done()) {  // absent from records of older builds
    v.producer_epoch = in.I16();
    v.end_time_ms = in.I64();
  }
  if (!in.ok() || !in.done() || result < 0 || result > 2) return Truncated("transaction end value");
  v.commit = result == 1;
  v.fence_only = result == 2;
  return v;
}

Result<GroupValue> DecodeGroupValue(std::string_view bytes) {
  In in(bytes);
  if (in.I16() != kValueVersion) return Truncated("group value version");
  GroupValue v;
  v.protocol_type = in.Str();
  v.generation = in.I32();
  v.protocol = in.NullableStr();
  v.leader = in.Str();
  v.state_time_ms = in.I64();
  int32_t n = in.I32();
  for (int32_t i = 0; in.ok() && i < n; ++i) {
    StoredMember m;
    m.member_id = in.Str();
    m.instance_id = in.NullableStr();
    m.client_id = in.Str();
    m.client_host = in.Str();
    m.session_timeout_ms = in.I32();
    m.rebalance_timeout_ms = in.I32();
    m.metadata = in.Bytes();
    m.assignment = in.Bytes();
    v.members.push_back(std::move(m));
  }
  if (!in.ok() || !in.done()) return Truncated("group value");
  return v;
}

}  // namespace headrace::broker::group
