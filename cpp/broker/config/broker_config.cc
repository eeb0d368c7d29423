// The broker's keys as one table (config_table.h's idea applied to
// BrokerConfig): every row names a Kafka property, its type, valid values,
// update mode and doc, and how it is set and read. Set(), DescribeConfigs
// (api/broker_config_entries.cc) and `headrace config docs` (the broker
// section of docs/configuration.md) all read this table. Topic defaults
// (log.retention.ms, ...) are rows generated from the topic table
// (topic_config.cc) by their broker synonym.
#include "broker/config/broker_config.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <functional>
#include <limits>
#include <set>

namespace headrace::broker {
namespace {

std::string JoinedLogDirs(const BrokerConfig& c) {
  std::string out;
  for (const std::string& d : ConfiguredLogDirs(c)) out += (out.empty() ? "" : ",") + d;
  return out;
}

constexpr int64_t kLongMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kIntMax = std::numeric_limits<int32_t>::max();

Status Bad(std::string_view key, const std::string& rule) {
  return Status::InvalidArgument(std::string(key) + ": " + rule);
}

// Every advertised listener names one of `listeners`.
Status CheckAdvertisedNames(const std::vector<Listener>& listeners,
                            const std::vector<Listener>& advertised) {
  for (const Listener& a : advertised) {
    bool found = false;
    for (const Listener& l : listeners) found |= l.name == a.name;
    if (!found) {
      return Bad("advertised.listeners", "listener " + a.name + " is not one of listeners");
    }
  }
  return Status::OK();
}

// log.dirs and its alias log.dir: the list; data_dir is its first entry.
Status SetLogDirs(BrokerConfig& c, std::string_view key, std::string_view v) {
  if (v.empty()) return Bad(key, "must not be empty");
  HR_ASSIGN_OR_RETURN(c.log_dirs, ParseLogDirs(v));
  c.data_dir = c.log_dirs.front();
  return Status::OK();
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

std::string BoolText(bool b) { return b ? "true" : "false"; }

std::string JoinListeners(const std::vector<Listener>& listeners) {
  std::string out;
  for (const Listener& l : listeners) {
    if (!out.empty()) out += ',';
    out += l.ToString();
  }
  return out;
}

// One row. `set` stores a value (the caller records the key as set);
// `get` reads the current value in the form Set accepts.
struct Row {
  BrokerKeyInfo info;
  std::function<Status(BrokerConfig&, std::string_view key, std::string_view value)> set;
  std::function<std::string(const BrokerConfig&)> get;
};

std::string RangeText(int64_t min, int64_t max) {
  if (max == kLongMax || max == kIntMax) return "[" + std::to_string(min) + ",...]";
  return "[" + std::to_string(min) + ",...," + std::to_string(max) + "]";
}

// An integer field in [min, max].
template <typename T>
Row IntRow(const char* name, const char* doc, T BrokerConfig::*field, int64_t min, int64_t max) {
  ConfigType type = sizeof(T) == 8 ? ConfigType::kLong : ConfigType::kInt;
  return Row{{name, type, "", RangeText(min, max), UpdateMode::kReadOnly, doc, ""},
             [=](BrokerConfig& c, std::string_view key, std::string_view v) -> Status {
               HR_ASSIGN_OR_RETURN(int64_t x, Int(key, v, min, max));
               c.*field = static_cast<T>(x);
               return Status::OK();
             },
             [=](const BrokerConfig& c) { return std::to_string(c.*field); }};
}

Row BoolRow(const char* name, const char* doc, bool BrokerConfig::*field) {
  return Row{{name, ConfigType::kBoolean, "", "", UpdateMode::kReadOnly, doc, ""},
             [=](BrokerConfig& c, std::string_view key, std::string_view v) -> Status {
               HR_ASSIGN_OR_RETURN(c.*field, Bool(key, v));
               return Status::OK();
             },
             [=](const BrokerConfig& c) { return BoolText(c.*field); }};
}

Row StringRow(const char* name, const char* doc, std::string BrokerConfig::*field) {
  return Row{{name, ConfigType::kString, "", "", UpdateMode::kReadOnly, doc, ""},
             [=](BrokerConfig& c, std::string_view, std::string_view v) -> Status {
               c.*field = std::string(v);
               return Status::OK();
             },
             [=](const BrokerConfig& c) { return c.*field; }};
}

// log.retention.hours / .minutes, log.roll.hours: a coarser unit of a
// topic default; the finer-grained property wins when both are set (as in
// Kafka; SetAll applies the finer ones first).
Row CoarseTimeRow(const char* name, const char* doc, int64_t unit, int64_t LogConfig::*field,
                  std::vector<const char*> finer, int64_t min) {
  return Row{{name, ConfigType::kInt, "", RangeText(min, kIntMax), UpdateMode::kReadOnly, doc, ""},
             [=](BrokerConfig& c, std::string_view key, std::string_view v) -> Status {
               HR_ASSIGN_OR_RETURN(int64_t x, Int(key, v, min, kLongMax / unit));
               for (const char* f : finer)
                 if (c.explicitly_set.count(f)) return Status::OK();
               c.log_defaults.*field = x < 0 ? -1 : x * unit;
               return Status::OK();
             },
             [=](const BrokerConfig& c) {
               int64_t ms = c.log_defaults.*field;
               return std::to_string(ms < 0 ? -1 : ms / unit);
             }};
}

// A topic default named by its broker synonym: validated with the topic
// key's rules.
Row TopicDefaultRow(const TopicConfigKeyInfo& t) {
  std::string topic_key = t.name;
  // Kafka lets every topic-default synonym change at run time except the
  // deprecated log.message.format.version.
  UpdateMode mode = t.broker_name == "log.message.format.version" ? UpdateMode::kReadOnly
                                                                  : UpdateMode::kClusterWide;
  std::string doc = "Default of the topic config " + t.name + ": " + t.doc;
  return Row{{t.broker_name, t.type, t.default_value, t.valid, mode, doc, t.name},
             [topic_key](BrokerConfig& c, std::string_view key, std::string_view v) -> Status {
               TopicDefaults d = c.topic_defaults();
               auto applied = ApplyTopicConfigs(d, {{topic_key, std::string(v)}});
               if (!applied.ok()) {
                 std::string msg = applied.status().message();
                 size_t colon = msg.find(": ");
                 return Bad(key, colon == std::string::npos ? msg : msg.substr(colon + 2));
               }
               c.SetTopicDefaults(applied.value());
               return Status::OK();
             },
             [topic_key](const BrokerConfig& c) {
               return FormatTopicConfig(c.topic_defaults().settings, topic_key);
             }};
}

std::vector<Row> BuildRows() {
  std::vector<Row> rows = {
      IntRow("node.id", "This broker's id.", &BrokerConfig::node_id, 0, kIntMax),
      IntRow("broker.id", "Alias of node.id.", &BrokerConfig::node_id, 0, kIntMax),
      Row{{"listeners", ConfigType::kString, "", "NAME://host:port,...",
           UpdateMode::kReadOnly,
           "The addresses this broker listens on, each under a listener name whose security "
           "protocol listener.security.protocol.map gives (docs/security.md).", ""},
          [](BrokerConfig& c, std::string_view key, std::string_view v) -> Status {
            HR_ASSIGN_OR_RETURN(c.listeners, ParseListeners(key, v));
            return Status::OK();
          },
          [](const BrokerConfig& c) { return JoinListeners(c.listeners); }},
      Row{{"advertised.listeners", ConfigType::kString, "", "NAME://host:port,...",
           UpdateMode::kPerBroker,
           "Per listener name, the address given in Metadata to clients connected on that "
           "listener (default: the listener's own). Dynamic per broker, as Kafka: a change "
           "takes effect at once (in a cluster, the broker's registration in ZooKeeper is "
           "rewritten and every broker hands out the new address).", ""},
          [](BrokerConfig& c, std::string_view key, std::string_view v) -> Status {
            HR_ASSIGN_OR_RETURN(c.advertised_listeners, ParseListeners(key, v));
            return Status::OK();
          },
          [](const BrokerConfig& c) {
            return c.advertised_listeners.empty() ? c.advertised().ToString()
                                                  : JoinListeners(c.advertised_listeners);
          }},
      Row{{"listener.security.protocol.map", ConfigType::kString, "", "NAME:PROTOCOL,...",
           UpdateMode::kReadOnly,
           "The security protocol (PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL) of each listener "
           "name.", ""},
          [](BrokerConfig& c, std::string_view key, std::string_view v) -> Status {
            HR_ASSIGN_OR_RETURN(c.protocol_map, ParseProtocolMap(key, v));
            return Status::OK();
          },
          [](const BrokerConfig& c) {
            std::string out;
            for (const auto& [name, p] : c.protocol_map)
              out += (out.empty() ? "" : ",") + name + ":" + SecurityProtocolName(p);
            return out;
          }},
      StringRow("inter.broker.listener.name",
                "The listener brokers of a cluster use to reach each other (replica fetchers, "
                "transaction markers), of any security protocol (docs/security.md "
                "\"Inter-broker security\"); default: the one named after "
                "security.inter.broker.protocol.",
                &BrokerConfig::inter_broker_listener_name),
      Row{{"security.inter.broker.protocol", ConfigType::kString, "", "PLAINTEXT, SSL, "
           "SASL_PLAINTEXT, SASL_SSL", UpdateMode::kReadOnly,
           "The security protocol between brokers when inter.broker.listener.name is not set.",
           ""},
          [](BrokerConfig& c, std::string_view key, std::string_view v) -> Status {
            auto p = ParseSecurityProtocol(v);
            if (!p.ok()) return Bad(key, p.status().message());
            c.security_inter_broker_protocol = SecurityProtocolName(*p);
            return Status::OK();
          },
          [](const BrokerConfig& c) { return c.security_inter_broker_protocol; }},
      Row{{"log.dirs", ConfigType::kString, "", "one or more directories, comma-separated",
           UpdateMode::kReadOnly,
           "The log directories; the first also holds the broker's metadata.", ""},
          SetLogDirs, JoinedLogDirs},
      Row{{"log.dir", ConfigType::kString, "", "one or more directories, comma-separated",
           UpdateMode::kReadOnly, "Alias of log.dirs.", ""},
          SetLogDirs, JoinedLogDirs},
      IntRow("num.io.threads", "Network/request threads.", &BrokerConfig::io_threads, 1, 1024),
      StringRow("cluster.id",
                "Cluster id; empty = the stored one, or a new one at first start.",
                &BrokerConfig::cluster_id),
      BoolRow("auto.create.topics.enable",
              "Create an unknown topic on Metadata/Produce with the broker defaults.",
              &BrokerConfig::auto_create_topics_enable),
      IntRow("num.partitions", "Partitions of topics created with -1 or auto-created.",
             &BrokerConfig::num_partitions, 1, kIntMax),
      IntRow("default.replication.factor",
             "Replication factor of topics created with -1 (a single node accepts only 1).",
             &BrokerConfig::default_replication_factor, 1, 32767),
      IntRow("socket.request.max.bytes", "Largest request frame accepted.",
             &BrokerConfig::socket_request_max_bytes, 1, kIntMax),
      IntRow("socket.send.buffer.bytes",
             "SO_SNDBUF of client connections; -1 = the OS's automatic sizing.",
             &BrokerConfig::socket_send_buffer_bytes, -1, kIntMax),
      IntRow("socket.receive.buffer.bytes",
             "SO_RCVBUF of client connections; -1 = the OS's automatic sizing.",
             &BrokerConfig::socket_receive_buffer_bytes, -1, kIntMax),
      StringRow("headrace.socket.local.congestion.control",
                "TCP congestion control of connections from this host (loopback or the "
                "broker's own address); empty = the system's default.",
                &BrokerConfig::socket_local_congestion_control),
      IntRow("max.connections", "Connections accepted at once.", &BrokerConfig::max_connections,
             0, kIntMax),
      IntRow("max.connections.per.ip", "Connections accepted at once from one IP.",
             &BrokerConfig::max_connections_per_ip, 0, kIntMax),
      IntRow("connections.max.idle.ms",
             "Close connections idle (nothing in flight, no traffic) this long; -1 = never.",
             &BrokerConfig::connections_max_idle_ms, -1, kLongMax),
      Row{{"queued.max.request.bytes", ConfigType::kLong, "", "-1 or [1,...]",
           UpdateMode::kReadOnly,
           "Bytes of requests received and not yet answered before reading stops; -1 = no limit.",
           ""},
          [](BrokerConfig& c, std::string_view key, std::string_view v) -> Status {
            HR_ASSIGN_OR_RETURN(int64_t x, Int(key, v, -1, kLongMax));
            if (x == 0) return Bad(key, "must be -1 (no limit) or >= 1");
            c.queued_max_request_bytes = x;
            return Status::OK();
          },
          [](const BrokerConfig& c) { return std::to_string(c.queued_max_request_bytes); }},
      IntRow("headrace.max.partitions", "Partitions this broker hosts at most.",
             &BrokerConfig::max_partitions, 1, kIntMax),
      IntRow("headrace.max.partitions.per.request",
             "Partitions one CreateTopics or CreatePartitions request may create at most.",
             &BrokerConfig::max_partitions_per_request, 1, kIntMax),
      CoarseTimeRow("log.retention.hours", "log.retention.ms in hours.", 3600000,
                    &LogConfig::retention_ms, {"log.retention.ms", "log.retention.minutes"}, -1),
      CoarseTimeRow("log.retention.minutes", "log.retention.ms in minutes.", 60000,
                    &LogConfig::retention_ms, {"log.retention.ms"}, -1),
      CoarseTimeRow("log.roll.hours", "log.roll.ms in hours.", 3600000, &LogConfig::segment_ms,
                    {"log.roll.ms"}, 1),
      IntRow("log.retention.check.interval.ms", "How often retention runs over all partitions.",
             &BrokerConfig::log_retention_check_interval_ms, 1, kLongMax),
      IntRow("producer.id.expiration.ms",
             "How long a producer's state is kept after its last write, unless it has an open "
             "transaction.",
             &BrokerConfig::producer_id_expiration_ms, 1, kIntMax),
      IntRow("log.flush.scheduler.interval.ms",
             "How often time-based roll and flush policies are checked.",
             &BrokerConfig::log_flush_scheduler_interval_ms, 1, kLongMax),
      BoolRow("headrace.acks.all.fsync",
              "Answer acks=all produces only after their batch is fsynced.",
              &BrokerConfig::acks_all_fsync),
      IntRow("headrace.group.commit.linger.us",
             "Extra wait before each group-commit fsync, in microseconds.",
             &BrokerConfig::group_commit_linger_us, 0, 1000000),
      BoolRow("headrace.follower.uncached.writes",
              "Followers write copied records with uncached buffered I/O (RWF_DONTCACHE): the "
              "pages leave the page cache once written back.",
              &BrokerConfig::follower_uncached_writes),
      IntRow("headrace.flush.threads",
             "How many partitions' fsyncs of one group-commit round run at once (1 = one after "
             "another).",
             &BrokerConfig::flush_threads, 1, 64),
      IntRow("headrace.log.writer.threads",
             "Threads per log directory that run Produce appends off the network threads; each "
             "partition's appends run in order on one of them at a time. 0 = append on the "
             "network thread (fewer wake-ups, but a write held by writeback holds every "
             "connection of that thread).",
             &BrokerConfig::log_writer_threads, 0, 64),
      StringRow("zookeeper.connect", "ZooKeeper connect string of the cluster; empty = single node.",
                &BrokerConfig::zookeeper_connect),
      IntRow("zookeeper.session.timeout.ms", "ZooKeeper session timeout.",
             &BrokerConfig::zookeeper_session_timeout_ms, 1000, kIntMax),
      IntRow("zookeeper.connection.timeout.ms",
             "How long the control plane waits to connect to ZooKeeper.",
             &BrokerConfig::zookeeper_connection_timeout_ms, 1, kIntMax),
      StringRow("broker.rack", "The rack of this broker (rack-aware placement).",
                &BrokerConfig::broker_rack),
      BoolRow("unclean.leader.election.enable",
              "Elect a replica outside the ISR when no ISR member is alive (may lose data).",
              &BrokerConfig::unclean_leader_election_enable),
      IntRow("replica.lag.time.max.ms", "A follower not caught up for this long leaves the ISR.",
             &BrokerConfig::replica_lag_time_max_ms, 1, kLongMax),
      IntRow("replica.high.watermark.checkpoint.interval.ms",
             "How often each log directory's replication-offset-checkpoint (the partitions' "
             "high watermarks, read at start) is written; cluster mode only.",
             &BrokerConfig::replica_high_watermark_checkpoint_interval_ms, 1, kLongMax),
      IntRow("replica.fetch.max.bytes", "Bytes a follower fetch asks for per partition.",
             &BrokerConfig::replica_fetch_max_bytes, 0, kIntMax),
      IntRow("replica.fetch.response.max.bytes", "Bytes a follower fetch asks for in total.",
             &BrokerConfig::replica_fetch_response_max_bytes, 0, kIntMax),
      IntRow("replica.fetch.wait.max.ms",
             "How long the leader holds a follower fetch that found no new data.",
             &BrokerConfig::replica_fetch_wait_max_ms, 0, kIntMax),
      IntRow("replica.fetch.min.bytes", "Bytes a follower fetch waits for.",
             &BrokerConfig::replica_fetch_min_bytes, 1, kIntMax),
      IntRow("replica.fetch.backoff.ms", "Pause before a follower retries after an error.",
             &BrokerConfig::replica_fetch_backoff_ms, 0, kIntMax),
      IntRow("replica.socket.timeout.ms",
             "A follower's connection to its leader is closed and reopened (after "
             "replica.fetch.backoff.ms) when a connect or a fetch gets no answer within this; "
             "at least replica.fetch.wait.max.ms.",
             &BrokerConfig::replica_socket_timeout_ms, 1, kIntMax),
      IntRow("num.replica.fetchers", "Fetcher threads per leader broker (1 is used).",
             &BrokerConfig::num_replica_fetchers, 1, kIntMax),
  };
  for (const TopicConfigKeyInfo& t : TopicConfigKeyTable()) {
    if (t.broker_name.empty()) continue;
    const bool explicit_row = std::any_of(rows.begin(), rows.end(), [&](const Row& r) {
      return r.info.name == t.broker_name;
    });
    if (!explicit_row) rows.push_back(TopicDefaultRow(t));
  }
  static const BrokerConfig kBuiltIn;
  for (Row& r : rows) {
    if (r.info.default_value.empty()) r.info.default_value = r.get(kBuiltIn);
  }
  std::sort(rows.begin(), rows.end(),
            [](const Row& a, const Row& b) { return a.info.name < b.info.name; });
  return rows;
}

const std::vector<Row>& Rows() {
  static const std::vector<Row> rows = BuildRows();
  return rows;
}

const Row* FindRow(std::string_view key) {
  const auto& rows = Rows();
  auto it = std::lower_bound(rows.begin(), rows.end(), key,
                             [](const Row& r, std::string_view k) { return r.info.name < k; });
  return it != rows.end() && it->info.name == key ? &*it : nullptr;
}

}  // namespace

const std::vector<BrokerKeyInfo>& BrokerConfigKeyTable() {
  static const std::vector<BrokerKeyInfo> table = [] {
    std::vector<BrokerKeyInfo> out;
    for (const Row& r : Rows()) out.push_back(r.info);
    return out;
  }();
  return table;
}

const BrokerKeyInfo* FindBrokerKey(std::string_view key) {
  const Row* r = FindRow(key);
  return r ? &r->info : nullptr;
}

std::optional<std::string> BrokerConfigValue(const BrokerConfig& config, std::string_view key) {
  const Row* r = FindRow(key);
  if (!r) return std::nullopt;
  return r->get(config);
}

bool BrokerConfig::IsSet(std::string_view key) const {
  auto set = [&](const char* k) { return explicitly_set.count(k) > 0; };
  if (key == "node.id" || key == "broker.id") return set("node.id") || set("broker.id");
  if (key == "log.dirs" || key == "log.dir") return set("log.dirs") || set("log.dir");
  if (key == "log.retention.ms") {
    return set("log.retention.ms") || set("log.retention.minutes") || set("log.retention.hours");
  }
  if (key == "log.roll.ms") return set("log.roll.ms") || set("log.roll.hours");
  return explicitly_set.count(std::string(key)) > 0;
}

Status BrokerConfig::Set(std::string_view key, std::string_view value) {
  const Row* r = FindRow(key);
  if (!r) return Status::NotFound("unknown broker config: " + std::string(key));
  HR_RETURN_IF_ERROR(r->set(*this, key, value));
  explicitly_set.insert(std::string(key));
  return Status::OK();
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

Result<std::vector<Listener>> BrokerConfig::ParseAdvertisedListeners(std::string_view value) const {
  HR_ASSIGN_OR_RETURN(std::vector<Listener> advertised, ParseListeners("advertised.listeners", value));
  HR_RETURN_IF_ERROR(CheckAdvertisedNames(listeners, advertised));
  return advertised;
}

Status BrokerConfig::Validate() const {
  if (node_id < 0) return Bad("node.id", "must be >= 0");
  if (listeners.empty()) return Bad("listeners", "must name at least one listener");
  for (const Listener& l : listeners) {
    if (!protocol_map.count(l.name)) {
      return Bad("listeners", "no security protocol for listener " + l.name +
                                  " in listener.security.protocol.map");
    }
  }
  HR_RETURN_IF_ERROR(CheckAdvertisedNames(listeners, advertised_listeners));
  if (!inter_broker_listener_name.empty() && explicitly_set.count("security.inter.broker.protocol")) {
    return Bad("inter.broker.listener.name",
               "only one of inter.broker.listener.name and security.inter.broker.protocol may "
               "be set");
  }
  if (cluster_mode()) {
    std::string ib = inter_broker_listener();
    if (advertised_for(ib) == nullptr) {
      return Bad("inter.broker.listener.name", ib + " must be one of the listeners");
    }
    // Any protocol: replication::InterBrokerSecurity checks what a secured
    // inter-broker listener needs as a client (broker.cc Broker::Create).
  }
  if (cluster_mode() && node_id >= 65536) {
    return Bad("node.id", "must be < 65536 in a cluster (producer ids are striped by node id)");
  }
  if (data_dir.empty()) return Bad("log.dirs", "must not be empty");
  if (replica_socket_timeout_ms < replica_fetch_wait_max_ms) {
    return Bad("replica.socket.timeout.ms",
               "must be >= replica.fetch.wait.max.ms (" +
                   std::to_string(replica_fetch_wait_max_ms) + ")");
  }
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

std::map<std::string, net::SecurityProtocol> BrokerConfig::DefaultProtocolMap() {
  return ParseProtocolMap("listener.security.protocol.map", kDefaultProtocolMap).value();
}

const Listener* BrokerConfig::advertised_for(std::string_view name) const {
  for (const Listener& a : advertised_listeners)
    if (a.name == name) return &a;
  for (const Listener& l : listeners)
    if (l.name == name) return &l;
  return nullptr;
}

std::string BrokerConfig::inter_broker_listener() const {
  if (!inter_broker_listener_name.empty()) {
    std::string n = inter_broker_listener_name;
    for (char& ch : n) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
    return n;
  }
  return security_inter_broker_protocol;
}

void BrokerConfig::SetTopicDefaults(const TopicSettings& s) {
  log_defaults = s.log;
  log_cleanup_policy =
      s.cleanup_compact ? (s.cleanup_delete ? "compact,delete" : "compact") : "delete";
  min_insync_replicas = s.min_insync_replicas;
  passive_topic_defaults = s.passive;
}

TopicDefaults BrokerConfig::topic_defaults() const {
  TopicDefaults d;
  d.settings.log = log_defaults;
  d.settings.cleanup_compact = log_cleanup_policy.find("compact") != std::string::npos;
  d.settings.cleanup_delete = log_cleanup_policy.find("delete") != std::string::npos;
  d.settings.min_insync_replicas = min_insync_replicas;
  d.settings.passive = passive_topic_defaults;
  // The broker-wide switch is the default of the topic key.
  d.settings.passive["unclean.leader.election.enable"] = BoolText(unclean_leader_election_enable);
  for (const TopicConfigKeyInfo& t : TopicConfigKeyTable()) {
    if (!t.broker_name.empty() && IsSet(t.broker_name)) d.static_keys.insert(t.name);
  }
  return d;
}

std::string NormaliseLogDir(const std::string& dir) {
  std::error_code ec;
  std::filesystem::path p = std::filesystem::absolute(dir, ec);
  if (ec) p = dir;
  std::string s = p.lexically_normal().string();
  while (s.size() > 1 && s.back() == '/') s.pop_back();
  return s;
}

namespace {

std::string_view TrimBlanks(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

}  // namespace

Result<std::vector<std::string>> ParseLogDirs(std::string_view value) {
  std::vector<std::string> out;
  std::set<std::string> seen;
  for (;;) {
    size_t comma = value.find(',');
    std::string_view item = TrimBlanks(value.substr(0, comma));
    if (item.empty()) return Status::InvalidArgument("log.dirs: empty directory name in the list");
    if (!seen.insert(NormaliseLogDir(std::string(item))).second) {
      return Status::InvalidArgument("log.dirs: directory " + std::string(item) +
                                     " is listed twice");
    }
    out.emplace_back(item);
    if (comma == std::string_view::npos) break;
    value.remove_prefix(comma + 1);
  }
  return out;
}

std::vector<std::string> ConfiguredLogDirs(const BrokerConfig& config) {
  if (config.log_dirs.empty()) return {config.data_dir};
  std::vector<std::string> out = config.log_dirs;
  out.front() = config.data_dir;  // data_dir set on its own wins (tests, bindings)
  return out;
}

}  // namespace headrace::broker
