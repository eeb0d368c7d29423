// Every message of every schema at every valid version: encode, decode,
// re-encode gives the same bytes and consumes them all. Once with default
// values and once with every field set (FillSample, generated).
#include <gtest/gtest.h>

#include "protocol/messages.h"
#include "protocol/messages_samples.h"
#include "protocol/test_util.h"

namespace headrace::protocol {
namespace {

using testing::EncodeToString;

template <typename M>
void ExpectRoundTrip(const M& m, int16_t version, const char* name, int* checked) {
  std::string first = EncodeToString(m, version);
  std::vector<uint8_t> frame(first.begin(), first.end());
  Reader r(frame);
  M back;
  Status st = back.Decode(r, version);
  ASSERT_TRUE(st.ok()) << name << " v" << version << ": " << st.ToString();
  EXPECT_EQ(r.remaining(), 0u) << name << " v" << version;
  EXPECT_EQ(EncodeToString(back, version), first) << name << " v" << version;
  // Decoding a strict prefix of a well-formed message must fail, never crash.
  for (size_t cut : {size_t{0}, frame.size() / 2, frame.size() - 1}) {
    if (cut >= frame.size()) continue;
    std::vector<uint8_t> prefix(frame.begin(), frame.begin() + cut);
    Reader pr(prefix);
    M partial;
    EXPECT_FALSE(partial.Decode(pr, version).ok()) << name << " v" << version << " cut " << cut;
  }
  ++*checked;
}

TEST(RoundTripTest, EveryMessageEveryVersionDefaultAndFilled) {
  int checked = 0, messages = 0;
  testing::VisitAllMessageTypes([&](auto type) {
    using M = typename decltype(type)::type;
    ++messages;
    M filled;
    testing::FillSample(filled);
    for (int v = M::kMinVersion; v <= M::kMaxVersion; ++v) {
      ExpectRoundTrip(M{}, static_cast<int16_t>(v), typeid(M).name(), &checked);
      ExpectRoundTrip(filled, static_cast<int16_t>(v), typeid(M).name(), &checked);
    }
  });
  EXPECT_EQ(messages, 192);
  EXPECT_GT(checked, 1000);
}

TEST(RoundTripTest, FilledFetchResponseKeepsItsValuesAtTheLatestVersion) {
  FetchResponse m;
  testing::FillSample(m);
  std::string bytes = EncodeToString(m, 16);
  std::vector<uint8_t> frame(bytes.begin(), bytes.end());
  Reader r(frame);
  FetchResponse back;
  ASSERT_TRUE(back.Decode(r, 16).ok());
  ASSERT_EQ(back.responses.size(), 2u);
  ASSERT_EQ(back.responses[0].partitions.size(), 2u);
  const auto& p = back.responses[0].partitions[0];
  EXPECT_EQ(p.current_leader, m.responses[0].partitions[0].current_leader);
  EXPECT_FALSE(p.current_leader == FetchResponse::LeaderIdAndEpoch{});
  EXPECT_EQ(std::string(p.records.data.begin(), p.records.data.end()),
            m.responses[0].partitions[0].records.owned);
  EXPECT_EQ(back.node_endpoints, m.node_endpoints);
  EXPECT_EQ(back.responses[0].topic_id, m.responses[0].topic_id);
}

}  // namespace
}  // namespace headrace::protocol
