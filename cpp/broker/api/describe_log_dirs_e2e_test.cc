// End to end over a socket: DescribeLogDirs reports the broker's data dir,
// each partition's exact size in bytes (= the produced batches = the .log
// files on disk), the topic filter (null = all; unknown topics/partitions
// absent), the volume sizes of v4, every version's wire shape and a
// missing data dir (KAFKA_STORAGE_ERROR).
#include <filesystem>

#include "broker/api/admin_e2e_fixture.h"

namespace headrace {
namespace {

using Dirs = DescribeLogDirsResponse;

class DescribeLogDirsE2ETest : public AdminE2ETest {
 protected:
  // Produces `batch` to topic/partition with acks=all; returns the error code.
  int16_t ProduceTo(const std::string& topic, int32_t partition, std::string batch) {
    ProduceRequest req;
    req.acks = -1;  // answered once committed (visible to reads)
    req.timeout_ms = 5000;
    auto& t = req.topic_data.emplace_back();
    t.name = topic;
    t.partition_data.push_back({partition, Records::FromBytes(std::move(batch))});
    auto resp = Call<ProduceResponse>(req, 9);
    if (resp.responses.size() != 1 || resp.responses[0].partition_responses.size() != 1) {
      ADD_FAILURE() << "produce response has the wrong shape";
      return -1;
    }
    return resp.responses[0].partition_responses[0].error_code;
  }

  Dirs DescribeDirs(std::optional<std::vector<DescribeLogDirsRequest::DescribableLogDirTopic>>
                        topics,
                    int16_t version = 4) {
    DescribeLogDirsRequest req;
    req.topics = std::move(topics);
    return Call<Dirs>(req, version);
  }

  // {topic: {partition: size}} of the one result, with offset lag 0 and
  // is_future_key false checked on the way.
  static std::map<std::string, std::map<int32_t, int64_t>> Sizes(const Dirs& resp) {
    std::map<std::string, std::map<int32_t, int64_t>> out;
    if (resp.results.size() != 1) {
      ADD_FAILURE() << "expected one log dir, got " << resp.results.size();
      return out;
    }
    for (const auto& t : resp.results[0].topics) {
      EXPECT_FALSE(out.count(t.name)) << "topic listed twice: " << t.name;
      for (const auto& p : t.partitions) {
        EXPECT_EQ(p.offset_lag, 0) << t.name << "-" << p.partition_index;
        EXPECT_FALSE(p.is_future_key);
        EXPECT_FALSE(out[t.name].count(p.partition_index)) << "partition listed twice";
        out[t.name][p.partition_index] = p.partition_size;
      }
    }
    return out;
  }

  // Sum of the .log segment files in the partition's directory.
  int64_t SegmentBytesOnDisk(const std::string& topic, int32_t partition) {
    int64_t total = 0;
    for (const auto& f :
         std::filesystem::directory_iterator(dir_.sub(topic + "-" + std::to_string(partition)))) {
      if (f.path().extension() == ".log") total += static_cast<int64_t>(f.file_size());
    }
    return total;
  }
};

TEST_F(DescribeLogDirsE2ETest, ApiVersionsAdvertisesV0ToV4) {
  auto resp = Call<ApiVersionsResponse>(ApiVersionsRequest{}, 3);
  bool found = false;
  for (const auto& k : resp.api_keys) {
    if (k.api_key != 35) continue;
    found = true;
    EXPECT_EQ(k.min_version, 0);
    EXPECT_EQ(k.max_version, 4);
  }
  EXPECT_TRUE(found);
}

TEST_F(DescribeLogDirsE2ETest, SizesAreTheProducedBytesAndTheFilesOnDisk) {
  MustCreate("sized", 3);
  MustCreate("empty", 1);
  const std::string a = testing::MakeBatch(10, 100, 1000);
  const std::string b = testing::MakeBatch(3, 1000, 2000);
  const std::string c = testing::MakeBatch(1, 7, 3000);
  ASSERT_EQ(ProduceTo("sized", 0, a), 0);
  ASSERT_EQ(ProduceTo("sized", 0, b), 0);
  ASSERT_EQ(ProduceTo("sized", 2, c), 0);

  auto resp = DescribeDirs(std::nullopt);
  EXPECT_EQ(resp.error_code, 0);
  ASSERT_EQ(resp.results.size(), 1u);
  EXPECT_EQ(resp.results[0].error_code, 0);
  EXPECT_EQ(resp.results[0].log_dir, std::filesystem::absolute(dir_.path()).string());
  auto sizes = Sizes(resp);
  const int64_t want0 = static_cast<int64_t>(a.size() + b.size());
  EXPECT_EQ(sizes["sized"], (std::map<int32_t, int64_t>{
                                {0, want0}, {1, 0}, {2, static_cast<int64_t>(c.size())}}));
  EXPECT_EQ(sizes["empty"], (std::map<int32_t, int64_t>{{0, 0}}));
  EXPECT_EQ(sizes.size(), 2u);
  for (int32_t p = 0; p < 3; ++p) EXPECT_EQ(sizes["sized"][p], SegmentBytesOnDisk("sized", p));

  // The sizes survive a restart (recovered from the segment files).
  RestartBroker();
  EXPECT_EQ(Sizes(DescribeDirs(std::nullopt))["sized"][0], want0);
}

TEST_F(DescribeLogDirsE2ETest, TopicFilterLeavesOutUnknownTopicsAndPartitions) {
  MustCreate("wanted", 2);
  MustCreate("other", 1);
  const std::string a = testing::MakeBatch(2, 50, 1000);
  ASSERT_EQ(ProduceTo("wanted", 1, a), 0);
  ASSERT_EQ(ProduceTo("other", 0, OneRecord("not asked for")), 0);
  auto resp = DescribeDirs(std::vector<DescribeLogDirsRequest::DescribableLogDirTopic>{
      {"wanted", {1, 7, 1, -1}}, {"no-such-topic", {0}}});
  EXPECT_EQ(resp.results.at(0).error_code, 0);
  auto sizes = Sizes(resp);
  EXPECT_EQ(sizes, (std::map<std::string, std::map<int32_t, int64_t>>{
                       {"wanted", {{1, static_cast<int64_t>(a.size())}}}}));

  // Only unknown names: the log dir is still reported, with no topics.
  auto none = DescribeDirs(std::vector<DescribeLogDirsRequest::DescribableLogDirTopic>{
      {"no-such-topic", {0, 1}}});
  ASSERT_EQ(none.results.size(), 1u);
  EXPECT_EQ(none.results[0].error_code, 0);
  EXPECT_TRUE(none.results[0].topics.empty());
  // An empty (non-null) list describes nothing.
  EXPECT_TRUE(DescribeDirs(std::vector<DescribeLogDirsRequest::DescribableLogDirTopic>{})
                  .results.at(0).topics.empty());
}

TEST_F(DescribeLogDirsE2ETest, VolumeBytesFromV4Only) {
  MustCreate("vol", 1);
  auto v4 = DescribeDirs(std::nullopt, 4);
  ASSERT_EQ(v4.results.size(), 1u);
  auto space = std::filesystem::space(dir_.path());
  EXPECT_EQ(v4.results[0].total_bytes, static_cast<int64_t>(space.capacity));
  EXPECT_GT(v4.results[0].usable_bytes, 0);
  EXPECT_LE(v4.results[0].usable_bytes, v4.results[0].total_bytes);
  for (int16_t v = 0; v <= 3; ++v) {
    auto old = DescribeDirs(std::nullopt, v);
    ASSERT_EQ(old.results.size(), 1u) << "v" << v;
    EXPECT_EQ(old.results[0].total_bytes, -1) << "v" << v;  // not on the wire before v4
    EXPECT_EQ(old.results[0].usable_bytes, -1) << "v" << v;
    EXPECT_EQ(old.results[0].log_dir, v4.results[0].log_dir) << "v" << v;
    EXPECT_EQ(Sizes(old), Sizes(v4)) << "v" << v;
  }
}

TEST_F(DescribeLogDirsE2ETest, MissingDataDirIsAStorageError) {
  MustCreate("gone", 1);
  const std::string aside = dir_.path() + ".aside";
  std::filesystem::rename(dir_.path(), aside);
  auto resp = DescribeDirs(std::nullopt);
  std::filesystem::rename(aside, dir_.path());  // back before the broker stops
  ASSERT_EQ(resp.results.size(), 1u);
  EXPECT_EQ(resp.results[0].error_code, Code(KafkaError::kKafkaStorageError));
  EXPECT_TRUE(resp.results[0].topics.empty());
  EXPECT_EQ(resp.results[0].total_bytes, -1);
  EXPECT_EQ(Sizes(DescribeDirs(std::nullopt))["gone"][0], 0);  // fine again
}

}  // namespace
}  // namespace headrace
