// Transactional offset commits in the group coordinator: pending offsets per
// producer, their commit/abort, replay and compaction, require_stable.
#include <gtest/gtest.h>

#include <thread>

#include "broker/coordinator/group/group_coordinator.h"
#include "broker/coordinator/group/group_log_entries.h"
#include "broker/coordinator/group/group_test_fixture.h"

namespace headrace::broker::group {
namespace {

class GroupTxnOffsetsTest : public GroupCoordinatorTest {
 protected:
  static TxnCommitRequest Txn(int64_t pid, std::vector<CommitPartition> parts,
                              std::string group = "g", int16_t epoch = 0) {
    TxnCommitRequest r;
    r.transactional_id = "tx-" + std::to_string(pid);
    r.group_id = std::move(group);
    r.producer_id = pid;
    r.producer_epoch = epoch;
    r.partitions = std::move(parts);
    return r;
  }
  // The committed offset of g/t-p as OffsetFetch sees it (-1 = none).
  int64_t Fetched(int32_t p, const std::string& group = "g", bool require_stable = false,
                  KafkaError* error = nullptr) {
    std::vector<FetchedOffset> got;
    EXPECT_EQ(c_->FetchOffsets(group, std::vector<TopicPartitionKey>{{"t", p}}, &got,
                               require_stable),
              KafkaError::kNone);
    if (error) *error = got.at(0).error;
    return got.at(0).committed.offset;
  }
};

TEST_F(GroupTxnOffsetsTest, PendingOffsetsAreInvisibleUntilCommitted) {
  EXPECT_EQ(c_->CommitTxnOffsets(Txn(7, {{"t", 0, 10, -1, "m"}, {"t", 1, 20, -1, ""}})),
            (std::vector<KafkaError>{KafkaError::kNone, KafkaError::kNone}));
  EXPECT_TRUE(c_->HasPendingTxnOffsets("g"));
  EXPECT_EQ(Fetched(0), -1);
  std::vector<FetchedOffset> all;
  c_->FetchOffsets("g", std::nullopt, &all);
  EXPECT_TRUE(all.empty());
  // The group exists (Empty), as Kafka creates it for a TxnOffsetCommit.
  EXPECT_EQ(c_->Describe("g").state, GroupState::kEmpty);

  ASSERT_TRUE(c_->CompleteTxn(7, 0, true).ok());
  EXPECT_FALSE(c_->HasPendingTxnOffsets("g"));
  EXPECT_EQ(Fetched(0), 10);
  EXPECT_EQ(Fetched(1), 20);
  all.clear();
  c_->FetchOffsets("g", std::nullopt, &all);
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].committed.metadata, "m");
}

TEST_F(GroupTxnOffsetsTest, AbortDropsPendingOffsetsAndKeepsCommittedOnes) {
  c_->Commit(CommitRequest{"g", "", std::nullopt, -1, {{"t", 0, 5, -1, ""}}});
  c_->CommitTxnOffsets(Txn(7, {{"t", 0, 10, -1, ""}}));
  EXPECT_EQ(Fetched(0), 5);
  ASSERT_TRUE(c_->CompleteTxn(7, 0, false).ok());
  EXPECT_FALSE(c_->HasPendingTxnOffsets("g"));
  EXPECT_EQ(Fetched(0), 5);
}

TEST_F(GroupTxnOffsetsTest, CompleteTxnOnlyTouchesItsProducerAndIsIdempotent) {
  c_->CommitTxnOffsets(Txn(7, {{"t", 0, 10, -1, ""}}));
  c_->CommitTxnOffsets(Txn(8, {{"t", 1, 30, -1, ""}}));
  c_->CommitTxnOffsets(Txn(7, {{"t", 2, 40, -1, ""}}, "other"));
  ASSERT_TRUE(c_->CompleteTxn(7, 0, true).ok());
  EXPECT_EQ(Fetched(0), 10);
  EXPECT_EQ(Fetched(2, "other"), 40);  // every group of the producer
  EXPECT_EQ(Fetched(1), -1);          // producer 8 still open
  EXPECT_TRUE(c_->HasPendingTxnOffsets("g"));
  // A producer with nothing pending: its first marker records the epoch.
  ASSERT_TRUE(c_->CompleteTxn(99, 0, true).ok());
  // A retried marker (commit or abort) finds nothing and appends nothing.
  const Offset end = c_->log_partition()->log_end_offset();
  ASSERT_TRUE(c_->CompleteTxn(7, 0, true).ok());
  ASSERT_TRUE(c_->CompleteTxn(7, 0, false).ok());
  ASSERT_TRUE(c_->CompleteTxn(99, 0, true).ok());
  EXPECT_EQ(c_->log_partition()->log_end_offset(), end);
  EXPECT_EQ(Fetched(0), 10);
}

TEST_F(GroupTxnOffsetsTest, LaterPlainCommitWinsOverAnEarlierTransactionalOne) {
  c_->CommitTxnOffsets(Txn(7, {{"t", 0, 10, -1, ""}, {"t", 1, 11, -1, ""}}));
  c_->Commit(CommitRequest{"g", "", std::nullopt, -1, {{"t", 0, 3, -1, ""}}});
  ASSERT_TRUE(c_->CompleteTxn(7, 0, true).ok());
  EXPECT_EQ(Fetched(0), 3);   // recorded after the transaction's offset
  EXPECT_EQ(Fetched(1), 11);
}

TEST_F(GroupTxnOffsetsTest, ReplayKeepsPendingAndCompletedState) {
  c_->Commit(CommitRequest{"g", "", std::nullopt, -1, {{"t", 0, 1, -1, ""}}});
  c_->CommitTxnOffsets(Txn(7, {{"t", 0, 10, -1, ""}}));
  c_->CommitTxnOffsets(Txn(8, {{"t", 1, 20, -1, ""}}));
  c_->CommitTxnOffsets(Txn(9, {{"t", 2, 30, -1, ""}, {"t", 3, 33, -1, ""}}));
  c_->Commit(CommitRequest{"g", "", std::nullopt, -1, {{"t", 2, 2, -1, ""}}});
  ASSERT_TRUE(c_->CompleteTxn(7, 0, true).ok());
  ASSERT_TRUE(c_->CompleteTxn(8, 0, false).ok());
  Reopen();
  EXPECT_EQ(Fetched(0), 10);
  EXPECT_EQ(Fetched(1), -1);
  EXPECT_EQ(Fetched(2), 2);
  EXPECT_EQ(Fetched(3), -1);
  EXPECT_TRUE(c_->HasPendingTxnOffsets("g"));  // producer 9 is still open
  ASSERT_TRUE(c_->CompleteTxn(9, 0, true).ok());
  EXPECT_EQ(Fetched(2), 2);  // the plain commit was recorded later, also after a replay
  EXPECT_EQ(Fetched(3), 33);
  Reopen();
  EXPECT_EQ(Fetched(2), 2);
  EXPECT_EQ(Fetched(3), 33);
  EXPECT_FALSE(c_->HasPendingTxnOffsets("g"));
}

TEST_F(GroupTxnOffsetsTest, PendingOnlyGroupSurvivesReopenAndRetention) {
  Reopen([](GroupConfig& c) {
    c.offsets_retention_ms = 1000;
    c.offsets_retention_check_interval_ms = 100;
  });
  c_->CommitTxnOffsets(Txn(7, {{"t", 0, 10, -1, ""}}));
  now_ += 5000;
  c_->Tick();
  ASSERT_EQ(c_->ListGroups({}).size(), 1u);
  Reopen([](GroupConfig& c) { c.offsets_retention_ms = 1000; });
  EXPECT_TRUE(c_->HasPendingTxnOffsets("g"));
  ASSERT_TRUE(c_->CompleteTxn(7, 0, true).ok());
  EXPECT_EQ(Fetched(0), 10);
}

TEST_F(GroupTxnOffsetsTest, RequireStableAnswersUnstablePerPartition) {
  c_->Commit(CommitRequest{"g", "", std::nullopt, -1, {{"t", 0, 5, -1, ""}, {"t", 1, 6, -1, ""}}});
  c_->CommitTxnOffsets(Txn(7, {{"t", 0, 10, -1, ""}}));
  KafkaError e = KafkaError::kNone;
  EXPECT_EQ(Fetched(0, "g", true, &e), -1);
  EXPECT_EQ(e, KafkaError::kUnstableOffsetCommit);
  EXPECT_EQ(Fetched(1, "g", true, &e), 6);  // no transaction holds t-1
  EXPECT_EQ(e, KafkaError::kNone);
  EXPECT_EQ(Fetched(0, "g", false, &e), 5);  // without require_stable: the committed one
  EXPECT_EQ(e, KafkaError::kNone);
  std::vector<FetchedOffset> all;
  c_->FetchOffsets("g", std::nullopt, &all, true);
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].error, KafkaError::kUnstableOffsetCommit);
  EXPECT_EQ(all[1].error, KafkaError::kNone);
  ASSERT_TRUE(c_->CompleteTxn(7, 0, true).ok());
  EXPECT_EQ(Fetched(0, "g", true, &e), 10);
  EXPECT_EQ(e, KafkaError::kNone);
}

TEST_F(GroupTxnOffsetsTest, ValidatesLikeCommitWithKip447MemberFields) {
  EXPECT_EQ(c_->CommitTxnOffsets(Txn(7, {{"t", 0, 1, -1, ""}}, ""))[0],
            KafkaError::kInvalidGroupId);
  TxnCommitRequest unknown_gen = Txn(7, {{"t", 0, 1, -1, ""}}, "nogroup");
  unknown_gen.generation = 3;
  EXPECT_EQ(c_->CommitTxnOffsets(unknown_gen)[0], KafkaError::kIllegalGeneration);

  std::optional<JoinResult> r;
  std::string a = JoinNewMember(&r);
  Sync(a, 1, {{a, "x"}});
  // v0-2: no member fields; a group with members accepts it.
  EXPECT_EQ(c_->CommitTxnOffsets(Txn(7, {{"t", 0, 1, -1, ""}}))[0], KafkaError::kNone);
  TxnCommitRequest v3 = Txn(7, {{"t", 0, 2, -1, ""}});
  v3.member_id = a;
  v3.generation = 1;
  EXPECT_EQ(c_->CommitTxnOffsets(v3)[0], KafkaError::kNone);
  v3.generation = 2;
  EXPECT_EQ(c_->CommitTxnOffsets(v3)[0], KafkaError::kIllegalGeneration);
  v3.generation = 1;
  v3.member_id = "ghost";
  EXPECT_EQ(c_->CommitTxnOffsets(v3)[0], KafkaError::kUnknownMemberId);

  // Static member: another incarnation's member id is fenced.
  Join(Req("", std::string("inst")));  // parks: a rebalance starts
  TxnCommitRequest fenced = Txn(7, {{"t", 0, 3, -1, ""}});
  fenced.member_id = a;
  fenced.instance_id = "inst";
  fenced.generation = 1;
  EXPECT_EQ(c_->CommitTxnOffsets(fenced)[0], KafkaError::kFencedInstanceId);

  TxnCommitRequest big = Txn(7, {{"t", 0, 3, -1, std::string(5000, 'x')}, {"t", 1, 4, -1, ""}});
  EXPECT_EQ(c_->CommitTxnOffsets(big),
            (std::vector<KafkaError>{KafkaError::kOffsetMetadataTooLarge, KafkaError::kNone}));
}

TEST_F(GroupTxnOffsetsTest, OlderProducerEpochIsFencedWhileOffsetsArePending) {
  c_->CommitTxnOffsets(Txn(7, {{"t", 0, 10, -1, ""}}, "g", 3));
  EXPECT_EQ(c_->CommitTxnOffsets(Txn(7, {{"t", 0, 11, -1, ""}}, "g", 2))[0],
            KafkaError::kInvalidProducerEpoch);
  EXPECT_EQ(c_->CommitTxnOffsets(Txn(7, {{"t", 0, 12, -1, ""}}, "g", 3))[0], KafkaError::kNone);
  Reopen();  // the epoch is in the records
  EXPECT_EQ(c_->CommitTxnOffsets(Txn(7, {{"t", 0, 11, -1, ""}}, "g", 2))[0],
            KafkaError::kInvalidProducerEpoch);
  ASSERT_TRUE(c_->CompleteTxn(7, 3, true).ok());
  EXPECT_EQ(Fetched(0), 12);
}

// A fencing abort (InitProducerId of a new incarnation) writes its marker
// with the bumped epoch. The fenced producer's TxnOffsetCommit, sent after
// its AddOffsetsToTxn but arriving after that marker, is refused: accepted,
// it would stay pending with no marker to end it, and every require_stable
// OffsetFetch of the group would answer UNSTABLE_OFFSET_COMMIT for good.
TEST_F(GroupTxnOffsetsTest, OffsetsOfAnEpochFencedByAnEarlierMarkerAreRefused) {
  ASSERT_TRUE(c_->CompleteTxn(7, 1, false).ok());  // nothing pending yet
  EXPECT_EQ(c_->CommitTxnOffsets(Txn(7, {{"t", 0, 10, -1, ""}}, "g", 0))[0],
            KafkaError::kInvalidProducerEpoch);
  KafkaError e = KafkaError::kNone;
  EXPECT_EQ(Fetched(0, "g", true, &e), -1);
  EXPECT_EQ(e, KafkaError::kNone);  // stable: nothing pending
  Reopen();  // the fence is in the records
  EXPECT_EQ(c_->CommitTxnOffsets(Txn(7, {{"t", 0, 10, -1, ""}}, "other", 0))[0],
            KafkaError::kInvalidProducerEpoch);
  // The new incarnation's epoch is not fenced, nor is another producer.
  EXPECT_EQ(c_->CommitTxnOffsets(Txn(7, {{"t", 0, 11, -1, ""}}, "g", 1))[0], KafkaError::kNone);
  EXPECT_EQ(c_->CommitTxnOffsets(Txn(9, {{"t", 1, 5, -1, ""}}, "g", 0))[0], KafkaError::kNone);
  // Retried (older or equal) markers append nothing and end nothing early.
  ASSERT_TRUE(c_->CompleteTxn(9, 0, true).ok());
  ASSERT_TRUE(c_->CompleteTxn(7, 1, true).ok());
  EXPECT_EQ(Fetched(0), 11);
  EXPECT_EQ(Fetched(1), 5);
}

TEST_F(GroupTxnOffsetsTest, TransactionEndsAreForgottenAfterTheOffsetsRetention) {
  Reopen([](GroupConfig& c) {
    c.offsets_retention_ms = 1000;
    c.offsets_retention_check_interval_ms = 100;
  });
  ASSERT_TRUE(c_->CompleteTxn(7, 1, false).ok());
  EXPECT_EQ(c_->CommitTxnOffsets(Txn(7, {{"t", 0, 10, -1, ""}}, "g", 0))[0],
            KafkaError::kInvalidProducerEpoch);
  now_ += 2000;
  c_->Tick();
  EXPECT_EQ(c_->CommitTxnOffsets(Txn(7, {{"t", 0, 10, -1, ""}}, "g", 0))[0], KafkaError::kNone);
}

TEST_F(GroupTxnOffsetsTest, DeletingGroupOrOffsetDropsPendingOffsets) {
  c_->CommitTxnOffsets(Txn(7, {{"t", 0, 10, -1, ""}, {"t", 1, 11, -1, ""}}));
  std::vector<KafkaError> per;
  ASSERT_EQ(c_->DeleteOffsets("g", {{"t", 0}}, &per), KafkaError::kNone);
  c_->CommitTxnOffsets(Txn(8, {{"t", 0, 20, -1, ""}}, "doomed"));
  ASSERT_EQ(c_->DeleteGroup("doomed"), KafkaError::kNone);
  Reopen();
  EXPECT_EQ(c_->ListGroups({}).size(), 1u);  // "doomed" stays deleted
  ASSERT_TRUE(c_->CompleteTxn(7, 0, true).ok());
  ASSERT_TRUE(c_->CompleteTxn(8, 0, true).ok());
  EXPECT_EQ(Fetched(0), -1);  // deleted before the commit
  EXPECT_EQ(Fetched(1), 11);
  EXPECT_EQ(Fetched(0, "doomed"), -1);
  EXPECT_EQ(c_->ListGroups({}).size(), 1u);
}

TEST_F(GroupTxnOffsetsTest, ReplayOfACompactionCopyCutShortKeepsWhichCommitIsNewer) {
  c_.reset();
  {
    auto log = GroupLog::Open(dir_.string(), PartitionServices{}, 1 << 20);
    ASSERT_TRUE(log.ok()) << log.status().ToString();
    const CommittedOffset pending0{10, -1, "", 100}, plain0{5, -1, "", 200};
    const CommittedOffset plain1{5, -1, "", 200}, pending1{12, -1, "", 300};
    auto append = [&](GroupLog::Entry e) { ASSERT_TRUE((*log)->Append({std::move(e)}).ok()); };
    // The records compaction copies: t-0's transactional offset and then a
    // plain commit; t-1 the other way round.
    append(PendingTxnOffsetEntry("g", 7, 0, {"t", 0}, pending0));
    append(OffsetEntry("g", {"t", 0}, plain0));
    append(OffsetEntry("g", {"t", 1}, plain1));
    append(PendingTxnOffsetEntry("g", 7, 0, {"t", 1}, pending1));
    // The copy, cut short by a crash after its first records: each restates
    // the current value, and must not make it newer than what followed it.
    append(PendingTxnOffsetEntry("g", 7, 0, {"t", 0}, pending0));
    append(OffsetEntry("g", {"t", 1}, plain1));
    ASSERT_TRUE((*log)->Close().ok());
  }
  Reopen();
  ASSERT_TRUE(c_->CompleteTxn(7, 0, true).ok());
  EXPECT_EQ(Fetched(0), 5);   // the plain commit was recorded after the transaction's
  EXPECT_EQ(Fetched(1), 12);  // the transaction's was recorded after the plain commit
}

// A compaction copy restates each producer's last end as fence_only. Replayed
// after the records it copies (a crash before the log start moved, or a
// coordinator loading a replicated log), it must not end the transaction
// whose offsets are pending at that point, only keep the fence.
TEST_F(GroupTxnOffsetsTest, ReplayedFenceOnlyEndsNothing) {
  c_.reset();
  {
    auto log = GroupLog::Open(dir_.string(), PartitionServices{}, 1 << 20);
    ASSERT_TRUE(log.ok()) << log.status().ToString();
    auto append = [&](GroupLog::Entry e) { ASSERT_TRUE((*log)->Append({std::move(e)}).ok()); };
    append(PendingTxnOffsetEntry("g", 7, 1, {"t", 0}, CommittedOffset{10, -1, "", 100}));
    append(TxnEndEntry(7, TxnEndValue{true, 1, 100}));  // the first transaction commits
    append(PendingTxnOffsetEntry("g", 7, 1, {"t", 0}, CommittedOffset{20, -1, "", 200}));
    // The copy, cut short by a crash: the producer's end restated, and not
    // yet the pending offset that follows it in the copy.
    append(TxnEndEntry(7, TxnEndValue{true, 1, 100, /*fence_only=*/true}));
    ASSERT_TRUE((*log)->Close().ok());
  }
  Reopen();
  EXPECT_TRUE(c_->HasPendingTxnOffsets("g"));  // neither committed nor dropped
  EXPECT_EQ(Fetched(0), 10);
  EXPECT_EQ(c_->CommitTxnOffsets(Txn(7, {{"t", 1, 1, -1, ""}}, "g", 0))[0],
            KafkaError::kInvalidProducerEpoch);  // the fence holds
  ASSERT_TRUE(c_->CompleteTxn(7, 1, true).ok());  // the second one commits
  EXPECT_EQ(Fetched(0), 20);
  EXPECT_FALSE(c_->HasPendingTxnOffsets("g"));
}

TEST_F(GroupTxnOffsetsTest, CompactionKeepsPendingOffsetsAndTheirOrder) {
  Reopen([](GroupConfig& c) {
    c.log_segment_bytes = 16384;
    c.commit_fsync = false;
  });
  c_->CommitTxnOffsets(Txn(7, {{"t", 0, 10, -1, ""}, {"t", 1, 11, -1, ""}}, "g", 2));
  c_->CommitTxnOffsets(Txn(8, {{"t", 0, 99, -1, ""}}, "h"));
  ASSERT_TRUE(c_->CompleteTxn(8, 1, false).ok());  // a fencing abort
  for (int i = 1; i <= 2000; ++i) {
    // t-0 committed after the transaction's offset (it wins at commit);
    // t-2 only by plain commits.
    CommitRequest req{"g", "", std::nullopt, -1, {{"t", 0, i, -1, ""}, {"t", 2, i, -1, ""}}};
    ASSERT_EQ(c_->Commit(req)[0], KafkaError::kNone);
    if (i % 100 == 0) c_->Tick();
  }
  int64_t compacted = GroupLogBytes(dir_);
  for (int i = 0; i < 500 && compacted >= 3 * 16384; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    c_->Tick();
    compacted = GroupLogBytes(dir_);
  }
  EXPECT_LT(compacted, 3 * 16384) << "log not compacted";
  Reopen();
  EXPECT_TRUE(c_->HasPendingTxnOffsets("g"));
  EXPECT_EQ(c_->CommitTxnOffsets(Txn(7, {{"t", 1, 1, -1, ""}}, "g", 1))[0],
            KafkaError::kInvalidProducerEpoch);  // the epoch survived too
  EXPECT_EQ(c_->CommitTxnOffsets(Txn(8, {{"t", 1, 1, -1, ""}}, "h", 0))[0],
            KafkaError::kInvalidProducerEpoch);  // and the fence, replayed before "g"
  ASSERT_TRUE(c_->CompleteTxn(7, 2, true).ok());
  EXPECT_EQ(Fetched(0), 2000);
  EXPECT_EQ(Fetched(1), 11);
  EXPECT_EQ(Fetched(0, "h"), -1);
}

}  // namespace
}  // namespace headrace::broker::group
