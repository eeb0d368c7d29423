#include "headrace/line_producer.h"

#include <dlfcn.h>
#include <link.h>
#include <librdkafka/rdkafka.h>

#include <cstring>
#include <mutex>

namespace headrace {

// The librdkafka functions LineProducer calls, resolved once per process.
// Only rdkafka.h's declarations are used (for the types); nothing is linked.
struct LineProducer::Api {
  decltype(&rd_kafka_conf_new) conf_new;
  decltype(&rd_kafka_conf_set) conf_set;
  decltype(&rd_kafka_conf_destroy) conf_destroy;
  decltype(&rd_kafka_conf_set_opaque) conf_set_opaque;
  decltype(&rd_kafka_conf_set_dr_msg_cb) conf_set_dr_msg_cb;
  decltype(&rd_kafka_conf_set_log_cb) conf_set_log_cb;
  decltype(&rd_kafka_conf_set_error_cb) conf_set_error_cb;
  decltype(&rd_kafka_new) new_handle;
  decltype(&rd_kafka_destroy) destroy;
  decltype(&rd_kafka_topic_new) topic_new;
  decltype(&rd_kafka_topic_destroy) topic_destroy;
  decltype(&rd_kafka_produce) produce;
  decltype(&rd_kafka_last_error) last_error;
  decltype(&rd_kafka_poll) poll;
  decltype(&rd_kafka_flush) flush;
  decltype(&rd_kafka_outq_len) outq_len;
  decltype(&rd_kafka_metadata) metadata;
  decltype(&rd_kafka_metadata_destroy) metadata_destroy;
  decltype(&rd_kafka_err2name) err2name;
  decltype(&rd_kafka_err2str) err2str;
};

namespace {

// The path of a librdkafka already mapped into this process, or "".
std::string LoadedLibrdkafka() {
  std::string found;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* out) -> int {
        const char* name = info->dlpi_name;
        if (name == nullptr || std::strstr(name, "librdkafka") == nullptr ||
            std::strstr(name, "librdkafka++") != nullptr) {
          return 0;
        }
        *static_cast<std::string*>(out) = name;
        return 1;
      },
      &found);
  return found;
}

template <typename F>
bool Resolve(void* lib, const char* symbol, F* out) {
  *out = reinterpret_cast<F>(dlsym(lib, symbol));
  return *out != nullptr;
}

// Resolves the Api from the loaded librdkafka (or librdkafka.so.1). The
// handle is never closed: the functions stay valid for the process.
Result<const LineProducer::Api*> LoadApi() {
  static std::once_flag once;
  static LineProducer::Api api;
  static std::string error;
  std::call_once(once, [] {
    const std::string loaded = LoadedLibrdkafka();
    void* lib = loaded.empty() ? dlopen("librdkafka.so.1", RTLD_NOW | RTLD_LOCAL)
                               : dlopen(loaded.c_str(), RTLD_NOW | RTLD_NOLOAD);
    if (lib == nullptr) {
      const char* why = dlerror();
      error = std::string("librdkafka not loadable: ") + (why ? why : "unknown");
      return;
    }
    bool ok = Resolve(lib, "rd_kafka_conf_new", &api.conf_new) &&
              Resolve(lib, "rd_kafka_conf_set", &api.conf_set) &&
              Resolve(lib, "rd_kafka_conf_destroy", &api.conf_destroy) &&
              Resolve(lib, "rd_kafka_conf_set_opaque", &api.conf_set_opaque) &&
              Resolve(lib, "rd_kafka_conf_set_dr_msg_cb", &api.conf_set_dr_msg_cb) &&
              Resolve(lib, "rd_kafka_conf_set_log_cb", &api.conf_set_log_cb) &&
              Resolve(lib, "rd_kafka_conf_set_error_cb", &api.conf_set_error_cb) &&
              Resolve(lib, "rd_kafka_new", &api.new_handle) &&
              Resolve(lib, "rd_kafka_destroy", &api.destroy) &&
              Resolve(lib, "rd_kafka_topic_new", &api.topic_new) &&
              Resolve(lib, "rd_kafka_topic_destroy", &api.topic_destroy) &&
              Resolve(lib, "rd_kafka_produce", &api.produce) &&
              Resolve(lib, "rd_kafka_last_error", &api.last_error) &&
              Resolve(lib, "rd_kafka_poll", &api.poll) &&
              Resolve(lib, "rd_kafka_flush", &api.flush) &&
              Resolve(lib, "rd_kafka_outq_len", &api.outq_len) &&
              Resolve(lib, "rd_kafka_metadata", &api.metadata) &&
              Resolve(lib, "rd_kafka_metadata_destroy", &api.metadata_destroy) &&
              Resolve(lib, "rd_kafka_err2name", &api.err2name) &&
              Resolve(lib, "rd_kafka_err2str", &api.err2str);
    if (!ok) error = "librdkafka lacks a function the bulk producer needs";
  });
  if (!error.empty()) return Status::Unsupported(error);
  return &api;
}

// Delivery reports: with delivery.report.only.error only failures arrive.
void OnDelivery(rd_kafka_t*, const rd_kafka_message_t* msg, void* opaque) {
  if (msg->err != RD_KAFKA_RESP_ERR_NO_ERROR) {
    static_cast<LineProducer*>(opaque)->RecordFailure(msg->err);
  }
}

void Quiet(const rd_kafka_t*, int, const char*, const char*) {}
void QuietError(rd_kafka_t*, int, const char*, void*) {}

constexpr size_t kFailuresKept = 3;

}  // namespace

LineProducer::LineProducer(const Api* api, void* rk, void* rkt) : api_(api), rk_(rk), rkt_(rkt) {}

LineProducer::~LineProducer() {
  if (rkt_ != nullptr) api_->topic_destroy(static_cast<rd_kafka_topic_t*>(rkt_));
  if (rk_ != nullptr) api_->destroy(static_cast<rd_kafka_t*>(rk_));
}

Result<std::unique_ptr<LineProducer>> LineProducer::Open(
    const std::vector<std::pair<std::string, std::string>>& conf, const std::string& topic) {
  Result<const Api*> loaded = LoadApi();
  if (!loaded.ok()) return loaded.status();
  const Api* api = loaded.value();
  // The object exists before the handle: the delivery callback's opaque.
  std::unique_ptr<LineProducer> p(new LineProducer(api, nullptr, nullptr));
  rd_kafka_conf_t* c = api->conf_new();
  char err[512];
  for (const auto& [key, value] : conf) {
    if (api->conf_set(c, key.c_str(), value.c_str(), err, sizeof err) != RD_KAFKA_CONF_OK) {
      api->conf_destroy(c);
      return Status::InvalidArgument(err);
    }
  }
  api->conf_set_opaque(c, p.get());
  api->conf_set_dr_msg_cb(c, OnDelivery);
  api->conf_set_log_cb(c, Quiet);
  api->conf_set_error_cb(c, QuietError);
  rd_kafka_t* rk = api->new_handle(RD_KAFKA_PRODUCER, c, err, sizeof err);
  if (rk == nullptr) {  // the conf is still ours
    api->conf_destroy(c);
    return Status::InvalidArgument(err);
  }
  p->rk_ = rk;
  p->rkt_ = api->topic_new(rk, topic.c_str(), nullptr);
  if (p->rkt_ == nullptr) {
    return Status::InvalidArgument(api->err2str(api->last_error()));
  }
  return p;
}

void LineProducer::RecordFailure(int code) {
  ++failed_;
  if (failures_.size() < kFailuresKept) {
    auto err = static_cast<rd_kafka_resp_err_t>(code);
    failures_.push_back({code, api_->err2name(err), api_->err2str(err)});
  }
}

ProduceTopicInfo LineProducer::Describe(int timeout_ms) {
  ProduceTopicInfo info;
  const rd_kafka_metadata_t* md = nullptr;
  rd_kafka_resp_err_t err = api_->metadata(static_cast<rd_kafka_t*>(rk_), 0,
                                           static_cast<rd_kafka_topic_t*>(rkt_), &md, timeout_ms);
  if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
    info.error = err;
    info.error_text = api_->err2str(err);
    return info;
  }
  if (md->topic_cnt > 0) {
    const rd_kafka_metadata_topic_t& t = md->topics[0];
    info.error = t.err;
    if (t.err != RD_KAFKA_RESP_ERR_NO_ERROR) info.error_text = api_->err2str(t.err);
    for (int i = 0; i < t.partition_cnt; ++i) info.partitions.push_back(t.partitions[i].id);
  }
  api_->metadata_destroy(md);
  return info;
}

size_t LineProducer::Produce(const std::vector<std::string_view>& values, int32_t partition) {
  auto* rkt = static_cast<rd_kafka_topic_t*>(rkt_);
  const int32_t part = partition < 0 ? RD_KAFKA_PARTITION_UA : partition;
  for (size_t i = 0; i < values.size(); ++i) {
    const std::string_view v = values[i];
    if (api_->produce(rkt, part, RD_KAFKA_MSG_F_COPY, const_cast<char*>(v.data()), v.size(),
                      nullptr, 0, nullptr) == 0) {
      continue;
    }
    const rd_kafka_resp_err_t err = api_->last_error();
    if (err == RD_KAFKA_RESP_ERR__QUEUE_FULL) return i;
    RecordFailure(err);  // e.g. MSG_SIZE_TOO_LARGE, UNKNOWN_PARTITION
  }
  return values.size();
}

void LineProducer::Poll(int timeout_ms) { api_->poll(static_cast<rd_kafka_t*>(rk_), timeout_ms); }

int LineProducer::Flush(int timeout_ms) {
  api_->flush(static_cast<rd_kafka_t*>(rk_), timeout_ms);
  return QueueLength();
}

int LineProducer::QueueLength() const {
  return api_->outq_len(static_cast<rd_kafka_t*>(rk_));
}

}  // namespace headrace
