// The partition's transactional data plane over a real Log: ongoing
// transactions and the last stable offset, end-transaction markers, the
// aborted-transaction index (.txnindex) and read_committed reads, on
// leaders, followers, truncation and reopening.
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "broker/base/kafka_error.h"
#include "broker/partition/partition.h"
#include "broker/partition/producer_snapshot.h"
#include "common/file_env.h"
#include "headrace/record_batch.h"
#include "log/filename.h"
#include "log/testing.h"

namespace headrace::broker {
namespace {

namespace fs = std::filesystem;

std::span<uint8_t> Bytes(std::string& s) { return {reinterpret_cast<uint8_t*>(s.data()), s.size()}; }

// A producer's batch of `records` records (transactional or not).
std::string ProducerBatch(int64_t pid, int16_t epoch, int32_t seq, int records, bool txn,
                          const std::string& tag = "v") {
  std::vector<RecordInput> in;
  for (int i = 0; i < records; ++i) {
    in.push_back({std::nullopt, tag + std::to_string(i), {}, TimestampMs(1000 + i)});
  }
  BatchProducerFields f;
  f.producer_id = pid;
  f.producer_epoch = epoch;
  f.base_sequence = seq;
  f.transactional = txn;
  return BuildBatch(in, f);
}

std::vector<Offset> SnapshotOffsets(const std::string& dir) {
  auto all = ListProducerSnapshots(*FileEnv::Default(), dir);
  EXPECT_TRUE(all.ok());
  return all.ok() ? *all : std::vector<Offset>{};
}

std::string PlainBatch(int records) { return ProducerBatch(-1, -1, -1, records, false); }

class PartitionTxnTest : public ::testing::Test {
 protected:
  void TearDown() override {
    if (p_) (void)p_->Close();
    p_.reset();
  }
  std::shared_ptr<Partition> Open(int32_t broker = 0, TopicSettings settings = {}) {
    if (p_) {
      EXPECT_TRUE(p_->Close().ok());
    }
    PartitionServices services;
    services.local_broker_id = broker;
    auto opened = Partition::Open(dir_.path(), TopicPartition{"t", 0}, Uuid::Random(), settings,
                                  services);
    EXPECT_TRUE(opened.ok()) << opened.status().ToString();
    p_ = opened.ok() ? *opened : nullptr;
    return p_;
  }
  // Appends as leader; returns the base offset (-1 on error).
  Offset Lead(std::string batch) {
    auto r = p_->AppendAsLeader(Bytes(batch));
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? r->base_offset : Offset(-1);
  }
  KafkaError LeadError(std::string batch) {
    return ToKafkaError(p_->AppendAsLeader(Bytes(batch)).status());
  }
  Offset Marker(int64_t pid, int16_t epoch, bool commit, int32_t coordinator_epoch = 0) {
    auto r = p_->AppendTxnMarker(pid, epoch, coordinator_epoch, commit);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? r->base_offset : Offset(-1);
  }
  std::string PartitionDir() const { return dir_.path() + "/t-0"; }

  headrace::testing::TempDir dir_;
  std::shared_ptr<Partition> p_;
};

TEST_F(PartitionTxnTest, OpenTransactionHoldsTheLsoUntilItsCommitMarker) {
  Open();
  Lead(PlainBatch(2));                                          // 0-1
  EXPECT_EQ(Lead(ProducerBatch(7, 0, 0, 3, true)), Offset(2));  // 2-4, txn opens at 2
  Lead(PlainBatch(1));                                          // 5
  EXPECT_EQ(p_->high_watermark(), Offset(6));
  EXPECT_EQ(p_->last_stable_offset(), Offset(2));
  EXPECT_EQ(p_->LatestOffset(IsolationLevel::kReadCommitted).offset, Offset(2));
  EXPECT_EQ(p_->LatestOffset(IsolationLevel::kReadUncommitted).offset, Offset(6));
  ASSERT_EQ(p_->ongoing_transactions().size(), 1u);
  EXPECT_EQ(p_->ongoing_transactions()[0].first_offset, Offset(2));
  // read_committed stops at the LSO.
  auto before = p_->Read(Offset(2), 1 << 20, IsolationLevel::kReadCommitted);
  ASSERT_TRUE(before.ok());
  EXPECT_TRUE(before->data.slices.empty());
  // A second transactional batch of the same transaction keeps its start.
  Lead(ProducerBatch(7, 0, 3, 1, true));  // 6
  EXPECT_EQ(p_->last_stable_offset(), Offset(2));
  EXPECT_EQ(Marker(7, 0, /*commit=*/true), Offset(7));
  EXPECT_EQ(p_->high_watermark(), Offset(8));
  EXPECT_EQ(p_->last_stable_offset(), Offset(8));
  EXPECT_TRUE(p_->ongoing_transactions().empty());
  EXPECT_TRUE(p_->aborted_transactions().empty());  // a commit indexes nothing
  auto after = p_->Read(Offset(2), 1 << 20, IsolationLevel::kReadCommitted);
  ASSERT_TRUE(after.ok());
  EXPECT_FALSE(after->data.slices.empty());
  EXPECT_TRUE(after->aborted_transactions.empty());
}

TEST_F(PartitionTxnTest, EarliestOfTwoOpenTransactionsBoundsTheLso) {
  Open();
  Lead(ProducerBatch(1, 0, 0, 2, true));  // 0-1
  Lead(ProducerBatch(2, 0, 0, 2, true));  // 2-3
  EXPECT_EQ(p_->last_stable_offset(), Offset(0));
  Marker(1, 0, true);                     // 4
  EXPECT_EQ(p_->last_stable_offset(), Offset(2));
  Marker(2, 0, false);                    // 5
  EXPECT_EQ(p_->last_stable_offset(), Offset(6));
}

TEST_F(PartitionTxnTest, AbortIsIndexedReturnedToReadCommittedAndWrittenAsTxnIndex) {
  Open();
  Lead(PlainBatch(1));                                   // 0
  Lead(ProducerBatch(9, 2, 0, 2, true));                 // 1-2
  Lead(ProducerBatch(4, 0, 0, 1, true));                 // 3 (stays open)
  EXPECT_EQ(Marker(9, 2, /*commit=*/false, 5), Offset(4));
  const AbortedTxn expected{9, Offset(1), Offset(4), Offset(3)};  // LSO: producer 4's txn
  ASSERT_EQ(p_->aborted_transactions(), std::vector<AbortedTxn>{expected});
  Marker(4, 0, true);  // 5
  auto read = p_->Read(Offset(0), 1 << 20, IsolationLevel::kReadCommitted);
  ASSERT_TRUE(read.ok());
  EXPECT_EQ(read->aborted_transactions, std::vector<AbortedTxn>{expected});
  // A fetch from past the aborted transaction's marker does not get it;
  // read_uncommitted never does.
  auto later = p_->Read(Offset(5), 1 << 20, IsolationLevel::kReadCommitted);
  ASSERT_TRUE(later.ok());
  EXPECT_TRUE(later->aborted_transactions.empty());
  auto uncommitted = p_->Read(Offset(0), 1 << 20, IsolationLevel::kReadUncommitted);
  ASSERT_TRUE(uncommitted.ok());
  EXPECT_TRUE(uncommitted->aborted_transactions.empty());
  // FlushLog makes the index durable: 34 bytes in Kafka's layout.
  ASSERT_TRUE(p_->FlushLog().ok());
  const std::string path =
      PartitionDir() + "/" + filename::OffsetFileName(Offset(0), filename::kTxnIndexExtension);
  std::ifstream in(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_EQ(bytes.size(), 34u);
  auto decoded = DecodeAbortedTxns(bytes);
  ASSERT_TRUE(decoded.ok());
  EXPECT_EQ(*decoded, std::vector<AbortedTxn>{expected});
  EXPECT_EQ(bytes[0], 0);
  EXPECT_EQ(bytes[1], 0);   // version 0
  EXPECT_EQ(bytes[9], 9);   // producer id 9, big-endian
  EXPECT_EQ(bytes[25], 4);  // last offset 4
}

TEST_F(PartitionTxnTest, EpochRulesForMarkersAndTransactionalData) {
  Open();
  Lead(ProducerBatch(3, 5, 0, 1, true));
  // Older epochs are fenced, for markers and data alike.
  EXPECT_EQ(ToKafkaError(p_->AppendTxnMarker(3, 4, 0, true).status()),
            KafkaError::kInvalidProducerEpoch);
  EXPECT_EQ(LeadError(ProducerBatch(3, 4, 1, 1, true)), KafkaError::kInvalidProducerEpoch);
  Marker(3, 5, false, /*coordinator_epoch=*/2);
  // A marker from an older coordinator is fenced.
  EXPECT_EQ(ToKafkaError(p_->AppendTxnMarker(3, 5, 1, true).status()),
            KafkaError::kTransactionCoordinatorFenced);
  // A marker for a producer without an open transaction is appended.
  const Offset leo = p_->log_end_offset();
  EXPECT_EQ(Marker(77, 0, true), leo);
  EXPECT_EQ(p_->last_stable_offset(), p_->high_watermark());
  // Clients may not write control batches.
  EXPECT_EQ(LeadError(BuildEndTxnMarkerBatch(3, 5, {true, 2})), KafkaError::kInvalidRecord);
}

TEST_F(PartitionTxnTest, FollowerRefusesMarkersAndKeepsTheLeadersTransactions) {
  Open(/*broker=*/2);
  ASSERT_TRUE(p_->BecomeFollower(LeaderEpoch(1), /*leader=*/1, {1, 2}).ok());
  EXPECT_EQ(ToKafkaError(p_->AppendTxnMarker(1, 0, 0, true).status()),
            KafkaError::kNotLeaderOrFollower);
  // What the leader wrote: txn data of producer 8 at 0-1, plain at 2,
  // producer 8's ABORT at 3, producer 6's txn at 4.
  std::string data = ProducerBatch(8, 0, 0, 2, true);
  std::string plain = PlainBatch(1);
  std::string abort = BuildEndTxnMarkerBatch(8, 0, {false, 0});
  std::string open = ProducerBatch(6, 0, 0, 1, true);
  int64_t base = 0;
  for (std::string* b : {&data, &plain, &abort, &open}) {
    SetBaseOffset(Bytes(*b), Offset(base));
    SetPartitionLeaderEpoch(Bytes(*b), LeaderEpoch(1));
    base += ParseBatchHeader(Bytes(*b))->last_offset_delta + 1;
  }
  std::string all = data + plain + abort + open;
  ASSERT_TRUE(p_->AppendAsFollower(Bytes(all)).ok());
  p_->SetHighWatermarkFromLeader(Offset(5));
  EXPECT_EQ(p_->last_stable_offset(), Offset(4));
  ASSERT_EQ(p_->aborted_transactions(),
            (std::vector<AbortedTxn>{{8, Offset(0), Offset(3), Offset(4)}}));
  // Truncating below the marker forgets the abort and reopens producer 8's
  // transaction.
  ASSERT_TRUE(p_->TruncateTo(Offset(3)).ok());
  EXPECT_TRUE(p_->aborted_transactions().empty());
  ASSERT_EQ(p_->ongoing_transactions().size(), 1u);
  EXPECT_EQ(p_->ongoing_transactions()[0].producer_id, 8);
  EXPECT_EQ(p_->last_stable_offset(), Offset(0));
  // Made leader, it keeps them: the marker ends it there.
  ASSERT_TRUE(p_->BecomeLeader(LeaderEpoch(2), {1, 2}, {2}).ok());
  Marker(8, 0, true);
  EXPECT_TRUE(p_->ongoing_transactions().empty());
  EXPECT_EQ(p_->last_stable_offset(), p_->high_watermark());
}

TEST_F(PartitionTxnTest, ReopenKeepsOngoingTransactionsTheIndexAndTheLso) {
  Open();
  Lead(ProducerBatch(1, 0, 0, 2, true));  // 0-1
  Marker(1, 0, false);                    // 2
  Lead(ProducerBatch(2, 0, 0, 1, true));  // 3 (open)
  Lead(PlainBatch(2));                    // 4-5
  const auto aborted = p_->aborted_transactions();
  ASSERT_EQ(aborted.size(), 1u);
  EXPECT_EQ(p_->last_stable_offset(), Offset(3));
  Open();  // closes and reopens
  EXPECT_EQ(p_->aborted_transactions(), aborted);
  ASSERT_EQ(p_->ongoing_transactions().size(), 1u);
  EXPECT_EQ(p_->ongoing_transactions()[0].first_offset, Offset(3));
  EXPECT_EQ(p_->last_stable_offset(), Offset(3));
  Marker(2, 0, true);
  EXPECT_EQ(p_->last_stable_offset(), Offset(7));
}

TEST_F(PartitionTxnTest, LostTxnIndexIsRebuiltFromTheMarkersTheReplayCovers) {
  Open();
  Lead(ProducerBatch(1, 0, 0, 2, true));
  Marker(1, 0, false);
  const auto aborted = p_->aborted_transactions();
  ASSERT_TRUE(p_->Close().ok());
  p_.reset();
  // As after a crash before the index and any snapshot reached the disk:
  // the replay at open indexes the marker again.
  fs::remove(PartitionDir() + "/" + filename::OffsetFileName(Offset(0), filename::kTxnIndexExtension));
  for (Offset o : SnapshotOffsets(PartitionDir())) {
    fs::remove(PartitionDir() + "/" + filename::OffsetFileName(o, filename::kSnapshotExtension));
  }
  Open();
  EXPECT_EQ(p_->aborted_transactions(), aborted);
}


TEST_F(PartitionTxnTest, SnapshotRoundTripsEveryField) {
  ProducerStateTable t;
  BatchHeader h;
  h.base_offset = Offset(40);
  h.producer_id = 11;
  h.producer_epoch = 3;
  h.base_sequence = 7;
  h.last_offset_delta = 2;
  h.attributes = 0x10;
  h.max_timestamp = TimestampMs(123456);
  t.Update(h);
  t.UpdateMarker([] {
    BatchHeader m;
    m.base_offset = Offset(50);
    m.producer_id = 12;
    m.producer_epoch = 1;
    m.attributes = 0x30;
    m.max_timestamp = TimestampMs(999);
    return m;
  }(), {true, 6});
  std::string bytes = EncodeProducerSnapshot(t);
  EXPECT_EQ(bytes.size(), 10u + 2 * 46u);
  ProducerStateTable back;
  ASSERT_TRUE(DecodeProducerSnapshot(bytes, &back).ok());
  const ProducerEntry* e = back.Find(11);
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->epoch, 3);
  EXPECT_EQ(e->last().first_seq, 7);
  EXPECT_EQ(e->last().last_seq, 9);
  EXPECT_EQ(e->last().first_offset, Offset(40));
  EXPECT_EQ(e->last().last_offset, Offset(42));
  EXPECT_EQ(e->last_timestamp, TimestampMs(123456));
  EXPECT_EQ(e->current_txn_first_offset, Offset(40));
  EXPECT_EQ(back.first_unstable_offset(), Offset(40));
  ASSERT_NE(back.Find(12), nullptr);
  EXPECT_EQ(back.Find(12)->coordinator_epoch, 6);
  EXPECT_EQ(back.Find(12)->count, 0);
  // A flipped byte fails the CRC.
  bytes[20] ^= 1;
  ProducerStateTable bad;
  EXPECT_EQ(DecodeProducerSnapshot(bytes, &bad).code(), StatusCode::kCorruption);
}

TEST_F(PartitionTxnTest, SnapshotsAreWrittenAtRollAndCloseAndLoadedAtOpen) {
  TopicSettings settings;
  settings.log.segment_bytes = 300;  // a roll every few batches
  Open(0, settings);
  Lead(ProducerBatch(5, 0, 0, 1, true));  // 0: open transaction
  int32_t seq = 0;
  while (p_->DescribeProducers().size() < 2 || SnapshotOffsets(PartitionDir()).empty()) {
    Lead(ProducerBatch(6, 0, seq, 2, false));
    seq += 2;
    ASSERT_TRUE(p_->FlushLog().ok());
    ASSERT_LT(seq, 100) << "no snapshot after rolls";
  }
  const Offset rolled_at = SnapshotOffsets(PartitionDir()).back();
  EXPECT_GT(rolled_at, Offset(0));
  for (int i = 0; i < 6; ++i) {
    Lead(ProducerBatch(6, 0, seq, 2, false));
    seq += 2;
    ASSERT_TRUE(p_->FlushLog().ok());
  }
  EXPECT_LE(SnapshotOffsets(PartitionDir()).size(), static_cast<size_t>(kSnapshotsKept));
  const auto producers = p_->DescribeProducers();
  const Offset leo = p_->log_end_offset();
  Open(0, settings);  // clean close: a snapshot at the LEO
  EXPECT_EQ(SnapshotOffsets(PartitionDir()).back(), leo);
  EXPECT_EQ(SnapshotOffsets(PartitionDir()).size(), static_cast<size_t>(kSnapshotsKept));
  const auto loaded = p_->DescribeProducers();
  ASSERT_EQ(loaded.size(), producers.size());
  for (size_t i = 0; i < loaded.size(); ++i) {
    EXPECT_EQ(loaded[i].producer_id, producers[i].producer_id);
    EXPECT_EQ(loaded[i].last_sequence, producers[i].last_sequence);
    EXPECT_EQ(loaded[i].current_txn_start_offset, producers[i].current_txn_start_offset);
  }
  EXPECT_EQ(p_->last_stable_offset(), Offset(0));
  // The sequence continues from the snapshot: a gap is refused.
  EXPECT_EQ(LeadError(ProducerBatch(6, 0, seq + 1, 1, false)), KafkaError::kOutOfOrderSequenceNumber);
  EXPECT_EQ(LeadError(ProducerBatch(6, 0, seq, 1, false)), KafkaError::kNone);
}

TEST_F(PartitionTxnTest, CorruptNewestSnapshotIsIgnoredAndTruncationDeletesSnapshotsAbove) {
  Open();
  Lead(ProducerBatch(5, 0, 0, 2, true));   // 0-1
  Open();                                  // snapshot at 2
  Lead(ProducerBatch(5, 0, 2, 1, true));   // 2
  Lead(PlainBatch(2));                     // 3-4
  Open();                                  // snapshot at 5
  ASSERT_EQ(SnapshotOffsets(PartitionDir()), (std::vector<Offset>{Offset(2), Offset(5)}));
  ASSERT_TRUE(p_->Close().ok());
  p_.reset();
  const std::string newest =
      PartitionDir() + "/" + filename::OffsetFileName(Offset(5), filename::kSnapshotExtension);
  { std::ofstream(newest, std::ios::binary | std::ios::trunc) << "garbage!!!!!"; }
  Open();  // falls back to the snapshot at 2 and replays 2-4
  ASSERT_EQ(p_->ongoing_transactions().size(), 1u);
  EXPECT_EQ(p_->ongoing_transactions()[0].first_offset, Offset(0));
  EXPECT_EQ(p_->DescribeProducers()[0].last_sequence, 2);
  // A follower truncating to 2 deletes the snapshots above it.
  ASSERT_TRUE(p_->BecomeFollower(LeaderEpoch(1), 1, {0, 1}).ok());
  ASSERT_TRUE(p_->TruncateTo(Offset(2)).ok());
  EXPECT_EQ(SnapshotOffsets(PartitionDir()), std::vector<Offset>{Offset(2)});
  ASSERT_EQ(p_->ongoing_transactions().size(), 1u);
}

TEST_F(PartitionTxnTest, ExpiryForgetsIdleProducersButNotOpenTransactions) {
  Open();
  Lead(ProducerBatch(1, 0, 0, 1, true));   // timestamp 1000, open
  Lead(ProducerBatch(2, 0, 0, 1, false));  // timestamp 1000
  EXPECT_EQ(p_->RemoveExpiredProducers(/*now_ms=*/1500, /*expiration_ms=*/1000), 0u);
  EXPECT_EQ(p_->RemoveExpiredProducers(/*now_ms=*/5000, /*expiration_ms=*/1000), 1u);
  const auto left = p_->DescribeProducers();
  ASSERT_EQ(left.size(), 1u);
  EXPECT_EQ(left[0].producer_id, 1);
  EXPECT_EQ(left[0].current_txn_start_offset, 0);
  // Forgotten, producer 2 is unknown again: any sequence is accepted.
  EXPECT_EQ(LeadError(ProducerBatch(2, 0, 17, 1, false)), KafkaError::kNone);
}

// Counts the notifications that moved the LSO.
struct LsoListener : PartitionListener {
  std::atomic<int> lso_moves{0};
  void OnWatermarksAdvanced(Partition&, WatermarkSet changed) override {
    if (changed & WatermarkBit(Watermark::kLastStable)) ++lso_moves;
  }
  void OnStateChanged(Partition&) override {}
};

TEST_F(PartitionTxnTest, ListenerHearsTheLsoMoveOnlyWhenItMoves) {
  LsoListener listener;
  auto log = Log::Open(dir_.path() + "/wake", PartitionLogConfig(LogConfig{}));
  ASSERT_TRUE(log.ok());
  PartitionServices services;
  services.listener = &listener;
  auto p = std::make_shared<Partition>(TopicPartition{"wake", 0}, Uuid::Random(), std::move(*log),
                                       TopicSettings{}, services);
  std::string plain = PlainBatch(1);
  ASSERT_TRUE(p->AppendAsLeader(Bytes(plain)).ok());
  EXPECT_EQ(listener.lso_moves.load(), 1);  // with the HW
  std::string txn = ProducerBatch(3, 0, 0, 2, true);
  ASSERT_TRUE(p->AppendAsLeader(Bytes(txn)).ok());
  std::string more = PlainBatch(1);
  ASSERT_TRUE(p->AppendAsLeader(Bytes(more)).ok());
  EXPECT_EQ(p->high_watermark(), Offset(4));
  EXPECT_EQ(p->last_stable_offset(), Offset(1));
  EXPECT_EQ(listener.lso_moves.load(), 1);  // the HW moved, the LSO did not
  ASSERT_TRUE(p->AppendTxnMarker(3, 0, 0, true).ok());
  EXPECT_EQ(p->last_stable_offset(), Offset(5));
  EXPECT_EQ(listener.lso_moves.load(), 2);  // the marker moved it
  ASSERT_TRUE(p->Close().ok());
}

TEST_F(PartitionTxnTest, LsoWaitsForTheMarkerToBeCommitted) {
  Open();
  ASSERT_TRUE(p_->BecomeLeader(LeaderEpoch(1), {0, 1}, {0, 1}).ok());
  Lead(PlainBatch(1));                    // 0
  Lead(ProducerBatch(4, 0, 0, 2, true));  // 1-2
  p_->UpdateFollowerState(1, Offset(3), Offset(3));
  EXPECT_EQ(p_->high_watermark(), Offset(3));
  EXPECT_EQ(p_->last_stable_offset(), Offset(1));
  Marker(4, 0, true);                     // 3, not yet on the follower
  EXPECT_TRUE(p_->ongoing_transactions().empty());
  EXPECT_EQ(p_->last_stable_offset(), Offset(1));  // as Kafka: until the marker is committed
  p_->UpdateFollowerState(1, Offset(4), Offset(4));
  EXPECT_EQ(p_->high_watermark(), Offset(4));
  EXPECT_EQ(p_->last_stable_offset(), Offset(4));
}

}  // namespace
}  // namespace headrace::broker
