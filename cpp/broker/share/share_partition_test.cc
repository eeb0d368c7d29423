#include "broker/share/share_partition.h"

#include <gtest/gtest.h>

#include <vector>

namespace headrace::broker::share {
namespace {

constexpr int8_t kGap = 0, kAccept = 1, kRelease = 2, kReject = 3, kRenew = 4;

std::vector<int8_t> One(int8_t t) { return {t}; }

SharePartitionConfig Config(int32_t limit = 5, int64_t lock_ms = 1000, int32_t window = 2000) {
  SharePartitionConfig c;
  c.delivery_count_limit = limit;
  c.record_lock_duration_ms = lock_ms;
  c.max_in_flight_records = window;
  return c;
}

TEST(SharePartitionTest, AcquiresNewRecordsOnceUpToTheFetchableEnd) {
  SharePartition sp(Config(), 0);
  EXPECT_EQ(sp.Acquire("a", 10, 500, 0), (std::vector<AcquiredRange>{{0, 9, 1}}));
  EXPECT_EQ(sp.next_offset(), 10);
  EXPECT_TRUE(sp.Acquire("b", 10, 500, 0).empty());  // all held by a
  EXPECT_EQ(sp.Acquire("b", 14, 3, 0), (std::vector<AcquiredRange>{{10, 12, 1}}));
  EXPECT_EQ(sp.acquired_now(), 13);
  EXPECT_EQ(sp.start_offset(), 0);
}

TEST(SharePartitionTest, AcceptedRecordsMoveTheStartAndAreNeverDeliveredAgain) {
  SharePartition sp(Config(), 100);
  sp.Acquire("a", 110, 500, 0);
  auto accept = One(kAccept);
  EXPECT_EQ(sp.Acknowledge("a", 100, 104, accept, 1), AckOutcome::kOk);
  EXPECT_EQ(sp.start_offset(), 105);
  EXPECT_EQ(sp.Acknowledge("a", 105, 109, accept, 1), AckOutcome::kOk);
  EXPECT_EQ(sp.start_offset(), 110);
  EXPECT_TRUE(sp.Snapshot().empty());
  EXPECT_EQ(sp.counters().acknowledged, 10);
  sp.ExpireLocks(1'000'000);
  EXPECT_EQ(sp.Acquire("a", 112, 500, 2), (std::vector<AcquiredRange>{{110, 111, 1}}));
}

TEST(SharePartitionTest, ReleasedRecordsAreRedeliveredFirstWithTheirCount) {
  SharePartition sp(Config(), 0);
  sp.Acquire("a", 10, 500, 0);
  std::vector<int8_t> types = {kAccept, kAccept, kRelease, kRelease, kAccept,
                               kAccept, kAccept, kAccept, kRelease, kAccept};
  EXPECT_EQ(sp.Acknowledge("a", 0, 9, types, 1), AckOutcome::kOk);
  EXPECT_EQ(sp.start_offset(), 2);
  EXPECT_EQ(sp.counters().released, 3);
  // The released ones first (count 2), then new ones (count 1), max 4 records.
  EXPECT_EQ(sp.Acquire("b", 20, 4, 2),
            (std::vector<AcquiredRange>{{2, 3, 2}, {8, 8, 2}, {10, 10, 1}}));
  EXPECT_EQ(sp.counters().redelivered, 3);
}

TEST(SharePartitionTest, ARecordIsArchivedAtTheDeliveryLimit) {
  SharePartition sp(Config(/*limit=*/2), 0);
  auto release = One(kRelease);
  EXPECT_EQ(sp.Acquire("a", 1, 10, 0), (std::vector<AcquiredRange>{{0, 0, 1}}));
  EXPECT_EQ(sp.Acknowledge("a", 0, 0, release, 1), AckOutcome::kOk);
  EXPECT_EQ(sp.Acquire("a", 1, 10, 2), (std::vector<AcquiredRange>{{0, 0, 2}}));
  EXPECT_EQ(sp.Acknowledge("a", 0, 0, release, 3), AckOutcome::kOk);
  EXPECT_EQ(sp.start_offset(), 1);  // archived: delivered twice, the limit
  EXPECT_EQ(sp.counters().archived, 1);
  EXPECT_TRUE(sp.Acquire("a", 1, 10, 4).empty());
}

TEST(SharePartitionTest, RejectedAndGapOffsetsAreArchived) {
  SharePartition sp(Config(), 0);
  sp.Acquire("a", 4, 10, 0);
  std::vector<int8_t> types = {kReject, kGap, kReject, kRelease};
  EXPECT_EQ(sp.Acknowledge("a", 0, 3, types, 1), AckOutcome::kOk);
  EXPECT_EQ(sp.start_offset(), 3);
  EXPECT_EQ(sp.counters().archived, 3);
  EXPECT_EQ(sp.Acquire("a", 4, 10, 2), (std::vector<AcquiredRange>{{3, 3, 2}}));
}

TEST(SharePartitionTest, AnAcknowledgementOfRecordsNotHeldChangesNothing) {
  SharePartition sp(Config(5, /*lock_ms=*/100), 0);
  sp.Acquire("a", 5, 10, 0);
  sp.Acquire("b", 10, 10, 0);
  auto accept = One(kAccept);
  // 3..6 spans a's and b's records: refused whole.
  EXPECT_EQ(sp.Acknowledge("a", 3, 6, accept, 1), AckOutcome::kInvalidRecordState);
  EXPECT_EQ(sp.Acknowledge("a", 0, 10, accept, 1), AckOutcome::kInvalidRecordState);  // 10 never acquired
  EXPECT_EQ(sp.counters().acknowledged, 0);
  // After the lock's deadline, not even the holder may acknowledge.
  EXPECT_EQ(sp.Acknowledge("a", 0, 4, accept, 100), AckOutcome::kInvalidRecordState);
  EXPECT_EQ(sp.Acknowledge("a", 0, 4, accept, 99), AckOutcome::kOk);
  EXPECT_EQ(sp.Acknowledge("a", 0, 4, accept, 99), AckOutcome::kInvalidRecordState);  // not twice
}

TEST(SharePartitionTest, MalformedAcknowledgementsAreInvalidRequests) {
  SharePartition sp(Config(), 0);
  sp.Acquire("a", 5, 10, 0);
  std::vector<int8_t> two = {kAccept, kAccept};
  std::vector<int8_t> bad = {9};
  EXPECT_EQ(sp.Acknowledge("a", 3, 2, One(kAccept), 1), AckOutcome::kInvalidRequest);
  EXPECT_EQ(sp.Acknowledge("a", 0, 4, two, 1), AckOutcome::kInvalidRequest);
  EXPECT_EQ(sp.Acknowledge("a", 0, 0, bad, 1), AckOutcome::kInvalidRequest);
  EXPECT_EQ(sp.acquired_now(), 5);
}

TEST(SharePartitionTest, ExpiredLocksMakeRecordsAvailableToAnyMember) {
  SharePartition sp(Config(5, /*lock_ms=*/100), 0);
  sp.Acquire("a", 3, 10, 0);
  EXPECT_EQ(sp.next_lock_deadline_ms(), 100);
  EXPECT_EQ(sp.ExpireLocks(99), 0);
  EXPECT_EQ(sp.ExpireLocks(100), 3);
  EXPECT_EQ(sp.next_lock_deadline_ms(), -1);
  EXPECT_EQ(sp.Acquire("b", 3, 10, 101), (std::vector<AcquiredRange>{{0, 2, 2}}));
}

TEST(SharePartitionTest, RenewExtendsTheLock) {
  SharePartition sp(Config(5, /*lock_ms=*/100), 0);
  sp.Acquire("a", 2, 10, 0);
  EXPECT_EQ(sp.Acknowledge("a", 0, 1, One(kRenew), 90), AckOutcome::kOk);
  EXPECT_EQ(sp.ExpireLocks(150), 0);
  EXPECT_EQ(sp.Acknowledge("a", 0, 1, One(kAccept), 150), AckOutcome::kOk);
  EXPECT_EQ(sp.start_offset(), 2);
}

TEST(SharePartitionTest, TheInFlightWindowBoundsNewAcquisitions) {
  SharePartition sp(Config(5, 1000, /*window=*/5), 0);
  EXPECT_EQ(sp.Acquire("a", 100, 3, 0), (std::vector<AcquiredRange>{{0, 2, 1}}));
  EXPECT_EQ(sp.Acquire("b", 100, 10, 0), (std::vector<AcquiredRange>{{3, 4, 1}}));
  EXPECT_TRUE(sp.Acquire("c", 100, 10, 0).empty());
  // Acknowledging 1..4 frees nothing: 0 still holds the window's start.
  EXPECT_EQ(sp.Acknowledge("a", 1, 2, One(kAccept), 1), AckOutcome::kOk);
  EXPECT_EQ(sp.Acknowledge("b", 3, 4, One(kAccept), 1), AckOutcome::kOk);
  EXPECT_TRUE(sp.Acquire("c", 100, 10, 1).empty());
  EXPECT_EQ(sp.Acknowledge("a", 0, 0, One(kAccept), 1), AckOutcome::kOk);
  EXPECT_EQ(sp.Acquire("c", 100, 10, 1), (std::vector<AcquiredRange>{{5, 9, 1}}));
}

TEST(SharePartitionTest, ALeavingMemberReleasesWhatItHolds) {
  SharePartition sp(Config(), 0);
  sp.Acquire("a", 3, 10, 0);
  sp.Acquire("b", 6, 10, 0);
  EXPECT_EQ(sp.ReleaseMember("a"), 3);
  EXPECT_EQ(sp.Acquire("c", 6, 10, 1), (std::vector<AcquiredRange>{{0, 2, 2}}));
  EXPECT_EQ(sp.acquired_now(), 6);
}

TEST(SharePartitionTest, ArchiveGapsSkipsWhatTheLogDoesNotHold) {
  SharePartition sp(Config(), 0);
  sp.Acquire("a", 10, 10, 0);
  EXPECT_EQ(sp.Acknowledge("a", 4, 4, One(kAccept), 1), AckOutcome::kOk);
  sp.ArchiveGaps(0, 5);  // e.g. aborted-transaction records
  EXPECT_EQ(sp.start_offset(), 6);
  EXPECT_EQ(sp.counters().archived, 5);
  EXPECT_EQ(sp.counters().acknowledged, 1);
}

TEST(SharePartitionTest, ASnapshotGivesBackTheSameDeliveries) {
  SharePartition sp(Config(/*limit=*/3), 0);
  sp.Acquire("a", 10, 10, 0);
  std::vector<int8_t> types = {kAccept, kRelease, kAccept, kReject, kRelease,
                               kAccept, kAccept, kAccept, kAccept, kAccept};
  ASSERT_EQ(sp.Acknowledge("a", 0, 9, types, 1), AckOutcome::kOk);
  sp.Acquire("b", 12, 3, 2);  // 1 and 4 again (count 2), and 10 (count 1); 11 untouched
  std::vector<StateBatch> snap = sp.Snapshot();
  // Acquired records are written as available; every range keeps the count
  // of its last delivery.
  EXPECT_EQ(snap, (std::vector<StateBatch>{{1, 1, RecordState::kAvailable, 2},
                                           {2, 2, RecordState::kAcknowledged, 1},
                                           {3, 3, RecordState::kArchived, 1},
                                           {4, 4, RecordState::kAvailable, 2},
                                           {5, 9, RecordState::kAcknowledged, 1},
                                           {10, 10, RecordState::kAvailable, 1}}));
  SharePartition restored(Config(3), sp.start_offset(), snap);
  EXPECT_EQ(restored.start_offset(), 1);
  EXPECT_EQ(restored.next_offset(), 11);
  EXPECT_EQ(restored.Acquire("c", 12, 10, 0),
            (std::vector<AcquiredRange>{{1, 1, 3}, {4, 4, 3}, {10, 10, 2}, {11, 11, 1}}));
  EXPECT_EQ(restored.Snapshot(), (std::vector<StateBatch>{{1, 1, RecordState::kAvailable, 3},
                                                          {2, 2, RecordState::kAcknowledged, 1},
                                                          {3, 3, RecordState::kArchived, 1},
                                                          {4, 4, RecordState::kAvailable, 3},
                                                          {5, 9, RecordState::kAcknowledged, 1},
                                                          {10, 10, RecordState::kAvailable, 2},
                                                          {11, 11, RecordState::kAvailable, 1}}));
}

TEST(SharePartitionTest, ARestoredSnapshotStartsPastItsTerminalPrefix) {
  std::vector<StateBatch> snap = {{5, 7, RecordState::kAcknowledged, 1},
                                  {9, 9, RecordState::kAvailable, 1}};
  SharePartition sp(Config(), 5, snap);
  EXPECT_EQ(sp.start_offset(), 8);  // 8 is a gap in the snapshot: available, never delivered
  EXPECT_EQ(sp.next_offset(), 10);
  EXPECT_EQ(sp.Acquire("a", 20, 10, 0),
            (std::vector<AcquiredRange>{{8, 8, 1}, {9, 9, 2}, {10, 17, 1}}));
}

}  // namespace
}  // namespace headrace::broker::share
