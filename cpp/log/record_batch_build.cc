// Building RecordBatch v2 bytes: BuildBatch (records in, one batch out, CRC
// set) and the end-transaction control batch. Reading, validating and
// rewriting batches is record_batch.cc; the byte layout is in
// docs/log-format.md.
#include <chrono>
#include <string>

#include "headrace/record_batch.h"
#include "log/coding.h"
#include "log/record_batch_internal.h"

namespace headrace {

using namespace coding;  // NOLINT: the encoding helpers are the vocabulary here
using namespace batch;   // NOLINT

namespace {

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

void AppendRecord(std::string* out, const RecordInput& r, int64_t ts_delta, int32_t delta) {
  std::string body;
  body.push_back(0);  // attributes
  AppendVarint(&body, ts_delta);
  AppendVarint(&body, delta);
  auto put = [&body](const std::optional<std::string>& s) {
    AppendVarint(&body, s ? static_cast<int64_t>(s->size()) : -1);
    if (s) body.append(*s);
  };
  put(r.key);
  put(r.value);
  AppendVarint(&body, static_cast<int64_t>(r.headers.size()));
  for (const RecordHeader& h : r.headers) {
    AppendVarint(&body, static_cast<int64_t>(h.key.size()));
    body.append(h.key);
    put(h.value);
  }
  AppendVarint(out, static_cast<int64_t>(body.size()));
  out->append(body);
}

}  // namespace

std::string BuildBatch(const std::vector<RecordInput>& records,
                       const BatchProducerFields& producer, bool no_timestamp_is_now) {
  int64_t now = no_timestamp_is_now ? NowMs() : kNoTimestamp.value();
  auto ts_of = [now](const RecordInput& r) {
    return r.timestamp == kNoTimestamp ? now : r.timestamp.value();
  };
  int64_t base_ts = records.empty() ? now : ts_of(records.front());
  int64_t max_ts = records.empty() ? now : base_ts;
  std::string out(kBatchHeaderSize, '\0');
  for (size_t i = 0; i < records.size(); ++i) {
    int64_t ts = ts_of(records[i]);
    if (ts > max_ts) max_ts = ts;
    AppendRecord(&out, records[i], ts - base_ts, static_cast<int32_t>(i));
  }
  auto* p = reinterpret_cast<uint8_t*>(out.data());
  int32_t count = static_cast<int32_t>(records.size());
  StoreBE64(p + kBaseOffsetPos, 0);
  StoreBE32(p + kLengthPos, static_cast<uint32_t>(out.size() - kBatchLogOverhead));
  StoreBE32(p + kLeaderEpochPos, static_cast<uint32_t>(-1));
  p[kMagicPos] = kMagicV2;
  StoreBE16(p + kAttributesPos, static_cast<uint16_t>((producer.transactional ? 0x10 : 0) |
                                                      (producer.control ? 0x20 : 0)));
  StoreBE32(p + kLastOffsetDeltaPos, static_cast<uint32_t>(count > 0 ? count - 1 : 0));
  StoreBE64(p + kBaseTimestampPos, static_cast<uint64_t>(base_ts));
  StoreBE64(p + kMaxTimestampPos, static_cast<uint64_t>(max_ts));
  StoreBE64(p + kProducerIdPos, static_cast<uint64_t>(producer.producer_id));
  StoreBE16(p + kProducerEpochPos, static_cast<uint16_t>(producer.producer_epoch));
  StoreBE32(p + kBaseSequencePos, static_cast<uint32_t>(producer.base_sequence));
  StoreBE32(p + kRecordCountPos, static_cast<uint32_t>(count));
  StoreBE32(p + kCrcPos, ComputeCrc({p, out.size()}));
  return out;
}

std::string BuildEndTxnMarkerBatch(int64_t producer_id, int16_t producer_epoch,
                                   const EndTxnMarker& marker, TimestampMs timestamp) {
  std::string key(4, '\0'), value(6, '\0');
  auto* k = reinterpret_cast<uint8_t*>(key.data());
  auto* v = reinterpret_cast<uint8_t*>(value.data());
  StoreBE16(k, 0);
  StoreBE16(k + 2, static_cast<uint16_t>(marker.commit ? kControlTypeCommit : kControlTypeAbort));
  StoreBE16(v, 0);
  StoreBE32(v + 2, static_cast<uint32_t>(marker.coordinator_epoch));
  BatchProducerFields fields;
  fields.producer_id = producer_id;
  fields.producer_epoch = producer_epoch;
  fields.transactional = true;
  fields.control = true;
  return BuildBatch({{key, value, {}, timestamp}}, fields);
}

}  // namespace headrace
