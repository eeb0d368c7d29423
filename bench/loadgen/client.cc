#include "client.h"

#include <utility>
#include <vector>

namespace headrace::loadgen {
namespace {

using Properties = std::vector<std::pair<std::string, std::string>>;

// A conf with every property of `props` set, or null (and *error) if one is
// rejected.
rd_kafka_conf_t* BuildConf(const Properties& props, std::string* error) {
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  char err[512];
  for (const auto& [k, v] : props) {
    if (rd_kafka_conf_set(conf, k.c_str(), v.c_str(), err, sizeof(err)) != RD_KAFKA_CONF_OK) {
      *error = k + "=" + v + ": " + err;
      rd_kafka_conf_destroy(conf);
      return nullptr;
    }
  }
  return conf;
}

rd_kafka_t* NewClient(rd_kafka_type_t type, rd_kafka_conf_t* conf, std::string* error) {
  char err[512];
  rd_kafka_t* rk = rd_kafka_new(type, conf, err, sizeof(err));  // takes conf on success
  if (rk == nullptr) {
    *error = err;
    rd_kafka_conf_destroy(conf);
  }
  return rk;
}

}  // namespace

rd_kafka_t* NewProducer(const Options& o, void (*dr_cb)(rd_kafka_t*, const rd_kafka_message_t*, void*),
                        void* opaque, std::string* error) {
  Properties props = {
      {"bootstrap.servers", o.bootstrap},
      {"acks", o.acks},
      {"linger.ms", o.linger_ms},
      {"batch.size", o.batch_size},
      {"compression.type", o.compression},
      // The generator must never be limited by its own queue.
      {"queue.buffering.max.messages", "2000000"},
      {"queue.buffering.max.kbytes", "2097151"},
      {"enable.idempotence", "false"},
  };
  props.insert(props.end(), o.producer_conf.begin(), o.producer_conf.end());
  rd_kafka_conf_t* conf = BuildConf(props, error);
  if (conf == nullptr) return nullptr;
  rd_kafka_conf_set_dr_msg_cb(conf, dr_cb);
  rd_kafka_conf_set_opaque(conf, opaque);
  return NewClient(RD_KAFKA_PRODUCER, conf, error);
}

rd_kafka_t* NewConsumer(const Options& o, std::string* error) {
  Properties props = {
      {"bootstrap.servers", o.bootstrap},
      // Needed by the consumer API; no subscription and no commits use it.
      {"group.id", "headrace-loadgen"},
      {"enable.partition.eof", "true"},
      {"enable.auto.commit", "false"},
      {"enable.auto.offset.store", "false"},
      {"fetch.wait.max.ms", "100"},
  };
  props.insert(props.end(), o.consumer_conf.begin(), o.consumer_conf.end());
  rd_kafka_conf_t* conf = BuildConf(props, error);
  if (conf == nullptr) return nullptr;
  rd_kafka_t* rk = NewClient(RD_KAFKA_CONSUMER, conf, error);
  if (rk != nullptr) rd_kafka_poll_set_consumer(rk);
  return rk;
}

}  // namespace headrace::loadgen
