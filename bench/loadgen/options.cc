#include "options.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>

namespace headrace::loadgen {
namespace {

const char kUsage[] = R"(usage: headrace-loadgen MODE [options]

MODE
  produce   send messages, report throughput and produce (delivery) latency
  consume   read partitions 0..N-1 (by default from the start until the end
            of each), report throughput
  both      producers and consumers at once: consumers start at the end of
            the log, so end-to-end latency covers exactly the new messages

options
  --bootstrap HOST:PORT   broker (default 127.0.0.1:9092)
  --topic NAME            topic (default loadgen); must exist
  --partitions N          partitions 0..N-1 to use (default 1)
  --size BYTES            message value size (default 1024; >= 12 embeds the
                          send timestamp for end-to-end latency)
  --count N               messages in total over all producers, or to consume
  --duration S            seconds of sending (when --count is not given)
  --acks 0|1|all          (default 1)
  --linger-ms MS          librdkafka linger.ms (default 5)
  --batch-size BYTES      librdkafka batch.size (default 1000000)
  --compression C         none|gzip|snappy|lz4|zstd (default none)
  --producers N           producer instances, each a thread with its own client
  --consumers N           consumer instances, each a thread with its own client;
                          partitions are dealt out among them
  --txn-records N         transactional producers (transactional.id
                          headrace-loadgen-PID-I), each committing every N
                          messages; commit latency is reported. Each serves
                          its own delivery reports, at commit: delivery
                          latency then includes the wait for the commit
  --warmup                each producer connects and delivers one message
                          (not counted) before timing starts; a transactional
                          one commits it
  --rate MSGS_PER_S       target rate over all producers (default: unlimited)
  --partitioner rr|client rr: explicit per-message round robin (default);
                          client: librdkafka's partitioner (sticky for null keys)
  --from-end              consume mode: start at the end instead of the start
  --idle-timeout S        a consumer gives up after S seconds without data (10)
  --broker-pid PID        report the broker's CPU seconds (from /proc/PID/stat)
  --pset KEY=VALUE        extra librdkafka producer property (repeatable)
  --cset KEY=VALUE        extra librdkafka consumer property (repeatable)
  --json                  print one JSON line on stdout (summary on stderr)

MB means 10^6 bytes of message values. Latencies are in microseconds.
)";

bool SplitKeyValue(const char* s, std::pair<std::string, std::string>* kv) {
  const char* eq = std::strchr(s, '=');
  if (eq == nullptr || eq == s) return false;
  *kv = {std::string(s, eq), std::string(eq + 1)};
  return true;
}

bool ToInt(const char* s, int64_t* v) {
  char* end = nullptr;
  *v = std::strtoll(s, &end, 10);
  return end != s && *end == '\0';
}

bool ToDouble(const char* s, double* v) {
  char* end = nullptr;
  *v = std::strtod(s, &end);
  return end != s && *end == '\0';
}

bool ParseMode(const char* s, Mode* m) {
  if (std::strcmp(s, "produce") == 0) *m = Mode::kProduce;
  else if (std::strcmp(s, "consume") == 0) *m = Mode::kConsume;
  else if (std::strcmp(s, "both") == 0) *m = Mode::kBoth;
  else return false;
  return true;
}

// Handlers for options that take a value; each returns false on a bad value.
using Setter = std::function<bool(Options&, const char*)>;

template <typename T>
Setter IntInto(T Options::*field, int64_t min) {
  return [field, min](Options& o, const char* v) {
    int64_t n = 0;
    if (!ToInt(v, &n) || n < min) return false;
    o.*field = static_cast<T>(n);
    return true;
  };
}

Setter DoubleInto(double Options::*field) {
  return [field](Options& o, const char* v) { return ToDouble(v, &(o.*field)) && o.*field >= 0; };
}

Setter StringInto(std::string Options::*field) {
  return [field](Options& o, const char* v) { o.*field = v; return true; };
}

const std::map<std::string, Setter>& ValueOptions() {
  static const std::map<std::string, Setter> m = {
      {"--bootstrap", StringInto(&Options::bootstrap)},
      {"--topic", StringInto(&Options::topic)},
      {"--partitions", IntInto(&Options::partitions, 1)},
      {"--size", IntInto(&Options::message_bytes, 0)},
      {"--count", IntInto(&Options::count, 1)},
      {"--duration", DoubleInto(&Options::duration_s)},
      {"--acks", [](Options& o, const char* v) {
         o.acks = std::strcmp(v, "all") == 0 ? "-1" : v;
         return o.acks == "0" || o.acks == "1" || o.acks == "-1";
       }},
      {"--linger-ms", StringInto(&Options::linger_ms)},
      {"--batch-size", StringInto(&Options::batch_size)},
      {"--compression", StringInto(&Options::compression)},
      {"--producers", IntInto(&Options::producers, 1)},
      {"--consumers", IntInto(&Options::consumers, 1)},
      {"--rate", DoubleInto(&Options::rate)},
      {"--txn-records", IntInto(&Options::txn_records, 1)},
      {"--partitioner", [](Options& o, const char* v) {
         if (std::strcmp(v, "rr") == 0) o.partitioner = Partitioner::kRoundRobin;
         else if (std::strcmp(v, "client") == 0) o.partitioner = Partitioner::kClient;
         else return false;
         return true;
       }},
      {"--idle-timeout", DoubleInto(&Options::idle_timeout_s)},
      {"--broker-pid", IntInto(&Options::broker_pid, 0)},
      {"--pset", [](Options& o, const char* v) {
         std::pair<std::string, std::string> kv;
         if (!SplitKeyValue(v, &kv)) return false;
         o.producer_conf.push_back(kv);
         return true;
       }},
      {"--cset", [](Options& o, const char* v) {
         std::pair<std::string, std::string> kv;
         if (!SplitKeyValue(v, &kv)) return false;
         o.consumer_conf.push_back(kv);
         return true;
       }},
  };
  return m;
}

bool UsageError(const char* fmt, const char* arg, int* exit_code) {
  std::fprintf(stderr, "headrace-loadgen: ");
  std::fprintf(stderr, fmt, arg);
  std::fprintf(stderr, "\n\n%s", kUsage);
  *exit_code = 2;
  return false;
}

}  // namespace

bool ParseOptions(int argc, char** argv, Options* out, int* exit_code) {
  if (argc >= 2 && (std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0)) {
    std::fputs(kUsage, stderr);
    *exit_code = 0;
    return false;
  }
  if (argc < 2 || !ParseMode(argv[1], &out->mode))
    return UsageError("first argument must be produce, consume or both (got '%s')",
                      argc < 2 ? "" : argv[1], exit_code);
  for (int i = 2; i < argc; ++i) {
    const char* a = argv[i];
    if (std::strcmp(a, "--json") == 0) { out->json = true; continue; }
    if (std::strcmp(a, "--from-end") == 0) { out->from_beginning = false; continue; }
    if (std::strcmp(a, "--warmup") == 0) { out->warmup = true; continue; }
    auto it = ValueOptions().find(a);
    if (it == ValueOptions().end()) return UsageError("unknown option '%s'", a, exit_code);
    if (i + 1 >= argc) return UsageError("option '%s' needs a value", a, exit_code);
    if (!it->second(*out, argv[++i])) return UsageError("bad value for '%s'", a, exit_code);
  }
  if (out->mode != Mode::kConsume && out->count == 0 && out->duration_s <= 0)
    return UsageError("%sgive --count or --duration", "", exit_code);
  return true;
}

}  // namespace headrace::loadgen
