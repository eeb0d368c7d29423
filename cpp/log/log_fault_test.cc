// The storage fault matrix: every fault kind at every step of the log's
// write path, injected with FaultInjectingEnv. For each row:
//   - the failing call returns an IOError carrying the injected errno;
//   - the flushed offset never moves after the fault, even once the disk is
//     healthy again (a later fsync must not vouch for dropped pages);
//   - every later Append, Flush, MaybeRoll, Truncate fails with the error;
//   - reopened with a healthy env, every record reported flushed is there
//     with its bytes, and nothing past the last valid batch is served.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <map>

#include "common/fault_injecting_env.h"
#include "log/testing.h"

namespace headrace {
namespace {

using testing::TempDir;

// A fault kind: the errno returned and whether part of the bytes is written.
struct Kind {
  const char* name;
  int err;
  bool short_write;
};

const Kind kKinds[] = {
    {"EIO", EIO, false},
    {"ENOSPC", ENOSPC, false},
    {"EDQUOT", EDQUOT, false},
    {"ShortWrite", ENOSPC, true},  // a disk filling up mid-write
};

struct Step {
  const char* name;
  FileOp op;
  const char* path;         // substring selecting the file
  bool torn_tail = false;   // also fail the cut-back, leaving a torn batch
};

struct Row {
  Step step;
  Kind kind;
};

void PrintTo(const Row& r, std::ostream* os) { *os << r.step.name << "/" << r.kind.name; }

// The steps of the write path; write steps also get a short-write row.
const Step kWriteSteps[] = {
    {"AppendWrite", FileOp::kWrite, ".log"},
    {"AppendWriteTornTail", FileOp::kWrite, ".log", /*torn_tail=*/true},
    {"IndexGrow", FileOp::kTruncate, ".index"},
    {"IndexAllocate", FileOp::kAllocate, ".index"},  // blocks reserved before the mapped store
    {"RollSegmentCreate", FileOp::kOpen, ".log"},
    {"RollIndexCreate", FileOp::kOpen, ".timeindex"},  // after the new .log exists
    {"FlushFsync", FileOp::kSync, ".log"},
    {"FlushIndexMsync", FileOp::kMsync, ".timeindex"},
    {"CheckpointWrite", FileOp::kWrite, "log.checkpoint"},
    {"CheckpointRename", FileOp::kRename, "log.checkpoint"},
};

std::vector<Row> AllRows() {
  std::vector<Row> rows;
  for (const Step& s : kWriteSteps) {
    for (const Kind& k : kKinds) {
      if (k.short_write && s.op != FileOp::kWrite) continue;
      if (s.torn_tail && !k.short_write) continue;
      rows.push_back({s, k});
    }
  }
  return rows;
}

LogConfig FaultConfig() {
  LogConfig c = testing::SmallConfig();  // 16 KiB segments: a roll every ~15 appends
  c.preallocate_indexes = false;         // index growth is a truncate(2) per segment
  return c;
}

// Appends one batch of 4 records whose values name their offsets ("v<offset>-<pad>")
// and remembers them in `expected`.
Result<AppendInfo> AppendNumbered(Log& log, std::map<int64_t, std::string>* expected) {
  const int64_t base = log.end_offset().value();
  std::vector<RecordInput> in(4);
  for (int i = 0; i < 4; ++i) {
    in[i].key = "k";
    in[i].value = "v" + std::to_string(base + i) + "-" + std::string(250, 'x');
    in[i].timestamp = TimestampMs(1700000000000 + base + i);
  }
  std::string batch = BuildBatch(in);
  Result<AppendInfo> info = log.Append(testing::Bytes(batch));
  if (info.ok()) {
    for (int i = 0; i < 4; ++i) (*expected)[base + i] = *in[i].value;
  }
  return info;
}

// Reopens `dir` on the OS and checks what it serves: offsets contiguous
// from 0, every record below `flushed` present, every record's bytes the
// ones appended at its offset, the end right after the last record.
void ExpectRecovered(const std::string& dir, Offset flushed,
                     const std::map<int64_t, std::string>& expected, RecoveryReport* report) {
  auto log = Log::Open(dir, FaultConfig());
  ASSERT_TRUE(log.ok()) << log.status().ToString();
  std::vector<Record> recs = testing::ReadAll(**log);
  ASSERT_GE(static_cast<int64_t>(recs.size()), flushed.value()) << "a flushed record was lost";
  for (size_t i = 0; i < recs.size(); ++i) {
    ASSERT_EQ(recs[i].offset, Offset(static_cast<int64_t>(i)));
    auto it = expected.find(static_cast<int64_t>(i));
    ASSERT_NE(it, expected.end()) << "offset " << i << " was never appended";
    ASSERT_EQ(recs[i].value, it->second) << "offset " << i;
  }
  EXPECT_EQ((*log)->end_offset(), Offset(static_cast<int64_t>(recs.size())));
  *report = (*log)->recovery_report();
  std::map<int64_t, std::string> more = expected;
  ASSERT_TRUE(AppendNumbered(**log, &more).ok()) << "the reopened log takes appends";
  EXPECT_TRUE((*log)->Flush().ok());
  EXPECT_TRUE((*log)->Close().ok());
}

class LogFaultMatrix : public ::testing::TestWithParam<Row> {};

TEST_P(LogFaultMatrix, FailsClosedAndRecoversEveryFlushedRecord) {
  const Row row = GetParam();
  const int err = row.kind.err;
  TempDir dir;
  FaultInjectingEnv env(FileEnv::Default());
  std::map<int64_t, std::string> expected;
  auto opened = Log::Open(dir.path(), FaultConfig(), &env);
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  Log& log = **opened;
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(AppendNumbered(log, &expected).ok());
  ASSERT_TRUE(log.Flush().ok());

  env.AddRule({row.step.op, row.step.path, 0, false, err, row.kind.short_write, ""});
  if (row.step.torn_tail) env.AddRule({FileOp::kTruncate, ".log", 0, false, err, false, ""});
  Status fault;
  Offset acked = log.flushed_offset();  // the last flushed offset a caller saw succeed
  for (int i = 0; i < 100 && fault.ok(); ++i) {
    fault = AppendNumbered(log, &expected).status();
    if (fault.ok()) fault = log.Flush();
    if (fault.ok()) acked = log.flushed_offset();
  }
  ASSERT_EQ(fault.code(), StatusCode::kIOError) << "the fault never hit: " << fault.ToString();
  EXPECT_EQ(fault.sys_errno(), err) << fault.ToString();
  EXPECT_NE(fault.message().find(row.step.path), std::string::npos) << fault.ToString();
  EXPECT_TRUE(log.failed());
  EXPECT_EQ(log.failure().sys_errno(), err);
  const Offset flushed = log.flushed_offset();
  EXPECT_GE(flushed, acked);
  EXPECT_LE(flushed, log.end_offset());

  env.ClearRules();  // the disk is healthy again; the log must stay offline
  std::map<int64_t, std::string> unused = expected;
  EXPECT_EQ(AppendNumbered(log, &unused).status().code(), StatusCode::kIOError);
  EXPECT_EQ(log.Flush().code(), StatusCode::kIOError);
  EXPECT_EQ(log.MaybeFlush().code(), StatusCode::kIOError);
  EXPECT_EQ(log.MaybeRoll(TimestampMs(INT64_MAX / 2)).code(), StatusCode::kIOError);
  EXPECT_EQ(log.Truncate(log.start_offset()).code(), StatusCode::kIOError);
  EXPECT_EQ(log.Flush().sys_errno(), err) << "later calls report the first error";
  EXPECT_EQ(log.flushed_offset(), flushed) << "the flushed offset moved after the fault";
  std::vector<Record> served = testing::ReadAll(log);  // reads go on up to the end offset
  ASSERT_EQ(static_cast<int64_t>(served.size()), log.end_offset().value());
  for (const Record& r : served) EXPECT_EQ(r.value, expected[r.offset.value()]);
  EXPECT_EQ(log.Close().code(), StatusCode::kIOError);

  RecoveryReport report;
  ExpectRecovered(dir.path(), flushed, expected, &report);
  if (row.step.torn_tail) {
    EXPECT_GT(report.truncated_bytes, 0) << "the torn batch was not cut";
  }
}

std::string RowName(const ::testing::TestParamInfo<Row>& info) {
  return std::string(info.param.step.name) + "_" + info.param.kind.name;
}

INSTANTIATE_TEST_SUITE_P(Faults, LogFaultMatrix, ::testing::ValuesIn(AllRows()), RowName);

// Recovery at reopen: a crash image with unflushed batches and a torn tail,
// opened once with a failing env (the cut, the fsync of what was recovered,
// or the new checkpoint fails: Open fails, nothing is served), then on a
// healthy disk (every flushed record is back, the torn tail is gone).
struct RecoveryRow {
  const char* name;
  FileOp op;
  const char* path;
  int err;
  bool short_write = false;
};

constexpr const char* kCp = "log.checkpoint";

class LogRecoveryFault : public ::testing::TestWithParam<RecoveryRow> {};

TEST_P(LogRecoveryFault, OpenFailsThenHealthyReopenRecovers) {
  const RecoveryRow row = GetParam();
  TempDir dir;
  std::map<int64_t, std::string> expected;
  Offset flushed;
  {
    auto live = Log::Open(dir.sub("live"), FaultConfig());
    ASSERT_TRUE(live.ok());
    for (int i = 0; i < 20; ++i) ASSERT_TRUE(AppendNumbered(**live, &expected).ok());
    ASSERT_TRUE((*live)->Flush().ok());
    flushed = (*live)->flushed_offset();
    for (int i = 0; i < 3; ++i) ASSERT_TRUE(AppendNumbered(**live, &expected).ok());
    testing::CopyDir(dir.sub("live"), dir.sub("image"));  // the crash image
    ASSERT_TRUE((*live)->Close().ok());
  }
  std::string active;
  for (const auto& [name, size] : testing::DirSizes(dir.sub("image")))
    if (name.ends_with(".log")) active = dir.sub("image") + "/" + name;
  int fd = ::open(active.c_str(), O_WRONLY | O_APPEND);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::write(fd, "\0\0\0\0\0\0\0\x63\0\0\0", 11), 11);  // a torn batch header
  ::close(fd);

  FaultInjectingEnv env(FileEnv::Default());
  env.AddRule({row.op, row.path, 0, false, row.err, row.short_write, ""});
  auto failed = Log::Open(dir.sub("image"), FaultConfig(), &env);
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.status().code(), StatusCode::kIOError);
  EXPECT_EQ(failed.status().sys_errno(), row.err) << failed.status().ToString();

  RecoveryReport report;
  ExpectRecovered(dir.sub("image"), flushed, expected, &report);
  // The failed open stopped before the cut (CutTail) or after it (the rest).
  if (row.op == FileOp::kTruncate) {
    EXPECT_EQ(report.truncated_bytes, 11);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Faults, LogRecoveryFault,
    ::testing::Values(RecoveryRow{"CutTail_EIO", FileOp::kTruncate, ".log", EIO},
                      RecoveryRow{"CutTail_ENOSPC", FileOp::kTruncate, ".log", ENOSPC},
                      RecoveryRow{"CutTail_EDQUOT", FileOp::kTruncate, ".log", EDQUOT},
                      RecoveryRow{"Fsync_EIO", FileOp::kSync, ".log", EIO},
                      RecoveryRow{"Fsync_ENOSPC", FileOp::kSync, ".log", ENOSPC},
                      RecoveryRow{"Fsync_EDQUOT", FileOp::kSync, ".log", EDQUOT},
                      RecoveryRow{"CheckpointFsync_EIO", FileOp::kSync, kCp, EIO},
                      RecoveryRow{"CheckpointFsync_EDQUOT", FileOp::kSync, kCp, EDQUOT},
                      RecoveryRow{"CheckpointWrite_ShortWrite", FileOp::kWrite, kCp, ENOSPC,
                                  /*short_write=*/true}),
    [](const ::testing::TestParamInfo<RecoveryRow>& info) { return std::string(info.param.name); });

// A flush makes the records durable (fdatasync of the .log); the indexes are
// msynced only when the recovery checkpoint is written (once a second, or
// when the flush point enters another segment), since recovery rebuilds the
// indexes of every segment from the checkpoint's on. With every msync
// failing: flushes within one segment and one second still succeed; the
// first flush after a roll syncs the indexes before writing the checkpoint
// and fails; the records flushed before it are all there after a reopen.
TEST(LogFlushIndexes, IndexesAreSyncedOnlyWithTheCheckpoint) {
  TempDir dir;
  FaultInjectingEnv env(FileEnv::Default());
  std::map<int64_t, std::string> expected;
  {
    auto opened = Log::Open(dir.path(), FaultConfig(), &env);
    ASSERT_TRUE(opened.ok()) << opened.status().ToString();
    Log& log = **opened;
    ASSERT_TRUE(AppendNumbered(log, &expected).ok());
    ASSERT_TRUE(log.Flush().ok());  // the first checkpoint after open: indexes synced
    env.AddRule({FileOp::kMsync, "index", 0, false, EIO, false, ""});
    for (int i = 0; i < 3; ++i) {  // ~1 KiB each, one 16 KiB segment, well within a second
      ASSERT_TRUE(AppendNumbered(log, &expected).ok());
      Status st = log.Flush();
      ASSERT_TRUE(st.ok()) << "flush " << i << " msynced an index: " << st.ToString();
    }
    const Offset acked = log.flushed_offset();
    ASSERT_EQ(acked.value(), 16);
    const int64_t segments = log.segment_count();
    while (log.segment_count() == segments) ASSERT_TRUE(AppendNumbered(log, &expected).ok());
    Status st = log.Flush();  // the flush point enters the new segment: checkpoint due
    EXPECT_EQ(st.code(), StatusCode::kIOError) << st.ToString();
    EXPECT_EQ(log.flushed_offset(), acked);
    for (auto it = expected.lower_bound(acked.value()); it != expected.end();) {
      it = expected.erase(it);  // not acknowledged: may or may not survive
    }
  }
  auto reopened = Log::Open(dir.path(), FaultConfig());
  ASSERT_TRUE(reopened.ok()) << reopened.status().ToString();
  for (const auto& r : testing::ReadAll(**reopened)) {
    auto it = expected.find(r.offset.value());
    if (it != expected.end()) {
      EXPECT_EQ(r.value, it->second);
      expected.erase(it);
    }
  }
  EXPECT_TRUE(expected.empty()) << expected.size() << " flushed records missing";
}

}  // namespace
}  // namespace headrace
