// Command-line options of headrace-loadgen (see Usage() in options.cc).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace headrace::loadgen {

enum class Mode { kProduce, kConsume, kBoth };
// How a producer picks a partition for each message.
enum class Partitioner {
  kRoundRobin,  // message i of a producer goes to partition (start + i) % partitions
  kClient,      // RD_KAFKA_PARTITION_UA: librdkafka's own (sticky for null keys)
};

struct Options {
  Mode mode = Mode::kProduce;
  std::string bootstrap = "127.0.0.1:9092";
  std::string topic = "loadgen";
  int32_t partitions = 1;      // partitions 0..N-1 are written / read
  int32_t message_bytes = 1024;
  int64_t count = 0;           // messages in total (all producers); 0 = use duration
  double duration_s = 0;       // seconds of sending; used when count == 0
  std::string acks = "1";      // "0", "1", "all" (= -1)
  std::string linger_ms = "5";
  std::string batch_size = "1000000";  // librdkafka batch.size, bytes
  std::string compression = "none";
  int producers = 1;           // producer instances, one thread + client each
  int64_t txn_records = 0;     // > 0: each producer is transactional and commits every N messages
  bool warmup = false;         // each producer delivers one untimed message before timing starts
  int consumers = 1;           // consumer instances, one thread + client each
  double rate = 0;             // target msgs/s over all producers; 0 = as fast as possible
  Partitioner partitioner = Partitioner::kRoundRobin;
  bool from_beginning = true;  // consume mode: start at the log start (else at the end)
  double idle_timeout_s = 10;  // a consumer stops after this long without data
  int broker_pid = 0;          // 0 = do not report broker CPU
  bool json = false;           // one JSON line on stdout; human summary on stderr
  std::vector<std::pair<std::string, std::string>> producer_conf;  // --pset k=v
  std::vector<std::pair<std::string, std::string>> consumer_conf;  // --cset k=v
};

// Parses argv into *out; on error (or --help) prints to stderr and returns
// false. `exit_code` is 0 for --help, 2 for a usage error.
bool ParseOptions(int argc, char** argv, Options* out, int* exit_code);

}  // namespace headrace::loadgen
