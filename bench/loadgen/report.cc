#include "report.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>

#include <librdkafka/rdkafka.h>

namespace headrace::loadgen {
namespace {

// One direction's aggregate (produce or consume).
struct Flow {
  uint64_t msgs = 0;
  uint64_t bytes = 0;
  double seconds = 0;
  uint64_t errors = 0;
  Histogram latency_ns;
  std::string error;
  double msgs_per_s() const { return seconds > 0 ? msgs / seconds : 0; }
  double mb_per_s() const { return seconds > 0 ? bytes / seconds / 1e6 : 0; }
};

Flow Aggregate(const std::vector<ProducerResult>& ps) {
  Flow f;
  uint64_t begin = UINT64_MAX, end = 0;
  for (const auto& p : ps) {
    f.msgs += p.delivered;
    f.bytes += p.bytes;
    f.errors += p.failed + (p.error.empty() ? 0 : 1);
    if (f.error.empty()) f.error = p.error;
    f.latency_ns.Merge(p.latency_ns);
    if (p.sent > 0) begin = std::min(begin, p.first_send_ns);
    end = std::max(end, p.end_ns);
  }
  if (end > begin) f.seconds = (end - begin) / 1e9;
  return f;
}

Flow Aggregate(const std::vector<ConsumerResult>& cs) {
  Flow f;
  uint64_t begin = UINT64_MAX, end = 0;
  for (const auto& c : cs) {
    f.msgs += c.received;
    f.bytes += c.bytes;
    f.errors += c.error.empty() ? 0 : 1;
    if (f.error.empty()) f.error = c.error;
    f.latency_ns.Merge(c.e2e_ns);
    if (c.received > 0) {
      begin = std::min(begin, c.start_ns);
      end = std::max(end, c.last_ns);
    }
  }
  if (end > begin) f.seconds = (end - begin) / 1e9;
  return f;
}

double Us(uint64_t ns) { return ns / 1e3; }

std::string LatencyJson(const Histogram& h) {
  char buf[256];
  std::snprintf(buf, sizeof(buf), R"({"count":%llu,"p50":%.1f,"p99":%.1f,"p999":%.1f,"max":%.1f})",
                static_cast<unsigned long long>(h.count()), Us(h.Quantile(0.5)),
                Us(h.Quantile(0.99)), Us(h.Quantile(0.999)), Us(h.max()));
  return buf;
}

std::string Escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) >= 0x20) out += c;
  }
  return out;
}

std::string FlowJson(const Flow& f) {
  char buf[256];
  std::snprintf(buf, sizeof(buf),
                R"({"msgs":%llu,"bytes":%llu,"seconds":%.4f,"msgs_per_s":%.1f,"mb_per_s":%.2f,)"
                R"("errors":%llu,"error":")",
                static_cast<unsigned long long>(f.msgs), static_cast<unsigned long long>(f.bytes),
                f.seconds, f.msgs_per_s(), f.mb_per_s(), static_cast<unsigned long long>(f.errors));
  return buf + Escape(f.error) + R"(","latency_us":)" + LatencyJson(f.latency_ns) + "}";
}

void PrintFlow(FILE* out, const char* name, const char* latency_name, const Flow& f) {
  std::fprintf(out, "%-8s %llu msgs, %.1f MB in %.3f s: %.0f msgs/s, %.2f MB/s, %llu errors%s%s\n",
               name, static_cast<unsigned long long>(f.msgs), f.bytes / 1e6, f.seconds,
               f.msgs_per_s(), f.mb_per_s(), static_cast<unsigned long long>(f.errors),
               f.error.empty() ? "" : ": ", f.error.c_str());
  if (f.latency_ns.count() > 0)
    std::fprintf(out, "%-8s %s latency us: p50 %.1f  p99 %.1f  p99.9 %.1f  max %.1f\n", name,
                 latency_name, Us(f.latency_ns.Quantile(0.5)), Us(f.latency_ns.Quantile(0.99)),
                 Us(f.latency_ns.Quantile(0.999)), Us(f.latency_ns.max()));
}

const char* ModeName(Mode m) {
  return m == Mode::kProduce ? "produce" : m == Mode::kConsume ? "consume" : "both";
}

}  // namespace

int PrintReport(const Options& o, const std::vector<ProducerResult>& producers,
                const std::vector<ConsumerResult>& consumers, const RunTotals& totals) {
  Flow prod = Aggregate(producers), cons = Aggregate(consumers);
  // Bytes moved through the broker: produced (produce, both) or fetched.
  uint64_t moved = o.mode == Mode::kConsume ? cons.bytes : prod.bytes;
  double cpu_per_gb = totals.broker_cpu_s >= 0 && moved > 0 ? totals.broker_cpu_s / (moved / 1e9) : -1;
  FILE* human = o.json ? stderr : stdout;
  if (!producers.empty()) PrintFlow(human, "produce", "delivery", prod);
  uint64_t txns = 0;
  Histogram commit_ns;
  for (const auto& p : producers) {
    txns += p.txns;
    commit_ns.Merge(p.commit_ns);
  }
  if (txns > 0)
    std::fprintf(human, "txn      %llu transactions of up to %lld messages, commit latency us: p50 %.1f  p90 %.1f  p99 %.1f  max %.1f\n",
                 static_cast<unsigned long long>(txns), static_cast<long long>(o.txn_records),
                 Us(commit_ns.Quantile(0.5)), Us(commit_ns.Quantile(0.9)), Us(commit_ns.Quantile(0.99)), Us(commit_ns.max()));
  if (!consumers.empty()) PrintFlow(human, "consume", "end-to-end", cons);
  if (totals.broker_cpu_s >= 0)
    std::fprintf(human, "broker   %.2f CPU s, %.2f CPU s per GB moved\n", totals.broker_cpu_s,
                 cpu_per_gb);
  std::fprintf(human, "client   %.2f CPU s over %.2f s wall\n", totals.client_cpu_s, totals.wall_s);
  if (totals.broker_wait_s >= 0)
    std::fprintf(human, "broker   %.2f s runnable but waiting for a CPU\n", totals.broker_wait_s);
  if (o.json) {
    std::string line = std::string(R"({"mode":")") + ModeName(o.mode) + R"(","topic":")" +
                       Escape(o.topic) + R"(","librdkafka":")" + rd_kafka_version_str() + "\"";
    char buf[512];
    std::snprintf(buf, sizeof(buf),
                  R"(,"partitions":%d,"size":%d,"acks":"%s","producers":%d,"consumers":%d,)"
                  R"("rate":%.0f,"broker_cpu_s":%.3f,"broker_cpu_s_per_gb":%.3f,)"
                  R"("client_cpu_s":%.3f,"wall_s":%.3f,"broker_wait_s":%.3f)",
                  o.partitions, o.message_bytes, o.acks.c_str(), o.producers, o.consumers, o.rate,
                  totals.broker_cpu_s, cpu_per_gb, totals.client_cpu_s, totals.wall_s,
                  totals.broker_wait_s);
    line += buf;
    if (!producers.empty()) line += R"(,"produce":)" + FlowJson(prod);
    if (!consumers.empty()) line += R"(,"consume":)" + FlowJson(cons);
    if (o.txn_records > 0)
      line += R"(,"txn":{"records_per_txn":)" + std::to_string(o.txn_records) + R"(,"commit_latency_us":)" +
              LatencyJson(commit_ns) + "}";
    std::printf("%s}\n", line.c_str());
    std::fflush(stdout);
  }
  return static_cast<int>(prod.errors + cons.errors);
}

}  // namespace headrace::loadgen
