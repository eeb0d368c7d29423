#include "producer.h"

#include <sys/prctl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <thread>
#include <vector>

#include "client.h"
#include "clock.h"

namespace headrace::loadgen {
namespace {

// Delivery report callback: runs on one thread at a time, the one that
// serves the client's queue: the instance's poller thread (PollReports), or
// in transactional mode the sending thread itself (RunProducer), which alone
// writes delivered/failed/bytes/latency_ns/error.
void OnDelivery(rd_kafka_t*, const rd_kafka_message_t* m, void* opaque) {
  auto* out = static_cast<ProducerResult*>(opaque);
  uint64_t now = NowNs();
  if (m->err != RD_KAFKA_RESP_ERR_NO_ERROR) {
    ++out->failed;
    if (out->error.empty()) out->error = rd_kafka_err2str(m->err);
    return;
  }
  ++out->delivered;
  out->bytes += m->len;
  uint64_t sent = reinterpret_cast<uintptr_t>(m->_private);
  out->latency_ns.Record(now > sent ? now - sent : 0);
}

uint64_t ShareOf(uint64_t total, int parts, int index) {
  return total / parts + (static_cast<uint64_t>(index) < total % parts ? 1 : 0);
}

// Sends one message, waiting for local queue space if needed: serving the
// client's queue itself when `serve` is set (no poller thread), else
// sleeping while the poller drains it. Returns false on a non-retriable
// error (put in *send_error).
bool Send(rd_kafka_t* serve, rd_kafka_topic_t* topic, int32_t partition,
          std::vector<char>& payload, ProducerResult* out, std::string* send_error) {
  for (;;) {
    uint64_t now = NowNs();
    StampPayload(payload.data(), static_cast<int>(payload.size()), now);
    void* opaque = reinterpret_cast<void*>(static_cast<uintptr_t>(now));
    if (rd_kafka_produce(topic, partition, RD_KAFKA_MSG_F_COPY, payload.data(), payload.size(),
                         nullptr, 0, opaque) == 0) {
      if (out->sent++ == 0) out->first_send_ns = now;
      return true;
    }
    rd_kafka_resp_err_t err = rd_kafka_last_error();
    if (err != RD_KAFKA_RESP_ERR__QUEUE_FULL) {
      *send_error = rd_kafka_err2str(err);
      return false;
    }
    if (serve != nullptr) {
      rd_kafka_poll(serve, 1);
    } else {
      SleepNs(100000);  // the poller drains delivery reports meanwhile
    }
  }
}

// With a rate set, waits until message `i` is due. Sleeps only when it is
// at least kPaceQuantumNs early, so messages go in small bursts and the
// generator does not spend a core on wakeups (on this VM each wakeup is
// expensive) that the broker should have. Late messages go at once.
constexpr uint64_t kPaceQuantumNs = 200000;

void Pace(double rate, uint64_t start_ns, uint64_t i) {
  if (rate <= 0) return;
  uint64_t due = start_ns + static_cast<uint64_t>(static_cast<double>(i) * 1e9 / rate);
  uint64_t now = NowNs();
  if (due >= now + kPaceQuantumNs) SleepNs(due - now);
}

// Serves delivery reports as soon as they arrive (so latency is measured
// when the broker's answer is processed, not when the sender gets round to
// polling) until *stop is set and nothing is left in the client.
void PollReports(rd_kafka_t* rk, const std::atomic<bool>* stop) {
  while (!stop->load() || rd_kafka_outq_len(rk) > 0) rd_kafka_poll(rk, 10);
}

// Runs one transactional API call; false (and *error) if it failed.
bool TxnCall(rd_kafka_error_t* e, const char* what, std::string* error) {
  if (e == nullptr) return true;
  if (error->empty()) *error = std::string(what) + ": " + rd_kafka_error_string(e);
  rd_kafka_error_destroy(e);
  return false;
}

bool Commit(rd_kafka_t* rk, ProducerResult* out, std::string* error) {
  uint64_t t0 = NowNs();
  if (!TxnCall(rd_kafka_commit_transaction(rk, 60000), "commit_transaction", error)) return false;
  out->commit_ns.Record(NowNs() - t0);
  ++out->txns;
  return true;
}

// Connects and delivers (and commits) one message, then clears *out so that
// no figure includes it. False (and *error) if that failed.
bool Warmup(rd_kafka_t* rk, rd_kafka_topic_t* topic, bool txn, std::vector<char>& payload,
            ProducerResult* out, std::string* error) {
  if (txn && !TxnCall(rd_kafka_begin_transaction(rk), "begin_transaction", error)) return false;
  if (!Send(rk, topic, 0, payload, out, error)) return false;
  if (txn) {
    if (!TxnCall(rd_kafka_commit_transaction(rk, 60000), "commit_transaction", error)) return false;
  } else if (rd_kafka_flush(rk, 60000) != RD_KAFKA_RESP_ERR_NO_ERROR) {
    *error = "warm-up flush timed out";
    return false;
  }
  if (out->delivered != 1) {
    *error = "warm-up message not delivered: " + out->error;
    return false;
  }
  *out = ProducerResult{};
  return true;
}

}  // namespace

void RunProducer(const Options& options, int index, ProducerResult* out) {
  const bool txn = options.txn_records > 0;
  Options o = options;
  if (txn) {
    o.producer_conf.emplace_back("enable.idempotence", "true");
    o.producer_conf.emplace_back(
        "transactional.id", "headrace-loadgen-" + std::to_string(getpid()) + "-" + std::to_string(index));
  }
  rd_kafka_t* rk = NewProducer(o, &OnDelivery, out, &out->error);
  if (rk == nullptr) return;
  rd_kafka_topic_t* topic = rd_kafka_topic_new(rk, o.topic.c_str(), nullptr);
  std::vector<char> payload(o.message_bytes, 'x');
  std::string send_error;
  bool ready = !txn || TxnCall(rd_kafka_init_transactions(rk, 60000), "init_transactions", &send_error);
  if (ready && o.warmup) ready = Warmup(rk, topic, txn, payload, out, &send_error);
  // A transactional instance serves its own delivery reports: commit's
  // flush polls the client's queue in 10 ms waits, so a second thread taking
  // the reports from it would stall each commit by up to 10 ms.
  std::atomic<bool> stop{false};
  std::thread poller;
  if (!txn) poller = std::thread(PollReports, rk, &stop);
  rd_kafka_t* serve = txn ? rk : nullptr;
  prctl(PR_SET_TIMERSLACK, 1UL);  // precise sleeps in Pace (default slack is 50 us)
  const uint64_t quota = !ready ? 0
                         : o.count > 0 ? ShareOf(static_cast<uint64_t>(o.count), o.producers, index)
                                       : UINT64_MAX;
  const double rate = o.rate / o.producers;
  const uint64_t start = NowNs();
  const uint64_t deadline =
      o.count > 0 ? UINT64_MAX : start + static_cast<uint64_t>(o.duration_s * 1e9);
  int32_t next_partition = index % o.partitions;
  int64_t in_txn = -1;  // messages in the open transaction; -1 = none open
  for (uint64_t i = 0; i < quota; ++i) {
    Pace(rate, start, i);
    if (NowNs() >= deadline) break;
    if (txn && in_txn < 0) {
      if (!TxnCall(rd_kafka_begin_transaction(rk), "begin_transaction", &send_error)) break;
      in_txn = 0;
    }
    int32_t partition = RD_KAFKA_PARTITION_UA;
    if (o.partitioner == Partitioner::kRoundRobin) {
      partition = next_partition;
      if (++next_partition == o.partitions) next_partition = 0;
    }
    if (!Send(serve, topic, partition, payload, out, &send_error)) break;
    if (txn && ++in_txn == o.txn_records) {
      in_txn = -1;
      if (!Commit(rk, out, &send_error)) break;
    }
  }
  if (in_txn >= 0) {
    if (send_error.empty()) {
      Commit(rk, out, &send_error);
    } else {
      TxnCall(rd_kafka_abort_transaction(rk, 60000), "abort_transaction", &send_error);
    }
  }
  stop = true;
  if (poller.joinable()) {
    poller.join();
  } else {
    while (rd_kafka_outq_len(rk) > 0) rd_kafka_poll(rk, 10);
  }
  out->end_ns = NowNs();
  if (out->error.empty()) out->error = send_error;
  rd_kafka_topic_destroy(topic);
  rd_kafka_destroy(rk);
}

}  // namespace headrace::loadgen
