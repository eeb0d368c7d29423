#include "broker/server/metrics_render.h"

#include <algorithm>
#include <map>
#include <set>
#include <utility>

#include "broker/coordinator/group/group_coordinators.h"
#include "broker/share/share_registry.h"
#include "broker/security/quota/quota_manager.h"
#include "broker/coordinator/txn/txn_coordinators.h"
#include "common/prometheus_text.h"

namespace headrace::broker {
namespace {

using metrics::Labels;
using metrics::PrometheusText;

// A histogram family in seconds with its p50 and p99 gauges.
struct LatencyFamily {
  const char* name;  // e.g. "headrace_request_duration"
  const char* help;
};

void WriteQuantiles(PrometheusText& p, const std::string& base,
                    const std::vector<std::pair<Labels, metrics::HistogramSnapshot>>& series) {
  for (const auto& [q, suffix] : {std::pair{0.5, "_p50_seconds"}, std::pair{0.99, "_p99_seconds"}}) {
    p.Family(base + suffix, "gauge",
             std::string(q == 0.5 ? "Median" : "99th percentile") + " of " + base +
                 "_seconds since start, from its buckets.");
    for (const auto& [labels, snap] : series) p.Sample(base + suffix, labels, snap.Quantile(q) / 1e9);
  }
}

void WriteHistograms(PrometheusText& p, const LatencyFamily& f,
                     const std::vector<std::pair<Labels, metrics::HistogramSnapshot>>& series) {
  const std::string name = std::string(f.name) + "_seconds";
  p.Family(name, "histogram", f.help);
  for (const auto& [labels, snap] : series) p.HistogramSeconds(name, labels, snap);
  WriteQuantiles(p, f.name, series);
}

// One series per API that `histogram_of` has a histogram for, labelled by name.
std::vector<std::pair<Labels, metrics::HistogramSnapshot>> SeriesByApi(
    const BrokerMetrics& m,
    const metrics::Histogram* (BrokerMetrics::*histogram_of)(int16_t) const) {
  std::vector<std::pair<Labels, metrics::HistogramSnapshot>> series;
  for (int16_t key = 0; key <= BrokerMetrics::kMaxApiKey; ++key) {
    const metrics::Histogram* h = (m.*histogram_of)(key);
    if (h == nullptr) continue;
    const protocol::ApiInfo* info = protocol::FindApi(key);
    series.push_back({{{"api", info ? info->name : std::to_string(key)}}, h->Snapshot()});
  }
  return series;
}

void WriteRequests(PrometheusText& p, const BrokerMetrics& m) {
  const auto series = SeriesByApi(m, &BrokerMetrics::request_latency);
  p.Family("headrace_requests_total", "counter", "Requests answered, by Kafka API.");
  for (const auto& [labels, snap] : series) p.Sample("headrace_requests_total", labels, snap.count);
  WriteHistograms(p, {"headrace_request_duration",
                      "Time from a request's arrival to its answer (long polls and acks=all "
                      "waits included), by Kafka API."},
                  series);
  WriteHistograms(p, {"headrace_request_handler_duration",
                      "Time a request spent in its handler on the I/O thread (decode, checks, "
                      "appends or reads, a direct answer), without waits in the purgatory or "
                      "for other group members, by Kafka API."},
                  SeriesByApi(m, &BrokerMetrics::handler_latency));
}

// Per topic: partitions, segments, bytes on disk here (and the totals).
void WriteTopics(PrometheusText& p, BrokerContext& ctx, const BrokerMetrics* m) {
  struct Row {
    int64_t partitions = 0, segments = 0, bytes = 0;
  };
  std::map<std::string, Row> rows;
  int64_t leaders = 0, offline = 0, under_replicated = 0;
  for (const std::shared_ptr<const Topic>& t : ctx.topics().ListTopics()) {
    Row& r = rows[t->name];
    for (const std::shared_ptr<Partition>& part : t->partitions) {
      if (!part) continue;
      ++r.partitions;
      if (part->offline()) {
        ++offline;
        continue;
      }
      r.segments += part->segment_count();
      r.bytes += part->size_bytes();
      if (part->is_leader()) {
        ++leaders;
        if (static_cast<size_t>(part->isr_size()) < part->replicas().size()) ++under_replicated;
      }
    }
  }
  auto per_topic = [&](const char* name, const char* type, const char* help, auto value) {
    p.Family(name, type, help);
    for (const auto& [topic, row] : rows) p.Sample(name, {{"topic", topic}}, value(topic, row));
  };
  per_topic("headrace_topic_partitions", "gauge", "Partitions of the topic hosted here.",
            [](const std::string&, const Row& r) { return r.partitions; });
  per_topic("headrace_topic_log_segments", "gauge", "Log segments of the topic's partitions here.",
            [](const std::string&, const Row& r) { return r.segments; });
  per_topic("headrace_topic_log_size_bytes", "gauge",
            "Bytes of the topic's partition logs here.",
            [](const std::string&, const Row& r) { return r.bytes; });
  if (m != nullptr) {
    auto counters = m->Topics();
    auto counter = [&](size_t which) {
      return [&counters, which](const std::string& topic, const Row&) -> uint64_t {
        auto it = counters.find(topic);
        return it == counters.end() ? 0 : it->second->Value(which);
      };
    };
    per_topic("headrace_topic_bytes_in_total", "counter",
              "Bytes of record batches appended by produce requests (leader).",
              counter(TopicMetrics::kBytesIn));
    per_topic("headrace_topic_records_in_total", "counter",
              "Records appended by produce requests (leader).", counter(TopicMetrics::kRecordsIn));
    per_topic("headrace_topic_bytes_out_total", "counter",
              "Bytes of record batches sent in fetch responses to consumers.",
              counter(TopicMetrics::kBytesOut));
  }
  int64_t partitions = 0, segments = 0;
  for (const auto& [topic, row] : rows) {
    partitions += row.partitions;
    segments += row.segments;
  }
  const std::pair<const char*, std::pair<const char*, int64_t>> totals[] = {
      {"headrace_partitions", {"Partitions hosted here.", partitions}},
      {"headrace_partitions_leader", {"Partitions this broker leads.", leaders}},
      {"headrace_partitions_offline", {"Partitions whose log is offline (storage error).", offline}},
      {"headrace_partitions_under_replicated",
       {"Led partitions whose ISR is smaller than their replica set.", under_replicated}},
      {"headrace_log_segments", {"Log segments of every partition here.", segments}},
  };
  for (const auto& [name, doc] : totals) {
    p.Family(name, "gauge", doc.first);
    p.Sample(name, {}, doc.second);
  }
}

// Lag of each group on each topic this broker leads: the sum over its
// partitions with a committed offset of max(0, HW - committed).
void WriteGroupLag(PrometheusText& p, BrokerContext& ctx) {
  p.Family("headrace_group_lag_records", "gauge",
           "Records between a consumer group's committed offset and the high watermark, "
           "summed over the topic's partitions led here.");
  if (!ctx.group_coordinators) return;
  for (const auto& [partition, groups] : ctx.group_coordinators->All()) {
    for (const group::GroupListing& g : groups->ListGroups({})) {
      std::vector<group::FetchedOffset> offsets;
      if (groups->FetchOffsets(g.group_id, std::nullopt, &offsets) != KafkaError::kNone) continue;
      std::map<std::string, int64_t> lag;
      for (const group::FetchedOffset& o : offsets) {
        if (o.committed.offset < 0) continue;
        std::shared_ptr<Partition> part = ctx.topics().FindPartition(o.topic, o.partition);
        if (!part || !part->is_leader()) continue;
        lag[o.topic] += std::max<int64_t>(0, part->high_watermark().value() - o.committed.offset);
      }
      for (const auto& [topic, records] : lag) {
        p.Sample("headrace_group_lag_records", {{"group", g.group_id}, {"topic", topic}}, records);
      }
    }
  }
}

void WriteTransactions(PrometheusText& p, BrokerContext& ctx) {
  p.Family("headrace_transactions", "gauge",
           "Transactional ids known to the transaction coordinators here, by state.");
  if (ctx.txn_coordinators == nullptr) return;
  std::map<std::string, int64_t> by_state;
  for (const auto& [partition, txns] : ctx.txn_coordinators->All()) {
    for (const txn::TxnListing& t : txns->List({}, {}, -1)) ++by_state[txn::TxnStateName(t.state)];
  }
  for (const auto& [state, n] : by_state) p.Sample("headrace_transactions", {{"state", state}}, n);
}

void WriteCounter(PrometheusText& p, const char* name, const char* help, uint64_t v) {
  p.Family(name, "counter", help);
  p.Sample(name, {}, v);
}

// KIP-932 share-partitions led here (broker/share/share_registry.h). The
// counts live with the share-partitions, in memory: they start over when
// the broker restarts (docs/share-groups.md).
void WriteShareGroups(PrometheusText& p, const BrokerContext& ctx) {
  if (ctx.share_partitions == nullptr) return;
  const share::ShareRegistry::Totals t = ctx.share_partitions->Sum();
  p.Family("headrace_share_partitions", "gauge",
           "Share-partitions (share group x partition) this broker keeps in-flight state for.");
  p.Sample("headrace_share_partitions", {}, t.share_partitions);
  p.Family("headrace_share_records_acquired", "gauge",
           "Share-group records acquired by a member now (locked, awaiting acknowledgement).");
  p.Sample("headrace_share_records_acquired", {}, t.acquired_now);
  WriteCounter(p, "headrace_share_deliveries_total",
               "Share-group record deliveries (each acquisition of a record counts).",
               static_cast<uint64_t>(t.counters.acquired));
  WriteCounter(p, "headrace_share_redeliveries_total",
               "Share-group deliveries of a record delivered before.",
               static_cast<uint64_t>(t.counters.redelivered));
  WriteCounter(p, "headrace_share_records_acknowledged_total",
               "Share-group records ACCEPTed.", static_cast<uint64_t>(t.counters.acknowledged));
  WriteCounter(p, "headrace_share_records_archived_total",
               "Share-group records archived: rejected, gaps, or at the delivery limit.",
               static_cast<uint64_t>(t.counters.archived));
  WriteCounter(p, "headrace_share_records_released_total",
               "Share-group records released: RELEASE, lock expiry, a member leaving.",
               static_cast<uint64_t>(t.counters.released));
}

// Client quotas (docs/security.md "Quotas"), by quota kind.
void WriteQuotaThrottles(PrometheusText& p, const BrokerContext& ctx) {
  if (ctx.quotas == nullptr) return;
  static const std::pair<quota::QuotaKind, const char*> kKinds[] = {
      {quota::QuotaKind::kProduce, "produce"},
      {quota::QuotaKind::kFetch, "fetch"},
      {quota::QuotaKind::kRequest, "request"}};
  p.Family("headrace_quota_throttled_responses_total", "counter",
           "Responses that carried a quota throttle, by quota.");
  for (const auto& [kind, name] : kKinds) {
    p.Sample("headrace_quota_throttled_responses_total", {{"quota", name}},
             ctx.quotas->throttled_responses(kind));
  }
  p.Family("headrace_quota_throttle_time_ms_total", "counter",
           "Sum of the throttle times given to clients over their quota, in ms, by quota.");
  for (const auto& [kind, name] : kKinds) {
    p.Sample("headrace_quota_throttle_time_ms_total", {{"quota", name}},
             ctx.quotas->throttle_time_ms_total(kind));
  }
}

}  // namespace

std::string RenderMetrics(BrokerContext& ctx, const BrokerMetrics* m, const ServerGauges& server) {
  PrometheusText p;
  if (m != nullptr) WriteRequests(p, *m);
  p.Family("headrace_connections", "gauge", "Open client connections.");
  p.Sample("headrace_connections", {}, static_cast<int64_t>(server.active_connections));
  WriteCounter(p, "headrace_connections_accepted_total", "Connections accepted.",
               server.connections.admitted);
  WriteCounter(p, "headrace_connections_closed_total", "Accepted connections closed since.",
               server.connections.released);
  WriteCounter(p, "headrace_connections_refused_total",
               "Connections closed at once over max.connections or max.connections.per.ip.",
               server.connections.refused);
  WriteCounter(p, "headrace_network_thread_stalls_total",
               "Turns of a network thread off CPU for >= 10 ms in a blocking call (a disk "
               "write, a page fault, a lock) while its connections waited.",
               server.stalls.stalls);
  p.Family("headrace_network_thread_stall_seconds_total", "counter",
           "Time network threads spent off CPU in those stalls.");
  p.Sample("headrace_network_thread_stall_seconds_total", {},
           static_cast<double>(server.stalls.off_cpu_us) / 1e6);
  p.Family("headrace_network_thread_stall_max_seconds", "gauge",
           "The longest network-thread stall since the broker started.");
  p.Sample("headrace_network_thread_stall_max_seconds", {},
           static_cast<double>(server.stalls.max_off_cpu_us) / 1e6);
  WriteTopics(p, ctx, m);
  const Flusher::Stats flushes = ctx.state->flusher().stats();
  WriteCounter(p, "headrace_log_flushes_total", "Partition log fsyncs by the flusher.",
               flushes.fsyncs);
  WriteCounter(p, "headrace_log_flush_failures_total",
               "Failed partition log fsyncs (the partition went offline).", flushes.failures);
  if (m != nullptr) {
    WriteHistograms(p, {"headrace_log_flush_duration",
                        "Duration of one partition log fsync by the flusher (its thread or pool)."},
                    {{{}, m->fsync_latency.Snapshot()}});
    WriteCounter(p, "headrace_isr_shrinks_total", "ISR changes of led partitions that removed "
                 "a replica.", m->isr_shrinks.Value());
    WriteCounter(p, "headrace_isr_expands_total", "ISR changes of led partitions that added "
                 "a replica.", m->isr_expands.Value());
  }
  p.Family("headrace_purgatory_waiters", "gauge",
           "Delayed requests waiting for a partition offset (acks=all produces, long-poll "
           "fetches, offset commits).");
  p.Sample("headrace_purgatory_waiters", {}, static_cast<uint64_t>(ctx.state->purgatory().pending()));
  WriteGroupLag(p, ctx);
  WriteTransactions(p, ctx);
  WriteShareGroups(p, ctx);
  WriteQuotaThrottles(p, ctx);
  return p.Take();
}

}  // namespace headrace::broker
