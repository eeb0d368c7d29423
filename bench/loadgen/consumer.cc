#include "consumer.h"

#include <librdkafka/rdkafka.h>

#include <vector>

#include "client.h"
#include "clock.h"

namespace headrace::loadgen {
namespace {

constexpr int kMetadataTimeoutMs = 10000;

// This instance's partitions, positioned at the start, or at the current
// high watermark (so exactly the messages produced from now on are read).
rd_kafka_topic_partition_list_t* Positions(const Options& o, int index, rd_kafka_t* rk,
                                           std::string* error) {
  auto* list = rd_kafka_topic_partition_list_new(o.partitions / o.consumers + 1);
  bool from_start = o.mode == Mode::kConsume && o.from_beginning;
  for (int32_t p = index; p < o.partitions; p += o.consumers) {
    int64_t offset = RD_KAFKA_OFFSET_BEGINNING;
    if (!from_start) {
      int64_t low = 0, high = 0;
      rd_kafka_resp_err_t err = rd_kafka_query_watermark_offsets(rk, o.topic.c_str(), p, &low,
                                                                 &high, kMetadataTimeoutMs);
      if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
        *error = std::string("query watermarks: ") + rd_kafka_err2str(err);
        rd_kafka_topic_partition_list_destroy(list);
        return nullptr;
      }
      offset = high;
    }
    rd_kafka_topic_partition_list_add(list, o.topic.c_str(), p)->offset = offset;
  }
  return list;
}

// Counts one message into `out`; returns false if it was an error event
// other than partition EOF (recorded in out->error).
bool Take(const rd_kafka_message_t* m, ConsumerControl* control, ConsumerResult* out) {
  if (m->err != RD_KAFKA_RESP_ERR_NO_ERROR) {
    if (out->error.empty()) out->error = rd_kafka_message_errstr(m);
    return false;
  }
  uint64_t now = NowNs();
  if (out->received++ == 0) out->first_ns = now;
  out->last_ns = now;
  out->bytes += m->len;
  uint64_t sent = PayloadStamp(m->payload, m->len);
  if (sent != 0) out->e2e_ns.Record(now > sent ? now - sent : 0);
  control->received.fetch_add(1, std::memory_order_relaxed);
  return true;
}

void PollLoop(const Options& o, rd_kafka_t* rk, int assigned, ConsumerControl* control,
              ConsumerResult* out) {
  const bool stop_at_eof = o.mode == Mode::kConsume && o.from_beginning;
  const uint64_t idle_ns = static_cast<uint64_t>(o.idle_timeout_s * 1e9);
  int at_eof = 0;
  uint64_t last_data = NowNs();
  for (;;) {
    if (control->received.load(std::memory_order_relaxed) >= control->target.load()) return;
    if (stop_at_eof && at_eof >= assigned) return;
    rd_kafka_message_t* m = rd_kafka_consumer_poll(rk, 100);
    uint64_t now = NowNs();
    if (m == nullptr) {
      if (now - last_data > idle_ns) return;
      continue;
    }
    if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
      ++at_eof;  // once per partition per reached end (enough for stop_at_eof)
    } else if (Take(m, control, out)) {
      last_data = now;
    }
    rd_kafka_message_destroy(m);
  }
}

}  // namespace

void RunConsumer(const Options& o, int index, ConsumerControl* control, ConsumerResult* out) {
  rd_kafka_t* rk = NewConsumer(o, &out->error);
  rd_kafka_topic_partition_list_t* list = rk ? Positions(o, index, rk, &out->error) : nullptr;
  if (list != nullptr) {
    rd_kafka_resp_err_t err = rd_kafka_assign(rk, list);
    if (err != RD_KAFKA_RESP_ERR_NO_ERROR) out->error = rd_kafka_err2str(err);
  }
  const int assigned = list ? list->cnt : 0;
  control->ready.fetch_add(1);
  out->start_ns = NowNs();
  if (list != nullptr && out->error.empty() && assigned > 0) PollLoop(o, rk, assigned, control, out);
  if (list != nullptr) rd_kafka_topic_partition_list_destroy(list);
  if (rk != nullptr) {
    rd_kafka_consumer_close(rk);
    rd_kafka_destroy(rk);
  }
}

}  // namespace headrace::loadgen
