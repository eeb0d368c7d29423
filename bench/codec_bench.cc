// Request decode micro-benchmarks: whole Produce and Fetch request frames
// (header + body) through the generated codec, as the broker's dispatcher
// decodes them.
//   Decode/Produce/v:V/partitions:N   N partitions, one 16 KiB batch each
//                                     (records are a view, not copied)
//   Decode/Fetch/v:V/partitions:N     N partitions of one topic
// Versions are the ones librdkafka 2.x sends (Produce 7, Fetch 11) and the
// newest flexible/topic-id ones.
#include <benchmark/benchmark.h>

#include <string>

#include "log/testing.h"
#include "protocol/codec.h"

namespace headrace {
namespace {

using protocol::Reader;

// One encoded request frame (without the 4-byte size prefix).
template <typename Request>
std::string Frame(const Request& body, int16_t version) {
  OutputBuffer out;
  protocol::EncodeRequest(out, 42, "loadgen", version, body);
  return out.Flatten();
}

std::string ProduceFrame(int partitions, int16_t version, std::string* batch) {
  *batch = testing::MakeBatch(16, 1024, 1700000000000);
  protocol::ProduceRequest req;
  req.acks = 1;
  req.timeout_ms = 30000;
  auto& topic = req.topic_data.emplace_back();
  topic.name = "bench-topic";
  for (int p = 0; p < partitions; ++p) {
    auto& pd = topic.partition_data.emplace_back();
    pd.index = p;
    pd.records.data = testing::Bytes(*batch);
  }
  return Frame(req, version);
}

std::string FetchFrame(int partitions, int16_t version) {
  protocol::FetchRequest req;
  req.replica_id = -1;
  req.max_wait_ms = 500;
  req.min_bytes = 1;
  req.max_bytes = 52428800;
  auto& topic = req.topics.emplace_back();
  topic.topic = "bench-topic";
  topic.topic_id.bytes[15] = 7;
  for (int p = 0; p < partitions; ++p) {
    auto& fp = topic.partitions.emplace_back();
    fp.partition = p;
    fp.fetch_offset = 123456789;
    fp.partition_max_bytes = 1048576;
  }
  return Frame(req, version);
}

// Decodes `frame` like the dispatcher: header, then the body as `Request`.
// items/s = requests/s; partitions/s = requests/s x partitions per request.
template <typename Request>
void DecodeLoop(benchmark::State& state, std::string& frame, int partitions) {
  std::span<uint8_t> bytes = testing::Bytes(frame);
  for (auto _ : state) {
    Reader r(bytes);
    protocol::RequestHeader h;
    Status st = protocol::DecodeRequestHeader(r, &h);
    Request req;
    if (st.ok()) st = req.Decode(r, h.request_api_version);
    if (!st.ok()) state.SkipWithError(st.ToString().c_str());
    benchmark::DoNotOptimize(req);
  }
  state.SetItemsProcessed(state.iterations());
  state.counters["partitions/s"] = benchmark::Counter(
      static_cast<double>(state.iterations()) * partitions, benchmark::Counter::kIsRate);
  state.counters["frame_bytes"] = static_cast<double>(frame.size());
}

void BM_DecodeProduce(benchmark::State& state) {
  std::string batch;
  std::string frame = ProduceFrame(static_cast<int>(state.range(1)),
                                   static_cast<int16_t>(state.range(0)), &batch);
  DecodeLoop<protocol::ProduceRequest>(state, frame, static_cast<int>(state.range(1)));
}
BENCHMARK(BM_DecodeProduce)
    ->Name("Decode/Produce")
    ->ArgNames({"v", "partitions"})
    ->ArgsProduct({{7, 9}, {1, 100}});

void BM_DecodeFetch(benchmark::State& state) {
  std::string frame =
      FetchFrame(static_cast<int>(state.range(1)), static_cast<int16_t>(state.range(0)));
  DecodeLoop<protocol::FetchRequest>(state, frame, static_cast<int>(state.range(1)));
}
BENCHMARK(BM_DecodeFetch)
    ->Name("Decode/Fetch")
    ->ArgNames({"v", "partitions"})
    ->ArgsProduct({{11, 13}, {1, 100, 1000}});

}  // namespace
}  // namespace headrace

BENCHMARK_MAIN();
