// Several log directories (log_dirs.h, log_dir_mover.h): parsing, directory
// identity, placement, discovery at start, a failing directory (through the
// I/O seam), moves and their crash recovery.
#include "broker/storage/log_dirs.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <thread>

#include "broker/base/kafka_error.h"
#include "broker/partition/partition_dir.h"
#include "broker/topics/topic_registry.h"
#include "common/fault_injecting_env.h"
#include "headrace/record_batch.h"

namespace headrace::broker {
namespace {

namespace fs = std::filesystem;

// Every `op` call on a path containing `path` fails with EIO.
FaultRule Fail(FileOp op, std::string path) {
  FaultRule r;
  r.op = op;
  r.path_substr = std::move(path);
  return r;
}

TEST(DirIdentity, RoundTripsAndRefusesMissingKeys) {
  DirIdentity id{"clusterX", 7, Uuid::Random()};
  auto back = DecodeDirIdentity(EncodeDirIdentity(id));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back.value(), id);
  EXPECT_FALSE(DecodeDirIdentity("version=1\ncluster.id=x\nnode.id=1\n").ok());
  EXPECT_FALSE(DecodeDirIdentity("version=9\ncluster.id=x\nnode.id=1\ndirectory.id=AAAAAAAAAAAAAAAAAAAAAA\n").ok());
}

class LogDirsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() /
            ("hr_jbod_" + std::to_string(::getpid()) + "_" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    for (int i = 0; i < 3; ++i) paths_.push_back((root_ / ("d" + std::to_string(i))).string());
    config_.data_dir = paths_[0];
    config_.log_dirs = paths_;
    config_.log_defaults.segment_bytes = 64 * 1024;
    config_.log_defaults.max_index_bytes = 4096;
  }
  void TearDown() override {
    registry_.reset();
    dirs_.reset();
    store_.reset();
    fs::remove_all(root_);
  }
  Status Open(bool lock = false) {
    registry_.reset();
    dirs_.reset();
    store_.reset();
    HR_ASSIGN_OR_RETURN(store_, FileMetadataStore::Open(paths_[0]));
    LogDirs::Options d;
    d.paths = paths_;
    d.env = &env_;
    d.lock = lock;
    d.halt = [this](const std::string& why) { halted_ = why; };
    HR_ASSIGN_OR_RETURN(dirs_, LogDirs::Open(std::move(d)));
    TopicRegistry::Options o;
    o.config = config_;
    o.store = store_.get();
    o.dirs = dirs_.get();
    o.services.file_env = &env_;
    o.services.on_offline = dirs_->OnPartitionOffline();
    FileEnv* env = &env_;
    o.log_factory = [env](const std::string& dir, const LogConfig& c) {
      return Log::Open(dir, c, env);
    };
    HR_ASSIGN_OR_RETURN(registry_, TopicRegistry::Open(std::move(o)));
    return Status::OK();
  }
  void Create(const std::string& name, int32_t partitions) {
    CreateTopicRequest req;
    req.name = name;
    req.num_partitions = partitions;
    auto r = registry_->CreateTopic(req);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
  }
  int DirOf(const std::string& topic, int32_t p) {
    return dirs_->IndexOf(registry_->FindPartition(topic, p)->dir());
  }
  static Status Produce(Partition& p, int n) {
    for (int i = 0; i < n; ++i) {
      std::string b = BuildBatch(
          {RecordInput{std::nullopt, "v" + std::to_string(i), {}, TimestampMs(1000)}});
      HR_RETURN_IF_ERROR(p.AppendAsLeader({reinterpret_cast<uint8_t*>(b.data()), b.size()}).status());
    }
    return Status::OK();
  }

  fs::path root_;
  std::vector<std::string> paths_;
  BrokerConfig config_;
  FaultInjectingEnv env_{FileEnv::Default()};
  std::unique_ptr<FileMetadataStore> store_;
  std::unique_ptr<LogDirs> dirs_;
  std::unique_ptr<TopicRegistry> registry_;
  std::string halted_;
};

TEST_F(LogDirsTest, NewPartitionsGoToTheDirectoryWithFewest) {
  ASSERT_TRUE(Open().ok());
  Create("t", 6);
  EXPECT_EQ(registry_->PartitionCountsPerDir(), (std::vector<int64_t>{2, 2, 2}));
  for (int p = 0; p < 6; ++p) EXPECT_EQ(DirOf("t", p), p % 3);
  Create("u", 1);  // a tie: the first directory
  EXPECT_EQ(DirOf("u", 0), 0);
  Create("w", 2);  // the two with fewer
  EXPECT_EQ(DirOf("w", 0), 1);
  EXPECT_EQ(DirOf("w", 1), 2);
}

TEST_F(LogDirsTest, EachDirectoryGetsAnIdentityAndAMovedOneIsRefused) {
  ASSERT_TRUE(Open().ok());
  std::set<std::string> ids;
  for (int i = 0; i < 3; ++i) {
    auto text = ReadWholeFile(*FileEnv::Default(), paths_[i] + "/meta.properties");
    ASSERT_TRUE(text.ok());
    auto id = DecodeDirIdentity(text.value());
    ASSERT_TRUE(id.ok());
    EXPECT_EQ(id->cluster_id, registry_->identity().cluster_id);
    EXPECT_EQ(id->node_id, config_.node_id);
    ids.insert(id->directory_id.ToBase64());
    EXPECT_EQ(id->directory_id, dirs_->id(i));
  }
  EXPECT_EQ(ids.size(), 3u);
  ASSERT_TRUE(Open().ok());  // a restart keeps them
  // A directory of another broker (node 9) put in place of d2.
  auto other = DecodeDirIdentity(ReadWholeFile(*FileEnv::Default(), paths_[2] + "/meta.properties").value());
  other->node_id = 9;
  std::ofstream(paths_[2] + "/meta.properties") << EncodeDirIdentity(other.value());
  Status st = Open();
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(ToKafkaError(st), KafkaError::kInconsistentClusterId);
  EXPECT_NE(st.message().find(paths_[2]), std::string::npos) << st.message();
  // d1's identity copied onto d2: two directories with one id.
  fs::copy_file(paths_[1] + "/meta.properties", paths_[2] + "/meta.properties",
                fs::copy_options::overwrite_existing);
  st = Open();
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("same directory.id"), std::string::npos) << st.message();
}

TEST_F(LogDirsTest, ARestartFindsPartitionsWhereverTheyAreAndRefusesTwoCopies) {
  ASSERT_TRUE(Open().ok());
  Create("t", 3);
  ASSERT_TRUE(Produce(*registry_->FindPartition("t", 2), 5).ok());
  // The operator moved t-2 from d2 to d0 by hand while stopped.
  registry_.reset();
  fs::rename(paths_[2] + "/t-2", paths_[0] + "/t-2");
  ASSERT_TRUE(Open().ok());
  EXPECT_EQ(DirOf("t", 2), 0);
  EXPECT_EQ(registry_->FindPartition("t", 2)->log_end_offset(), Offset(5));
  registry_.reset();
  fs::copy(paths_[0] + "/t-2", paths_[1] + "/t-2");
  Status st = Open();
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("t-2 is in two log directories"), std::string::npos) << st.message();
}

TEST_F(LogDirsTest, AFailingDirectoryGoesOfflineAloneAndStaysOfflineAtRestart) {
  ASSERT_TRUE(Open().ok());
  Create("t", 6);
  env_.AddRule(Fail(FileOp::kWrite, "/d1/"));
  // t-1 lives on d1: its append fails, d1 goes offline, t-4 with it.
  Status st = Produce(*registry_->FindPartition("t", 1), 1);
  EXPECT_EQ(ToKafkaError(st), KafkaError::kKafkaStorageError);
  EXPECT_FALSE(dirs_->online(1));
  EXPECT_TRUE(registry_->FindPartition("t", 4)->offline());
  EXPECT_EQ(ToKafkaError(Produce(*registry_->FindPartition("t", 4), 1)),
            KafkaError::kKafkaStorageError);
  EXPECT_EQ(ToKafkaError(registry_->FindPartition("t", 4)
                             ->ListOffset(kListOffsetsLatest, IsolationLevel::kReadUncommitted)
                             .status()),
            KafkaError::kKafkaStorageError);
  for (int p : {0, 2, 3, 5}) EXPECT_TRUE(Produce(*registry_->FindPartition("t", p), 3).ok()) << p;
  EXPECT_TRUE(halted_.empty());
  // New partitions avoid it.
  Create("u", 2);
  EXPECT_NE(DirOf("u", 0), 1);
  EXPECT_NE(DirOf("u", 1), 1);
  // A restart with d1 still failing (its listing fails): its partitions are
  // offline, the others serve what they had.
  env_.AddRule(Fail(FileOp::kList, "/d1"));
  ASSERT_TRUE(Open().ok());
  EXPECT_FALSE(dirs_->online(1));
  EXPECT_TRUE(registry_->FindPartition("t", 1)->offline());
  EXPECT_TRUE(registry_->FindPartition("t", 4)->offline());
  EXPECT_EQ(registry_->startup_report().offline_partitions, 2);
  EXPECT_EQ(registry_->FindPartition("t", 0)->log_end_offset(), Offset(3));
  // The disk healed: everything is back.
  env_.ClearRules();
  ASSERT_TRUE(Open().ok());
  EXPECT_TRUE(dirs_->online(1));
  EXPECT_FALSE(registry_->FindPartition("t", 4)->offline());
  EXPECT_EQ(DirOf("t", 4), 1);
}

TEST_F(LogDirsTest, APartitionThatCannotBeOpenedAtStartTakesItsDirectoryOffline) {
  ASSERT_TRUE(Open().ok());
  Create("t", 6);
  ASSERT_TRUE(Produce(*registry_->FindPartition("t", 0), 4).ok());
  env_.AddRule(Fail(FileOp::kOpen, "/d2/t-2/"));
  ASSERT_TRUE(Open().ok());
  EXPECT_FALSE(dirs_->online(2));
  EXPECT_NE(dirs_->offline_reason(2).find("t-2"), std::string::npos) << dirs_->offline_reason(2);
  EXPECT_TRUE(registry_->FindPartition("t", 2)->offline());
  EXPECT_TRUE(registry_->FindPartition("t", 5)->offline());
  EXPECT_EQ(registry_->FindPartition("t", 0)->log_end_offset(), Offset(4));
  EXPECT_FALSE(registry_->FindPartition("t", 3)->offline());
  EXPECT_TRUE(halted_.empty());
}

TEST_F(LogDirsTest, EveryDirectoryOfflineHaltsTheBroker) {
  ASSERT_TRUE(Open().ok());
  Create("t", 3);
  env_.AddRule(Fail(FileOp::kWrite, "/d1/"));
  env_.AddRule(Fail(FileOp::kWrite, "/d2/"));
  (void)Produce(*registry_->FindPartition("t", 1), 1);
  (void)Produce(*registry_->FindPartition("t", 2), 1);
  EXPECT_TRUE(halted_.empty());
  env_.AddRule(Fail(FileOp::kWrite, "/d0/"));
  (void)Produce(*registry_->FindPartition("t", 0), 1);
  EXPECT_FALSE(halted_.empty());
}

TEST_F(LogDirsTest, AMoveKeepsEveryRecordAndLandsInTheTarget) {
  ASSERT_TRUE(Open().ok());
  Create("t", 1);
  ASSERT_EQ(DirOf("t", 0), 0);
  ASSERT_TRUE(Produce(*registry_->FindPartition("t", 0), 500).ok());
  // Hold the copy's writes to see the move in progress.
  const std::string hold = (root_ / "hold").string();
  std::ofstream(hold) << "x";
  FaultRule held = Fail(FileOp::kWrite, "-future/");
  held.hold_path = hold;
  env_.AddRule(held);
  ASSERT_TRUE(registry_->MoveReplica("t", 0, dirs_->path(2)).ok());
  std::vector<TopicRegistry::FutureReplica> futures;
  for (int i = 0; i < 500 && futures.empty(); ++i) {
    futures = registry_->FutureReplicas();
    if (futures.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  ASSERT_EQ(futures.size(), 1u);
  EXPECT_EQ(futures[0].tp, (TopicPartition{"t", 0}));
  EXPECT_EQ(futures[0].dir, 2);
  EXPECT_EQ(registry_->PartitionCountsPerDir(), (std::vector<int64_t>{1, 0, 1}));
  ASSERT_TRUE(Produce(*registry_->FindPartition("t", 0), 5).ok());  // still serving
  fs::remove(hold);
  registry_->DrainMoves();
  env_.ClearRules();
  EXPECT_TRUE(registry_->FutureReplicas().empty());
  EXPECT_EQ(DirOf("t", 0), 2);
  auto p = registry_->FindPartition("t", 0);
  EXPECT_EQ(p->log_end_offset(), Offset(505));
  EXPECT_EQ(p->high_watermark(), Offset(505));
  ASSERT_TRUE(Produce(*p, 10).ok());  // the new copy takes appends
  EXPECT_EQ(p->log_end_offset(), Offset(515));
  registry_->DrainDeletions();
  EXPECT_FALSE(fs::exists(paths_[0] + "/t-0"));
  EXPECT_EQ(ToKafkaError(registry_->MoveReplica("t", 0, "/nowhere")), KafkaError::kLogDirNotFound);
  EXPECT_EQ(ToKafkaError(registry_->MoveReplica("t", 9, dirs_->path(1))),
            KafkaError::kUnknownTopicOrPartition);
  ASSERT_TRUE(Open().ok());  // and a restart finds it there
  EXPECT_EQ(DirOf("t", 0), 2);
  EXPECT_EQ(registry_->FindPartition("t", 0)->log_end_offset(), Offset(515));
}

// DescribeLogDirs lists the published partitions, then FutureReplicas():
// once the copy is published it must no longer be listed as a future one
// too (it was, until the mover's job ended: the partition showed up twice
// in the target directory).
TEST_F(LogDirsTest, ThePublishedCopyIsNoLongerAFutureReplica) {
  ASSERT_TRUE(Open().ok());
  Create("t", 1);
  ASSERT_TRUE(Produce(*registry_->FindPartition("t", 0), 50).ok());
  std::vector<TopicRegistry::FutureReplica> at_publish;
  int dir_at_publish = -1;
  registry_->SetReplicaMovedHook([&](const TopicPartition&) {
    dir_at_publish = DirOf("t", 0);
    at_publish = registry_->FutureReplicas();
  });
  ASSERT_TRUE(registry_->MoveReplica("t", 0, dirs_->path(1)).ok());
  registry_->DrainMoves();
  EXPECT_EQ(dir_at_publish, 1);
  EXPECT_TRUE(at_publish.empty()) << at_publish.size() << " future replica(s) at publish";
}

TEST_F(LogDirsTest, AMoveCutShortBeforeItsCommitKeepsTheOriginal) {
  ASSERT_TRUE(Open().ok());
  Create("t", 1);
  ASSERT_TRUE(Produce(*registry_->FindPartition("t", 0), 20).ok());
  registry_.reset();
  // A crash during the copy: a partial future copy in d1.
  const std::string future = paths_[1] + "/" + FuturePartitionDirName({"t", 0}, "ab12");
  fs::create_directories(future);
  std::ofstream(future + "/00000000000000000000.log") << "partial";
  ASSERT_TRUE(Open().ok());
  EXPECT_EQ(registry_->startup_report().future_dirs_dropped, 1);
  EXPECT_EQ(DirOf("t", 0), 0);
  EXPECT_EQ(registry_->FindPartition("t", 0)->log_end_offset(), Offset(20));
  registry_->DrainDeletions();
  EXPECT_FALSE(fs::exists(future));
}

TEST_F(LogDirsTest, AMoveCutShortBetweenItsRenamesIsFinishedAtStart) {
  ASSERT_TRUE(Open().ok());
  Create("t", 1);
  ASSERT_TRUE(Produce(*registry_->FindPartition("t", 0), 20).ok());
  registry_.reset();
  // The complete copy is in d1 as "-future"; the original was renamed away.
  const std::string future = paths_[1] + "/" + FuturePartitionDirName({"t", 0}, "ab12");
  fs::copy(paths_[0] + "/t-0", future);
  fs::rename(paths_[0] + "/t-0", paths_[0] + "/" + DeletedPartitionDirName({"t", 0}, "cd34"));
  ASSERT_TRUE(Open().ok());
  EXPECT_EQ(registry_->startup_report().future_dirs_promoted, 1);
  EXPECT_EQ(DirOf("t", 0), 1);
  EXPECT_EQ(registry_->FindPartition("t", 0)->log_end_offset(), Offset(20));
}

}  // namespace
}  // namespace headrace::broker
