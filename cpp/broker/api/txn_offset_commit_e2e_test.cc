// End to end over a socket: TxnOffsetCommit (28) answers and the pending
// offsets' visibility through OffsetFetch (require_stable, KIP-447), also
// after a restart. Completing the transaction needs its marker (the
// transaction coordinator), covered in coordinator/group/group_txn_offsets_test.cc.
#include <gtest/gtest.h>

#include <string>

#include "broker/api/broker_test_fixture.h"
#include "broker/base/kafka_error.h"

namespace headrace {
namespace {

using broker::Code;
using broker::KafkaError;
using namespace protocol;  // message structs

class TxnOffsetCommitE2ETest : public testing::BrokerFixture {
 protected:
  void SetUp() override {
    BrokerFixture::SetUp();
    CreateTopicsRequest req;
    CreateTopicsRequest::CreatableTopic t;
    t.name = "t";
    t.num_partitions = 2;
    t.replication_factor = 1;
    req.topics.push_back(t);
    auto resp = Call<CreateTopicsResponse>(req, 7);
    ASSERT_EQ(resp.topics.size(), 1u);
    ASSERT_EQ(resp.topics[0].error_code, 0);
  }
  static TxnOffsetCommitRequest Commit(const std::string& group, int64_t offset,
                                       const std::string& topic = "t") {
    TxnOffsetCommitRequest req;
    req.transactional_id = "tx";
    req.group_id = group;
    req.producer_id = 1000;
    req.producer_epoch = 0;
    auto& rt = req.topics.emplace_back();
    rt.name = topic;
    auto& rp = rt.partitions.emplace_back();
    rp.partition_index = 0;
    rp.committed_offset = offset;
    rp.committed_metadata = "meta";
    return req;
  }
  int16_t CommitError(const TxnOffsetCommitRequest& req, int16_t version) {
    auto resp = Call<TxnOffsetCommitResponse>(req, version);
    if (resp.topics.size() != 1 || resp.topics[0].partitions.size() != 1) {
      ADD_FAILURE() << "unexpected TxnOffsetCommit answer shape";
      return -1;
    }
    return resp.topics[0].partitions[0].error_code;
  }
  // (error, offset) of t-0 for `group` through OffsetFetch v`version` (2-7).
  std::pair<int16_t, int64_t> Fetch(const std::string& group, bool require_stable,
                                    int16_t version = 7) {
    OffsetFetchRequest req;
    req.group_id = group;
    req.require_stable = require_stable;
    auto& t = req.topics.emplace();
    t.push_back({});
    t.back().name = "t";
    t.back().partition_indexes = {0};
    auto resp = Call<OffsetFetchResponse>(req, version);
    if (resp.topics.size() != 1 || resp.topics[0].partitions.size() != 1) {
      ADD_FAILURE() << "unexpected OffsetFetch answer shape";
      return {-1, -2};
    }
    const auto& p = resp.topics[0].partitions[0];
    return {p.error_code, p.committed_offset};
  }
  // The same through OffsetFetch v8 (batched groups): t-0 and t-1 of `group`.
  std::vector<std::pair<int16_t, int64_t>> FetchV8(const std::string& group) {
    OffsetFetchRequest req;
    req.require_stable = true;
    auto& g = req.groups.emplace_back();
    g.group_id = group;
    g.topics->push_back({});
    g.topics->back().name = "t";
    g.topics->back().partition_indexes = {0, 1};
    auto resp = Call<OffsetFetchResponse>(req, 8);
    std::vector<std::pair<int16_t, int64_t>> out;
    if (resp.groups.size() != 1 || resp.groups[0].topics.size() != 1) {
      ADD_FAILURE() << "unexpected OffsetFetch v8 answer shape";
      return out;
    }
    for (const auto& p : resp.groups[0].topics[0].partitions)
      out.emplace_back(p.error_code, p.committed_offset);
    return out;
  }
};

TEST_F(TxnOffsetCommitE2ETest, PendingOffsetIsUnstableUntilItsTransactionEnds) {
  for (int16_t v = 0; v <= 3; ++v)
    EXPECT_EQ(CommitError(Commit("g", 42), v), 0) << "version " << v;
  EXPECT_EQ(Fetch("g", true),
            std::make_pair(Code(KafkaError::kUnstableOffsetCommit), int64_t{-1}));
  EXPECT_EQ(Fetch("g", false), std::make_pair(int16_t{0}, int64_t{-1}));  // not committed yet
  EXPECT_EQ(Fetch("g", true, 6), std::make_pair(int16_t{0}, int64_t{-1}));  // no require_stable before v7
  // Per partition: t-1 has no pending offset and answers normally.
  EXPECT_EQ(FetchV8("g"), (std::vector<std::pair<int16_t, int64_t>>{
                              {Code(KafkaError::kUnstableOffsetCommit), -1}, {0, -1}}));
  RestartBroker();  // the pending offset is in the group log
  EXPECT_EQ(Fetch("g", true),
            std::make_pair(Code(KafkaError::kUnstableOffsetCommit), int64_t{-1}));
  EXPECT_EQ(Fetch("other", true), std::make_pair(int16_t{0}, int64_t{-1}));
}

TEST_F(TxnOffsetCommitE2ETest, AnswersKafkasErrors) {
  EXPECT_EQ(CommitError(Commit("g", 1, "nope"), 3), Code(KafkaError::kUnknownTopicOrPartition));
  EXPECT_EQ(CommitError(Commit("", 1), 3), Code(KafkaError::kInvalidGroupId));
  TxnOffsetCommitRequest v3 = Commit("g", 1);
  v3.generation_id = 4;
  v3.member_id = "m";
  EXPECT_EQ(CommitError(v3, 3), Code(KafkaError::kIllegalGeneration));  // no such group
  // v2 carries no member fields: the same request is a plain one there.
  EXPECT_EQ(CommitError(v3, 2), 0);
  v3.generation_id = -1;
  EXPECT_EQ(CommitError(v3, 3), 0);  // an Empty group accepts generation -1
  TxnOffsetCommitRequest old_epoch = Commit("g", 2);
  old_epoch.producer_epoch = 0;
  TxnOffsetCommitRequest new_epoch = Commit("g", 2);
  new_epoch.producer_epoch = 1;
  EXPECT_EQ(CommitError(new_epoch, 3), 0);
  EXPECT_EQ(CommitError(old_epoch, 3), Code(KafkaError::kInvalidProducerEpoch));
}

}  // namespace
}  // namespace headrace
