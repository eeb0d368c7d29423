#include "broker/broker_config.h"

#include <limits>

#include "broker/log_dirs.h"

namespace headrace::broker {
namespace {

constexpr int64_t kLongMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kIntMax = std::numeric_limits<int32_t>::max();

Status Bad(std::string_view key, const std::string& rule) {
  return Status::InvalidArgument(std::string(key) + ": " + rule);
}

Result<int64_t> Int(std::string_view key, std::string_view v, int64_t min, int64_t max) {
  auto r = ParseConfigInt(v, min, max);
  if (r.ok()) return r;
  return Bad(key, max == kLongMax ? "must be an integer >= " + std::to_string(min)
                                  : "must be an integer between " + std::to_string(min) +
                                        " and " + std::to_string(max));
}

Result<bool> Bool(std::string_view key, std::string_view v) {
  if (v == "true") return true;
  if (v == "false") return false;
  return Bad(key, "must be true or false");
}

// Topic-default properties that map 1:1 onto a topic key.
const std::map<std::string, std::string, std::less<>>& TopicSynonyms() {
  static const std::map<std::string, std::string, std::less<>> m = [] {
    std::map<std::string, std::string, std::less<>> out;
    for (const std::string& key : SupportedTopicConfigKeys()) {
      out.emplace(std::string(BrokerSynonymOf(key)), key);
    }
    return out;
  }();
  return m;
}

}  // namespace

Status BrokerConfig::Set(std::string_view key, std::string_view value) {
  auto mark = [&] { explicitly_set.insert(std::string(key)); return Status::OK(); };
  auto ms_from = [&](int64_t unit, int64_t* field) -> Status {
    HR_ASSIGN_OR_RETURN(int64_t v, Int(key, value, -1, kLongMax / unit));
    *field = v < 0 ? -1 : v * unit;
    return mark();
  };
  if (key == "node.id" || key == "broker.id") {
    HR_ASSIGN_OR_RETURN(int64_t v, Int(key, value, 0, kIntMax));
    node_id = static_cast<int32_t>(v);
  } else if (key == "listeners") {
    HR_ASSIGN_OR_RETURN(listeners, ParseListeners(key, value));
  } else if (key == "advertised.listeners") {
    HR_ASSIGN_OR_RETURN(advertised_listeners, ParseListeners(key, value));
  } else if (key == "log.dirs" || key == "log.dir") {
    if (value.empty()) return Bad(key, "must not be empty");
    HR_ASSIGN_OR_RETURN(log_dirs, ParseLogDirs(value));
    data_dir = log_dirs.front();
  } else if (key == "num.io.threads") {
    HR_ASSIGN_OR_RETURN(int64_t v, Int(key, value, 1, 1024));
    io_threads = static_cast<int32_t>(v);
  } else if (key == "cluster.id") {
    cluster_id = std::string(value);
  } else if (key == "auto.create.topics.enable") {
    HR_ASSIGN_OR_RETURN(auto_create_topics_enable, Bool(key, value));
  } else if (key == "num.partitions") {
    HR_ASSIGN_OR_RETURN(int64_t v, Int(key, value, 1, kIntMax));
    num_partitions = static_cast<int32_t>(v);
  } else if (key == "default.replication.factor") {
    HR_ASSIGN_OR_RETURN(int64_t v, Int(key, value, 1, 32767));
    default_replication_factor = static_cast<int16_t>(v);
  } else if (key == "socket.request.max.bytes") {
    HR_ASSIGN_OR_RETURN(int64_t v, Int(key, value, 1, kIntMax));
    socket_request_max_bytes = static_cast<int32_t>(v);
  } else if (key == "socket.send.buffer.bytes") {
    HR_ASSIGN_OR_RETURN(int64_t v, Int(key, value, -1, kIntMax));
    socket_send_buffer_bytes = static_cast<int32_t>(v);
  } else if (key == "socket.receive.buffer.bytes") {
    HR_ASSIGN_OR_RETURN(int64_t v, Int(key, value, -1, kIntMax));
    socket_receive_buffer_bytes = static_cast<int32_t>(v);
  } else if (key == "max.connections") {
    HR_ASSIGN_OR_RETURN(int64_t v, Int(key, value, 0, kIntMax));
    max_connections = static_cast<int32_t>(v);
  } else if (key == "max.connections.per.ip") {
    HR_ASSIGN_OR_RETURN(int64_t v, Int(key, value, 0, kIntMax));
    max_connections_per_ip = static_cast<int32_t>(v);
  } else if (key == "connections.max.idle.ms") {
    HR_ASSIGN_OR_RETURN(connections_max_idle_ms, Int(key, value, -1, kLongMax));
  } else if (key == "queued.max.request.bytes") {
    HR_ASSIGN_OR_RETURN(queued_max_request_bytes, Int(key, value, -1, kLongMax));
    if (queued_max_request_bytes == 0) return Bad(key, "must be -1 (no limit) or >= 1");
  } else if (key == "headrace.max.partitions") {
    HR_ASSIGN_OR_RETURN(int64_t v, Int(key, value, 1, kIntMax));
    max_partitions = static_cast<int32_t>(v);
  } else if (key == "headrace.max.partitions.per.request") {
    HR_ASSIGN_OR_RETURN(int64_t v, Int(key, value, 1, kIntMax));
    max_partitions_per_request = static_cast<int32_t>(v);
  } else if (key == "log.retention.hours") {
    if (!explicitly_set.count("log.retention.ms") && !explicitly_set.count("log.retention.minutes"))
      return ms_from(3600000, &log_defaults.retention_ms);
    return mark();  // the finer-grained property wins, as in Kafka
  } else if (key == "log.retention.minutes") {
    if (!explicitly_set.count("log.retention.ms")) return ms_from(60000, &log_defaults.retention_ms);
    return mark();
  } else if (key == "log.roll.hours") {
    if (!explicitly_set.count("log.roll.ms")) {
      HR_ASSIGN_OR_RETURN(int64_t v, Int(key, value, 1, kLongMax / 3600000));
      log_defaults.segment_ms = v * 3600000;
    }
  } else if (key == "log.retention.check.interval.ms") {
    HR_ASSIGN_OR_RETURN(log_retention_check_interval_ms, Int(key, value, 1, kLongMax));
  } else if (key == "producer.id.expiration.ms") {
    HR_ASSIGN_OR_RETURN(producer_id_expiration_ms, Int(key, value, 1, kIntMax));
  } else if (key == "log.flush.scheduler.interval.ms") {
    HR_ASSIGN_OR_RETURN(log_flush_scheduler_interval_ms, Int(key, value, 1, kLongMax));
  } else if (key == "headrace.acks.all.fsync") {
    HR_ASSIGN_OR_RETURN(acks_all_fsync, Bool(key, value));
  } else if (key == "zookeeper.connect") {
    zookeeper_connect = std::string(value);
  } else if (key == "zookeeper.session.timeout.ms") {
    HR_ASSIGN_OR_RETURN(zookeeper_session_timeout_ms, Int(key, value, 1000, kIntMax));
  } else if (key == "zookeeper.connection.timeout.ms") {
    HR_ASSIGN_OR_RETURN(zookeeper_connection_timeout_ms, Int(key, value, 1, kIntMax));
  } else if (key == "broker.rack") {
    broker_rack = std::string(value);
  } else if (key == "unclean.leader.election.enable") {
    HR_ASSIGN_OR_RETURN(unclean_leader_election_enable, Bool(key, value));
  } else if (key == "headrace.group.commit.linger.us") {
    HR_ASSIGN_OR_RETURN(group_commit_linger_us, Int(key, value, 0, 1000000));
  } else if (key == "replica.lag.time.max.ms") {
    HR_ASSIGN_OR_RETURN(replica_lag_time_max_ms, Int(key, value, 1, kLongMax));
  } else if (key == "replica.fetch.max.bytes") {
    HR_ASSIGN_OR_RETURN(int64_t v, Int(key, value, 0, kIntMax));
    replica_fetch_max_bytes = static_cast<int32_t>(v);
  } else if (key == "replica.fetch.response.max.bytes") {
    HR_ASSIGN_OR_RETURN(int64_t v, Int(key, value, 0, kIntMax));
    replica_fetch_response_max_bytes = static_cast<int32_t>(v);
  } else if (key == "replica.fetch.wait.max.ms") {
    HR_ASSIGN_OR_RETURN(int64_t v, Int(key, value, 0, kIntMax));
    replica_fetch_wait_max_ms = static_cast<int32_t>(v);
  } else if (key == "replica.fetch.min.bytes") {
    HR_ASSIGN_OR_RETURN(int64_t v, Int(key, value, 1, kIntMax));
    replica_fetch_min_bytes = static_cast<int32_t>(v);
  } else if (key == "replica.fetch.backoff.ms") {
    HR_ASSIGN_OR_RETURN(int64_t v, Int(key, value, 0, kIntMax));
    replica_fetch_backoff_ms = static_cast<int32_t>(v);
  } else if (key == "num.replica.fetchers") {
    HR_ASSIGN_OR_RETURN(int64_t v, Int(key, value, 1, kIntMax));
    num_replica_fetchers = static_cast<int32_t>(v);
  } else if (auto it = TopicSynonyms().find(key); it != TopicSynonyms().end()) {
    // A topic default: validate with the topic key's rules, store it.
    TopicDefaults d = topic_defaults();
    auto applied = ApplyTopicConfigs(d, {{it->second, std::string(value)}});
    if (!applied.ok()) {
      std::string msg = applied.status().message();
      return Bad(key, msg.substr(msg.find(": ") == std::string::npos ? 0 : msg.find(": ") + 2));
    }
    const TopicSettings& t = applied.value();
    log_defaults = t.log;
    log_cleanup_policy =
        t.cleanup_compact ? (t.cleanup_delete ? "compact,delete" : "compact") : "delete";
    min_insync_replicas = applied.value().min_insync_replicas;
  } else {
    return Status::NotFound("unknown broker config: " + std::string(key));
  }
  return mark();
}

Status BrokerConfig::SetAll(const std::map<std::string, std::string>& props,
                            std::set<std::string>* ignored) {
  // Finer-grained time units first so that they win over coarser ones.
  static const char* kFirst[] = {"log.retention.ms", "log.retention.minutes", "log.roll.ms"};
  for (const char* k : kFirst) {
    if (auto it = props.find(k); it != props.end()) HR_RETURN_IF_ERROR(Set(it->first, it->second));
  }
  for (const auto& [k, v] : props) {
    if (k == kFirst[0] || k == kFirst[1] || k == kFirst[2]) continue;
    Status s = Set(k, v);
    if (s.code() == StatusCode::kNotFound && ignored) {
      ignored->insert(k);
      continue;
    }
    HR_RETURN_IF_ERROR(s);
  }
  return Status::OK();
}

Status BrokerConfig::Validate() const {
  if (node_id < 0) return Bad("node.id", "must be >= 0");
  if (listeners.empty()) return Bad("listeners", "must name at least one listener");
  if (cluster_mode() && node_id >= 65536) {
    return Bad("node.id", "must be < 65536 in a cluster (producer ids are striped by node id)");
  }
  if (data_dir.empty()) return Bad("log.dirs", "must not be empty");
  if (io_threads < 1) return Bad("num.io.threads", "must be >= 1");
  if (num_partitions < 1) return Bad("num.partitions", "must be >= 1");
  if (default_replication_factor < 1) return Bad("default.replication.factor", "must be >= 1");
  if (socket_request_max_bytes < 1) return Bad("socket.request.max.bytes", "must be >= 1");
  if (log_retention_check_interval_ms < 1) {
    return Bad("log.retention.check.interval.ms", "must be >= 1");
  }
  if (log_flush_scheduler_interval_ms < 1) {
    return Bad("log.flush.scheduler.interval.ms", "must be >= 1");
  }
  return Status::OK();
}

TopicDefaults BrokerConfig::topic_defaults() const {
  TopicDefaults d;
  d.settings.log = log_defaults;
  d.settings.cleanup_compact = log_cleanup_policy.find("compact") != std::string::npos;
  d.settings.cleanup_delete = log_cleanup_policy.find("delete") != std::string::npos;
  d.settings.min_insync_replicas = min_insync_replicas;
  for (const auto& [broker_key, topic_key] : TopicSynonyms()) {
    if (explicitly_set.count(broker_key)) d.static_keys.insert(topic_key);
  }
  if (explicitly_set.count("log.retention.hours") || explicitly_set.count("log.retention.minutes")) {
    d.static_keys.insert("retention.ms");
  }
  if (explicitly_set.count("log.roll.hours")) d.static_keys.insert("segment.ms");
  return d;
}

}  // namespace headrace::broker
