// The broker's static configuration (server.properties). Field comments give
// the Kafka property name; Set() accepts those names so an operator's
// properties file carries over. Every key is a row of one table
// (BrokerConfigKeyTable, broker_config.cc) from which parsing, DescribeConfigs
// and the broker section of docs/configuration.md come.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "broker/config/listener.h"
#include "broker/config/topic_config.h"
#include "common/file_env.h"
#include "headrace/log.h"
#include "headrace/status.h"

namespace headrace::broker {

struct BrokerConfig {
  int32_t node_id = 0;                        // node.id (alias broker.id)
  // listeners: every address served (listener.h). Never empty.
  std::vector<Listener> listeners = {{"PLAINTEXT", "127.0.0.1", 9092}};
  // advertised.listeners: per listener name, the address a client that
  // connected on that listener is given; names not listed advertise their
  // listener's own address. Empty = `listeners`.
  std::vector<Listener> advertised_listeners;
  // listener.security.protocol.map: listener name -> security protocol.
  std::map<std::string, net::SecurityProtocol> protocol_map = DefaultProtocolMap();
  // inter.broker.listener.name ("" = the listener named after
  // security.inter.broker.protocol, as Kafka).
  std::string inter_broker_listener_name;
  std::string security_inter_broker_protocol = "PLAINTEXT";  // security.inter.broker.protocol
  // log.dirs (alias log.dir): the first directory is data_dir, which also
  // holds the broker's metadata; log_dirs is every directory in order
  // (empty = data_dir alone). log_dirs.h places partitions over them.
  std::string data_dir = "/tmp/headrace-logs";
  std::vector<std::string> log_dirs;
  int32_t io_threads = 2;                     // num.io.threads
  // cluster.id: "" = take the one stored in the metadata file, or generate
  // one at first start and store it. If set, must match the stored one.
  std::string cluster_id;
  bool auto_create_topics_enable = true;      // auto.create.topics.enable
  int32_t num_partitions = 1;                 // num.partitions
  int16_t default_replication_factor = 1;     // default.replication.factor
  int32_t socket_request_max_bytes = 104857600;  // socket.request.max.bytes
  int32_t max_connections = 10000;            // max.connections
  int32_t max_connections_per_ip = 2147483647;  // max.connections.per.ip
  // connections.max.idle.ms: a connection with nothing in flight and no
  // traffic for this long is closed; -1 = never.
  int64_t connections_max_idle_ms = 600000;
  // queued.max.request.bytes: bytes of received, not yet answered requests
  // (and of requests being received) across all connections; over it,
  // connections are not read. -1 = no limit (Kafka's default).
  int64_t queued_max_request_bytes = int64_t{512} << 20;
  // headrace.max.partitions: partitions this broker hosts at most (each
  // holds about one file descriptor and is opened at every start).
  int32_t max_partitions = 10000;
  // headrace.max.partitions.per.request: partitions one CreateTopics or
  // CreatePartitions request may create at most (each takes 1-2 ms of the
  // admin worker).
  int32_t max_partitions_per_request = 5000;
  // socket.send.buffer.bytes / socket.receive.buffer.bytes (SO_SNDBUF /
  // SO_RCVBUF of client connections); -1 = the OS's automatic sizing.
  int32_t socket_send_buffer_bytes = -1;
  int32_t socket_receive_buffer_bytes = -1;
  // headrace.socket.local.congestion.control: TCP congestion control of
  // client connections from this host (net::SetLocalCongestionControl);
  // empty = the system's default.
  std::string socket_local_congestion_control = "reno";

  // Defaults for new topics; topic configs override them per topic.
  // log.segment.bytes, log.roll.ms (log.roll.hours), log.retention.ms
  // (log.retention.minutes, log.retention.hours), log.retention.bytes,
  // log.flush.interval.messages, log.flush.interval.ms, message.max.bytes,
  // log.message.timestamp.type, log.index.interval.bytes,
  // log.index.size.max.bytes.
  LogConfig log_defaults;
  std::string log_cleanup_policy = "delete";  // log.cleanup.policy
  int32_t min_insync_replicas = 1;            // min.insync.replicas
  // Defaults of the topic keys headrace stores without acting on them
  // (TopicSettings::passive), e.g. "preallocate" from log.preallocate.
  std::map<std::string, std::string> passive_topic_defaults;

  int64_t log_retention_check_interval_ms = 300000;  // log.retention.check.interval.ms
  // producer.id.expiration.ms: a producer's state (sequences, epoch) is
  // forgotten this long after its last write, unless it has an open
  // transaction (checked at each retention check).
  int64_t producer_id_expiration_ms = 86400000;
  // How often the maintenance thread checks time-based roll (segment.ms) and
  // flush (flush.ms) policies.              log.flush.scheduler.interval.ms
  int64_t log_flush_scheduler_interval_ms = 1000;

  // Durability of acks=all (group commit, see Flusher):
  // headrace.acks.all.fsync: an acks=all produce is answered only after its
  // batch is fsynced. false = answered once appended (Kafka's behaviour).
  bool acks_all_fsync = true;
  // headrace.group.commit.linger.us: how long the flusher waits after the
  // first pending request before fsyncing, to gather more (0 = none; requests
  // that arrive while an fsync runs are batched into the next one anyway).
  int64_t group_commit_linger_us = 0;
  // headrace.flush.threads: how many partitions of one flusher round are
  // fsynced at once (the flusher thread plus a pool; 1 = serially, on the
  // flusher thread). 4: a round of 4 partitions takes 0.48 of one thread's
  // time on this project's ext4 VM (docs/durability.md, "Flusher threads").
  int64_t flush_threads = 4;
  // headrace.log.writer.threads: threads per log directory that run Produce
  // appends (storage/log_writers.h). A write held by writeback holds one of
  // them: the directory's other partitions go on with the rest. 0 = appends
  // on the network threads.
  int64_t log_writer_threads = 4;
  // headrace.follower.uncached.writes: a follower writes what it copies from
  // its leader with uncached buffered I/O (WriteCache::kDrop, RWF_DONTCACHE):
  // its pages leave the page cache once written back, which keeps the page
  // cache for the data consumers read from leaders and costs the follower
  // less CPU (docs/performance.md, "Replication"). A follower made leader
  // reads its recent data from disk at first.
  bool follower_uncached_writes = true;

  // Cluster mode (docs/cluster.md). zookeeper.connect: "" = the embedded
  // single-node broker; otherwise HOST:PORT[,HOST:PORT...][/chroot] of the
  // ZooKeeper ensemble the control plane (Python, kazoo) joins. The C++
  // data plane never connects to it; it takes the cluster's state from the
  // control plane (Broker::ApplyClusterState).
  std::string zookeeper_connect;
  int64_t zookeeper_session_timeout_ms = 18000;     // zookeeper.session.timeout.ms
  int64_t zookeeper_connection_timeout_ms = 18000;  // zookeeper.connection.timeout.ms
  std::string broker_rack;                          // broker.rack ("" = none)
  bool unclean_leader_election_enable = false;      // unclean.leader.election.enable
  bool cluster_mode() const { return !zookeeper_connect.empty(); }
  // Replication (followers fetching from leaders; docs/cluster.md). Kafka's
  // names and defaults.
  // replica.lag.time.max.ms: a follower that has not caught up with the
  // leader's log end for this long leaves the ISR.
  int64_t replica_lag_time_max_ms = 30000;
  // replica.high.watermark.checkpoint.interval.ms (cluster mode;
  // hw_checkpoint.h).
  int64_t replica_high_watermark_checkpoint_interval_ms = 5000;
  int32_t replica_fetch_max_bytes = 1048576;            // replica.fetch.max.bytes (per partition)
  int32_t replica_fetch_response_max_bytes = 10485760;  // replica.fetch.response.max.bytes
  int32_t replica_fetch_wait_max_ms = 500;              // replica.fetch.wait.max.ms
  int32_t replica_fetch_min_bytes = 1;                  // replica.fetch.min.bytes
  int32_t replica_fetch_backoff_ms = 1000;              // replica.fetch.backoff.ms
  // replica.socket.timeout.ms: a follower's connect, and each of its
  // requests to the leader, gets no answer within it -> the connection is
  // closed and reopened after replica.fetch.backoff.ms. Must be >=
  // replica.fetch.wait.max.ms (Validate), as Kafka requires.
  int32_t replica_socket_timeout_ms = 30000;
  // num.replica.fetchers: fetcher threads per source broker (only 1 is
  // implemented; larger values are accepted and act as 1).
  int32_t num_replica_fetchers = 1;

  // Not a property: the I/O seam every log and broker file goes through
  // (null = the OS). Tests and the HEADRACE_FAULT_INJECT hook set it; it
  // must outlive the BrokerState.
  FileEnv* file_env = nullptr;

  // Kafka property names set explicitly through Set(), e.g. "log.retention.ms".
  std::set<std::string> explicitly_set;
  // Every start property as given, including other families' keys
  // (group.*, transaction.*, ...): DescribeConfigs (BROKER) describes each
  // registered family from it (config_table.h).
  std::map<std::string, std::string> start_properties;

  // Whether `key` (or a property setting the same value: broker.id for
  // node.id, log.retention.hours for log.retention.ms, ...) was set.
  bool IsSet(std::string_view key) const;
  // Takes the topic defaults (log_defaults, log_cleanup_policy,
  // min_insync_replicas, passive_topic_defaults) from `s`.
  void SetTopicDefaults(const TopicSettings& s);

  // Sets one property by its Kafka name. Errors: InvalidArgument naming the
  // key ("num.partitions: must be an integer >= 1"); NotFound for an unknown key.
  Status Set(std::string_view key, std::string_view value);
  // Sets every pair; unknown keys are collected into `*ignored` if given,
  // otherwise they are an error.
  Status SetAll(const std::map<std::string, std::string>& props,
                std::set<std::string>* ignored = nullptr);
  // Cross-field checks (ports, ids, sizes, a non-empty data_dir).
  Status Validate() const;
  // An advertised.listeners value for this broker (at start, or a dynamic
  // per-broker change): parsed, and every name one of `listeners`. Errors:
  // InvalidArgument naming the key.
  Result<std::vector<Listener>> ParseAdvertisedListeners(std::string_view value) const;

  // The address Metadata hands out: the first advertised listener, else
  // the first listener.
  const Listener& advertised() const {
    return advertised_listeners.empty() ? listeners.front() : advertised_listeners.front();
  }
  // The advertised address of listener `name` (its advertised.listeners
  // entry, else the listener itself); null when no listener has the name.
  const Listener* advertised_for(std::string_view name) const;
  // The security protocol of `l` (Validate() checked that the map has it).
  net::SecurityProtocol protocol_of(const Listener& l) const {
    auto it = protocol_map.find(l.name);
    return it == protocol_map.end() ? net::SecurityProtocol::kPlaintext : it->second;
  }
  // The listener brokers of a cluster talk to each other over.
  std::string inter_broker_listener() const;
  static std::map<std::string, net::SecurityProtocol> DefaultProtocolMap();
  const std::string& effective_advertised_host() const { return advertised().host; }
  int32_t effective_advertised_port() const { return advertised().port; }
  // What a new topic inherits (see topic_config.h).
  TopicDefaults topic_defaults() const;
};

// One row of the broker key table.
struct BrokerKeyInfo {
  std::string name;
  ConfigType type;
  std::string default_value;
  std::string valid;  // valid values / range ("" = any)
  UpdateMode mode;
  std::string doc;
  std::string topic_key;  // the topic key this is the default of ("" = none)
};

// Every key BrokerConfig::Set accepts, sorted by name.
const std::vector<BrokerKeyInfo>& BrokerConfigKeyTable();
const BrokerKeyInfo* FindBrokerKey(std::string_view key);  // null if not a BrokerConfig key
// The current value of `key` in the form Set accepts; nullopt: not a key.
std::optional<std::string> BrokerConfigValue(const BrokerConfig& config, std::string_view key);

// log.dirs (log_dirs.h places partitions over them):
// "a, b,c" -> {"a", "b", "c"}. Errors (InvalidArgument, naming log.dirs):
// an empty entry, the same directory twice.
Result<std::vector<std::string>> ParseLogDirs(std::string_view value);
// config.log_dirs, or {config.data_dir} when it is empty.
std::vector<std::string> ConfiguredLogDirs(const BrokerConfig& config);
// `dir` made absolute and lexically normal, without a trailing '/': the
// form in which log directories are compared and kept.
std::string NormaliseLogDir(const std::string& dir);

}  // namespace headrace::broker
