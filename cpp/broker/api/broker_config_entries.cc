#include "broker/api/broker_config_entries.h"

#include <algorithm>
#include <functional>
#include <string>

#include "broker/broker_config.h"
#include "broker/log_dirs.h"

namespace headrace::broker {
namespace {

// One scalar broker setting: its name, type, documentation and how to read
// its value from a BrokerConfig.
struct BrokerKey {
  const char* name;
  ConfigType type;
  const char* doc;
  std::function<std::string(const BrokerConfig&)> value;
};

std::string Bool(bool b) { return b ? "true" : "false"; }

const std::vector<BrokerKey>& ScalarKeys() {
  static const std::vector<BrokerKey> keys = {
      {"auto.create.topics.enable", ConfigType::kBoolean,
       "Create an unknown topic on Metadata/Produce with the broker defaults.",
       [](const BrokerConfig& c) { return Bool(c.auto_create_topics_enable); }},
      {"broker.id", ConfigType::kInt, "Alias of node.id.",
       [](const BrokerConfig& c) { return std::to_string(c.node_id); }},
      {"default.replication.factor", ConfigType::kInt,
       "Replication factor of topics created with -1 (a single node accepts only 1).",
       [](const BrokerConfig& c) { return std::to_string(c.default_replication_factor); }},
      {"headrace.acks.all.fsync", ConfigType::kBoolean,
       "Answer acks=all produces only after their batch is fsynced.",
       [](const BrokerConfig& c) { return Bool(c.acks_all_fsync); }},
      {"headrace.group.commit.linger.us", ConfigType::kLong,
       "Extra wait before each group-commit fsync, in microseconds.",
       [](const BrokerConfig& c) { return std::to_string(c.group_commit_linger_us); }},
      {"log.dirs", ConfigType::kString,
       "The log directories, comma-separated; the first also holds the broker's metadata.",
       [](const BrokerConfig& c) {
         std::string out;
         for (const std::string& d : ConfiguredLogDirs(c)) out += (out.empty() ? "" : ",") + d;
         return out;
       }},
      {"log.flush.scheduler.interval.ms", ConfigType::kLong,
       "How often time-based roll and flush policies are checked.",
       [](const BrokerConfig& c) { return std::to_string(c.log_flush_scheduler_interval_ms); }},
      {"log.retention.check.interval.ms", ConfigType::kLong,
       "How often retention runs over all partitions.",
       [](const BrokerConfig& c) { return std::to_string(c.log_retention_check_interval_ms); }},
      {"producer.id.expiration.ms", ConfigType::kInt,
       "How long a producer's state is kept after its last write, unless it has an open "
       "transaction.",
       [](const BrokerConfig& c) { return std::to_string(c.producer_id_expiration_ms); }},
      {"connections.max.idle.ms", ConfigType::kLong,
       "Close connections idle (nothing in flight, no traffic) this long; -1 = never.",
       [](const BrokerConfig& c) { return std::to_string(c.connections_max_idle_ms); }},
      {"headrace.max.partitions", ConfigType::kInt, "Partitions this broker hosts at most.",
       [](const BrokerConfig& c) { return std::to_string(c.max_partitions); }},
      {"headrace.max.partitions.per.request", ConfigType::kInt,
       "Partitions one CreateTopics or CreatePartitions request may create at most.",
       [](const BrokerConfig& c) { return std::to_string(c.max_partitions_per_request); }},
      {"max.connections.per.ip", ConfigType::kInt, "Connections accepted at once from one IP.",
       [](const BrokerConfig& c) { return std::to_string(c.max_connections_per_ip); }},
      {"queued.max.request.bytes", ConfigType::kLong,
       "Bytes of requests received and not yet answered before reading stops; -1 = no limit.",
       [](const BrokerConfig& c) { return std::to_string(c.queued_max_request_bytes); }},
      {"max.connections", ConfigType::kInt, "Connections accepted at once.",
       [](const BrokerConfig& c) { return std::to_string(c.max_connections); }},
      {"node.id", ConfigType::kInt, "This broker's id.",
       [](const BrokerConfig& c) { return std::to_string(c.node_id); }},
      {"num.io.threads", ConfigType::kInt, "Network/request threads.",
       [](const BrokerConfig& c) { return std::to_string(c.io_threads); }},
      {"num.partitions", ConfigType::kInt, "Partitions of topics created with -1 or auto-created.",
       [](const BrokerConfig& c) { return std::to_string(c.num_partitions); }},
      {"zookeeper.connect", ConfigType::kString,
       "ZooKeeper connect string of the cluster; empty = single node.",
       [](const BrokerConfig& c) { return c.zookeeper_connect; }},
      {"zookeeper.session.timeout.ms", ConfigType::kLong, "ZooKeeper session timeout.",
       [](const BrokerConfig& c) { return std::to_string(c.zookeeper_session_timeout_ms); }},
      {"zookeeper.connection.timeout.ms", ConfigType::kLong,
       "How long the control plane waits to connect to ZooKeeper.",
       [](const BrokerConfig& c) { return std::to_string(c.zookeeper_connection_timeout_ms); }},
      {"broker.rack", ConfigType::kString, "The rack of this broker (rack-aware placement).",
       [](const BrokerConfig& c) { return c.broker_rack; }},
      {"unclean.leader.election.enable", ConfigType::kBoolean,
       "Elect a replica outside the ISR when no ISR member is alive (may lose data).",
       [](const BrokerConfig& c) { return Bool(c.unclean_leader_election_enable); }},
      {"num.replica.fetchers", ConfigType::kInt, "Fetcher threads per leader broker (1 is used).",
       [](const BrokerConfig& c) { return std::to_string(c.num_replica_fetchers); }},
      {"replica.fetch.backoff.ms", ConfigType::kInt, "Pause before a follower retries after an error.",
       [](const BrokerConfig& c) { return std::to_string(c.replica_fetch_backoff_ms); }},
      {"replica.fetch.max.bytes", ConfigType::kInt, "Bytes a follower fetch asks for per partition.",
       [](const BrokerConfig& c) { return std::to_string(c.replica_fetch_max_bytes); }},
      {"replica.fetch.min.bytes", ConfigType::kInt, "Bytes a follower fetch waits for.",
       [](const BrokerConfig& c) { return std::to_string(c.replica_fetch_min_bytes); }},
      {"replica.fetch.response.max.bytes", ConfigType::kInt,
       "Bytes a follower fetch asks for in total.",
       [](const BrokerConfig& c) { return std::to_string(c.replica_fetch_response_max_bytes); }},
      {"replica.fetch.wait.max.ms", ConfigType::kInt,
       "How long the leader holds a follower fetch that found no new data.",
       [](const BrokerConfig& c) { return std::to_string(c.replica_fetch_wait_max_ms); }},
      {"replica.lag.time.max.ms", ConfigType::kLong,
       "A follower not caught up for this long leaves the ISR.",
       [](const BrokerConfig& c) { return std::to_string(c.replica_lag_time_max_ms); }},
      {"socket.request.max.bytes", ConfigType::kInt, "Largest request frame accepted.",
       [](const BrokerConfig& c) { return std::to_string(c.socket_request_max_bytes); }},
      {"socket.send.buffer.bytes", ConfigType::kInt,
       "SO_SNDBUF of client connections; -1 = the OS's automatic sizing.",
       [](const BrokerConfig& c) { return std::to_string(c.socket_send_buffer_bytes); }},
      {"socket.receive.buffer.bytes", ConfigType::kInt,
       "SO_RCVBUF of client connections; -1 = the OS's automatic sizing.",
       [](const BrokerConfig& c) { return std::to_string(c.socket_receive_buffer_bytes); }},
  };
  return keys;
}

bool IsSet(const BrokerConfig& c, const std::string& key) {
  if (key == "node.id" || key == "broker.id") {
    return c.explicitly_set.count("node.id") || c.explicitly_set.count("broker.id");
  }
  if (key == "log.dirs") return c.explicitly_set.count("log.dirs") || c.explicitly_set.count("log.dir");
  return c.explicitly_set.count(key) > 0;
}

// A read-only entry with its static value (if set) and built-in default as
// synonyms, most specific first.
ConfigEntry Entry(const std::string& name, std::string value, std::string default_value,
                  bool is_static, ConfigType type, std::string doc) {
  ConfigEntry e;
  e.name = name;
  e.value = std::move(value);
  e.read_only = true;
  e.source = is_static ? ConfigSource::kStaticBrokerConfig : ConfigSource::kDefaultConfig;
  e.is_default = !is_static;
  e.type = type;
  e.documentation = std::move(doc);
  if (is_static) e.synonyms.push_back({name, e.value, ConfigSource::kStaticBrokerConfig});
  e.synonyms.push_back({name, std::move(default_value), ConfigSource::kDefaultConfig});
  return e;
}

std::string JoinListeners(const std::vector<Listener>& listeners) {
  std::string out;
  for (const Listener& l : listeners) out += (out.empty() ? "" : ",") + l.ToString();
  return out;
}

}  // namespace

std::vector<ConfigEntry> DescribeBrokerConfigs(const BrokerContext& ctx) {
  return DescribeBrokerConfigs(ctx.config(), ctx.advertised_host, ctx.advertised_port.load());
}

std::vector<ConfigEntry> DescribeBrokerConfigs(const BrokerConfig& config,
                                               const std::string& advertised_host,
                                               int32_t advertised_port) {
  static const BrokerConfig kBuiltIn;
  std::vector<ConfigEntry> out;
  for (const BrokerKey& k : ScalarKeys()) {
    out.push_back(Entry(k.name, k.value(config), k.value(kBuiltIn), IsSet(config, k.name), k.type,
                        k.doc));
  }
  std::vector<Listener> listening = config.listeners;
  if (listening.front().port == 0 && config.advertised_listeners.empty()) {
    listening.front().port = advertised_port;  // the port the OS picked
  }
  Listener advertised = config.advertised();
  advertised.host = advertised_host;
  advertised.port = advertised_port;
  out.push_back(Entry("listeners", JoinListeners(listening), JoinListeners(kBuiltIn.listeners),
                      IsSet(config, "listeners"), ConfigType::kString,
                      "The addresses this broker listens on (PLAINTEXT only)."));
  out.push_back(Entry("advertised.listeners", advertised.ToString(),
                      JoinListeners(kBuiltIn.listeners), IsSet(config, "advertised.listeners"),
                      ConfigType::kString, "The address given to clients in Metadata responses."));
  // Topic defaults, named by their broker property (log.retention.ms, ...).
  for (ConfigEntry e : DescribeTopicConfigs(config.topic_defaults(), {})) {
    std::string broker_name(BrokerSynonymOf(e.name));
    if (broker_name.empty()) continue;
    e.name = broker_name;
    e.read_only = true;
    out.push_back(std::move(e));  // synonyms already name the broker property
  }
  std::sort(out.begin(), out.end(),
            [](const ConfigEntry& a, const ConfigEntry& b) { return a.name < b.name; });
  return out;
}

}  // namespace headrace::broker
