#include "broker/partition/producer_state.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <limits>
#include <string>
#include <unistd.h>

#include "broker/partition/partition.h"
#include "common/crc32c.h"

namespace headrace::broker {
namespace {

constexpr int32_t kMaxSeq = std::numeric_limits<int32_t>::max();

BatchHeader Header(int64_t pid, int16_t epoch, int32_t seq, int32_t records, int64_t base = 0) {
  BatchHeader h;
  h.base_offset = Offset(base);
  h.producer_id = pid;
  h.producer_epoch = epoch;
  h.base_sequence = seq;
  h.record_count = records;
  h.last_offset_delta = records - 1;
  return h;
}

KafkaError CheckError(const ProducerStateTable& t, const BatchHeader& h) {
  auto v = t.CheckAppend({&h, 1});
  return v.ok() ? KafkaError::kNone : ToKafkaError(v.status());
}

bool IsDuplicate(const ProducerStateTable& t, const BatchHeader& h) {
  auto v = t.CheckAppend({&h, 1});
  return v.ok() && v->duplicate;
}

TEST(ProducerStateTest, IncrementSequenceWrapsAfterInt32Max) {
  EXPECT_EQ(IncrementSequence(5, 3), 8);
  EXPECT_EQ(IncrementSequence(kMaxSeq, 1), 0);
  EXPECT_EQ(IncrementSequence(kMaxSeq - 1, 3), 1);
}

TEST(ProducerStateTest, UnknownProducerIsAcceptedWithAnySequence) {
  ProducerStateTable t;
  EXPECT_EQ(CheckError(t, Header(7, 0, 0, 1)), KafkaError::kNone);
  EXPECT_EQ(CheckError(t, Header(7, 0, 42, 1)), KafkaError::kNone);
}

TEST(ProducerStateTest, DuplicateOfAnyOfTheLastFiveReturnsItsOffsets) {
  ProducerStateTable t;
  for (int i = 0; i < 6; ++i) t.Update(Header(7, 0, i * 10, 10, 100 + i * 10));
  // Batches 1..5 are tracked; batch 0 (seq 0-9) fell out of the window.
  for (int i = 1; i < 6; ++i) {
    BatchHeader again = Header(7, 0, i * 10, 10);
    auto v = t.CheckAppend({&again, 1});
    ASSERT_TRUE(v.ok());
    EXPECT_TRUE(v->duplicate);
    EXPECT_EQ(v->original.first_offset, Offset(100 + i * 10));
    EXPECT_EQ(v->original.last_offset, Offset(109 + i * 10));
  }
  EXPECT_EQ(CheckError(t, Header(7, 0, 0, 10)), KafkaError::kOutOfOrderSequenceNumber);
  EXPECT_FALSE(IsDuplicate(t, Header(7, 0, 60, 10)));
  EXPECT_EQ(CheckError(t, Header(7, 0, 60, 10)), KafkaError::kNone);
}

TEST(ProducerStateTest, GapOrOverlapIsOutOfOrder) {
  ProducerStateTable t;
  t.Update(Header(7, 0, 0, 5));
  EXPECT_EQ(CheckError(t, Header(7, 0, 6, 1)), KafkaError::kOutOfOrderSequenceNumber);
  EXPECT_EQ(CheckError(t, Header(7, 0, 3, 2)), KafkaError::kOutOfOrderSequenceNumber);
  EXPECT_EQ(CheckError(t, Header(7, 0, 5, 1)), KafkaError::kNone);
}

TEST(ProducerStateTest, EpochsFenceOldAndNewEpochStartsAtZero) {
  ProducerStateTable t;
  t.Update(Header(7, 3, 0, 5));
  EXPECT_EQ(CheckError(t, Header(7, 2, 5, 1)), KafkaError::kInvalidProducerEpoch);
  EXPECT_EQ(CheckError(t, Header(7, 4, 5, 1)), KafkaError::kOutOfOrderSequenceNumber);
  EXPECT_EQ(CheckError(t, Header(7, 4, 0, 1)), KafkaError::kNone);
  t.Update(Header(7, 4, 0, 1, 50));
  EXPECT_EQ(t.Find(7)->epoch, 4);
  EXPECT_EQ(t.Find(7)->count, 1);
  // A batch of the older epoch arriving during a rebuild is ignored.
  t.Update(Header(7, 3, 5, 1));
  EXPECT_EQ(t.Find(7)->epoch, 4);
  EXPECT_EQ(t.Find(7)->last().last_seq, 0);
}

TEST(ProducerStateTest, SequenceWrapsAroundToZero) {
  ProducerStateTable t;
  t.Update(Header(7, 0, kMaxSeq - 4, 5));  // last seq INT32_MAX
  EXPECT_EQ(CheckError(t, Header(7, 0, 0, 3)), KafkaError::kNone);
  t.Update(Header(7, 0, kMaxSeq - 1, 3));  // seq MAX-1, MAX, 0 -> next is 1
  EXPECT_EQ(t.Find(7)->last().last_seq, 0);
  EXPECT_EQ(CheckError(t, Header(7, 0, 1, 1)), KafkaError::kNone);
}

TEST(ProducerStateTest, MultiBatchRequestIsCheckedBatchByBatch) {
  ProducerStateTable t;
  t.Update(Header(7, 0, 0, 5));
  BatchHeader ok[] = {Header(7, 0, 5, 2), Header(7, 0, 7, 3), Header(8, 0, 9, 1)};
  EXPECT_TRUE(t.CheckAppend(ok).ok());
  BatchHeader gap[] = {Header(7, 0, 5, 2), Header(7, 0, 8, 3)};
  EXPECT_EQ(ToKafkaError(t.CheckAppend(gap).status()), KafkaError::kOutOfOrderSequenceNumber);
  BatchHeader mixed[] = {Header(7, 0, 0, 5), Header(7, 0, 5, 1)};
  EXPECT_EQ(ToKafkaError(t.CheckAppend(mixed).status()), KafkaError::kOutOfOrderSequenceNumber);
  EXPECT_EQ(t.Find(8), nullptr);  // checking changes nothing
}

// --- Partition + real Log: dedupe on append and rebuild after reopen ---

std::string IdempotentBatch(int records, int64_t pid, int16_t epoch, int32_t seq) {
  std::vector<RecordInput> in(records);
  for (int i = 0; i < records; ++i) in[i].value = "v" + std::to_string(seq + i);
  std::string b = BuildBatch(in);
  auto put = [&](size_t pos, uint64_t v, int bytes) {
    for (int i = 0; i < bytes; ++i) b[pos + i] = static_cast<char>(v >> (8 * (bytes - 1 - i)));
  };
  put(43, static_cast<uint64_t>(pid), 8);
  put(51, static_cast<uint16_t>(epoch), 2);
  put(53, static_cast<uint32_t>(seq), 4);
  put(17, crc32c::Value(b.data() + 21, b.size() - 21), 4);
  return b;
}

class PartitionProducerStateTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("hr-pstate-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    Reopen();
  }
  void TearDown() override {
    if (p_) (void)p_->Close();
    std::filesystem::remove_all(dir_);
  }
  void Reopen() {
    if (p_) {
      ASSERT_TRUE(p_->Close().ok());
    }
    p_.reset();
    auto opened = Partition::Open(dir_.string(), TopicPartition{"t", 0}, Uuid::Random(),
                                  TopicSettings{}, PartitionServices{});
    ASSERT_TRUE(opened.ok()) << opened.status().ToString();
    p_ = *opened;
  }
  Result<AppendInfo> Append(std::string b) {
    return p_->AppendAsLeader({reinterpret_cast<uint8_t*>(b.data()), b.size()});
  }
  std::filesystem::path dir_;
  std::shared_ptr<Partition> p_;
};

TEST_F(PartitionProducerStateTest, DuplicateBatchIsNotAppendedAndGetsOriginalOffset) {
  ASSERT_TRUE(Append(BuildBatch({RecordInput{std::nullopt, "plain", {}, kNoTimestamp}})).ok());
  auto first = Append(IdempotentBatch(3, 11, 0, 0));
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first->base_offset, Offset(1));
  auto again = Append(IdempotentBatch(3, 11, 0, 0));
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->base_offset, Offset(1));
  EXPECT_EQ(again->last_offset, Offset(3));
  EXPECT_EQ(p_->log_end_offset(), Offset(4));
  auto gap = Append(IdempotentBatch(1, 11, 0, 7));
  EXPECT_EQ(ToKafkaError(gap.status()), KafkaError::kOutOfOrderSequenceNumber);
  auto next = Append(IdempotentBatch(2, 11, 0, 3));
  ASSERT_TRUE(next.ok());
  EXPECT_EQ(next->base_offset, Offset(4));
  EXPECT_EQ(p_->log_end_offset(), Offset(6));
}

TEST_F(PartitionProducerStateTest, StateIsRebuiltFromTheLogAfterReopen) {
  ASSERT_TRUE(Append(IdempotentBatch(2, 11, 1, 0)).ok());
  ASSERT_TRUE(Append(BuildBatch({RecordInput{std::nullopt, "plain", {}, kNoTimestamp}})).ok());
  ASSERT_TRUE(Append(IdempotentBatch(3, 11, 1, 2)).ok());  // offsets 3..5
  ASSERT_TRUE(Append(IdempotentBatch(1, 12, 0, 0)).ok());  // offset 6
  Reopen();
  auto dup = Append(IdempotentBatch(3, 11, 1, 2));
  ASSERT_TRUE(dup.ok()) << dup.status().ToString();
  EXPECT_EQ(dup->base_offset, Offset(3));
  EXPECT_EQ(p_->log_end_offset(), Offset(7));
  EXPECT_EQ(ToKafkaError(Append(IdempotentBatch(1, 11, 0, 5)).status()),
            KafkaError::kInvalidProducerEpoch);
  EXPECT_EQ(ToKafkaError(Append(IdempotentBatch(1, 12, 0, 2)).status()),
            KafkaError::kOutOfOrderSequenceNumber);
  auto next = Append(IdempotentBatch(1, 12, 0, 1));
  ASSERT_TRUE(next.ok());
  EXPECT_EQ(next->base_offset, Offset(7));
}

TEST_F(PartitionProducerStateTest, RebuildWindowLimitsTheScan) {
  ASSERT_TRUE(Append(IdempotentBatch(2, 11, 0, 0)).ok());  // 0..1
  ASSERT_TRUE(Append(IdempotentBatch(2, 12, 0, 0)).ok());  // 2..3
  ASSERT_TRUE(p_->Close().ok());
  p_.reset();
  auto log = Log::Open(PartitionDirPath(dir_.string(), TopicPartition{"t", 0}), LogConfig{});
  ASSERT_TRUE(log.ok());
  ProducerStateTable t;
  ASSERT_TRUE(RebuildProducerState(**log, &t, 2).ok());
  EXPECT_EQ(t.Find(11), nullptr);
  ASSERT_NE(t.Find(12), nullptr);
  EXPECT_EQ(t.Find(12)->last().first_offset, Offset(2));
}

BatchHeader TxnHeader(int64_t pid, int16_t epoch, int32_t seq, int32_t records, int64_t base) {
  BatchHeader h = Header(pid, epoch, seq, records, base);
  h.attributes = 0x10;
  h.max_timestamp = TimestampMs(5000);
  return h;
}

BatchHeader MarkerHeader(int64_t pid, int16_t epoch, int64_t offset) {
  BatchHeader h = Header(pid, epoch, -1, 1, offset);
  h.attributes = 0x30;
  h.max_timestamp = TimestampMs(6000);
  return h;
}

TEST(ProducerStateTxnTest, TransactionalBatchOpensAndMarkerClosesTheTransaction) {
  ProducerStateTable t;
  EXPECT_FALSE(t.first_unstable_offset().has_value());
  t.Update(TxnHeader(7, 0, 0, 3, 10));
  t.Update(TxnHeader(8, 0, 0, 1, 13));
  t.Update(TxnHeader(7, 0, 3, 2, 14));  // same transaction
  EXPECT_EQ(t.first_unstable_offset(), Offset(10));
  EXPECT_EQ(t.Find(7)->current_txn_first_offset, Offset(10));
  CompletedTxn done = t.UpdateMarker(MarkerHeader(7, 0, 16), {false, 3});
  EXPECT_EQ(done.producer_id, 7);
  EXPECT_EQ(done.first_offset, Offset(10));
  EXPECT_EQ(done.last_offset, Offset(16));
  EXPECT_FALSE(done.commit);
  EXPECT_EQ(t.Find(7)->coordinator_epoch, 3);
  EXPECT_EQ(t.Find(7)->current_txn_first_offset, Offset(-1));
  EXPECT_EQ(t.first_unstable_offset(), Offset(13));
  ASSERT_EQ(t.ongoing().size(), 1u);
  EXPECT_EQ(t.ongoing()[0].producer_id, 8);
  // A marker without an open transaction completes nothing.
  EXPECT_EQ(t.UpdateMarker(MarkerHeader(7, 0, 17), {true, 3}).first_offset, Offset(-1));
  // The sequence continues after the marker.
  EXPECT_EQ(CheckError(t, TxnHeader(7, 0, 5, 1, 0)), KafkaError::kNone);
  EXPECT_EQ(CheckError(t, TxnHeader(7, 0, 7, 1, 0)), KafkaError::kOutOfOrderSequenceNumber);
}

TEST(ProducerStateTxnTest, MarkersAreFencedByProducerAndCoordinatorEpochs) {
  ProducerStateTable t;
  EXPECT_TRUE(t.CheckMarker(7, 0, 0).ok());  // unknown producer: accepted
  t.Update(TxnHeader(7, 2, 0, 1, 0));
  EXPECT_EQ(ToKafkaError(t.CheckMarker(7, 1, 0)), KafkaError::kInvalidProducerEpoch);
  EXPECT_TRUE(t.CheckMarker(7, 2, 0).ok());
  EXPECT_TRUE(t.CheckMarker(7, 3, 0).ok());  // a bumped epoch's abort
  t.UpdateMarker(MarkerHeader(7, 3, 1), {false, 4});
  EXPECT_EQ(t.Find(7)->epoch, 3);
  EXPECT_EQ(ToKafkaError(t.CheckMarker(7, 3, 3)), KafkaError::kTransactionCoordinatorFenced);
  // Transactional data of the old epoch is fenced; the new epoch starts at 0.
  EXPECT_EQ(CheckError(t, TxnHeader(7, 2, 1, 1, 0)), KafkaError::kInvalidProducerEpoch);
  EXPECT_EQ(CheckError(t, TxnHeader(7, 3, 0, 1, 0)), KafkaError::kNone);
}

TEST(ProducerStateTxnTest, ExpiryRemovesIdleProducersWithoutOpenTransactions) {
  ProducerStateTable t;
  t.Update(TxnHeader(1, 0, 0, 1, 0));   // open, timestamp 5000
  BatchHeader idle = Header(2, 0, 0, 1, 1);
  idle.max_timestamp = TimestampMs(5000);
  t.Update(idle);
  BatchHeader fresh = Header(3, 0, 0, 1, 2);
  fresh.max_timestamp = TimestampMs(9000);
  t.Update(fresh);
  EXPECT_EQ(t.RemoveExpired(/*now=*/10000, /*expiration=*/2000), 1u);
  EXPECT_NE(t.Find(1), nullptr);  // open transaction: kept
  EXPECT_EQ(t.Find(2), nullptr);
  EXPECT_NE(t.Find(3), nullptr);
}

}  // namespace
}  // namespace headrace::broker
