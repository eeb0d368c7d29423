// The log cleaner: the offset map, a pass's rules (latest value per key,
// several passes with a small map, tombstones and delete.retention.ms,
// aborted transactions and markers, producers' last batches, grouping),
// reads over the gaps it leaves, and the swap protocol at every crash point
// (the I/O seam fails each rename / unlink of a pass in turn).
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <optional>

#include "common/fault_injecting_env.h"
#include "headrace/log.h"
#include "headrace/record_batch.h"
#include "log/cleaner.h"
#include "log/filename.h"
#include "log/offset_map.h"
#include "log/record_batch_internal.h"
#include "log/testing.h"

namespace headrace {
namespace {

using testing::Bytes;
using testing::TempDir;

TEST(OffsetMap, KeepsTheLargestOffsetPerKey) {
  OffsetMap m(24 * 1000);
  EXPECT_EQ(m.Get("a"), -1);
  EXPECT_TRUE(m.Put("a", 5));
  EXPECT_TRUE(m.Put("a", 3));
  EXPECT_EQ(m.Get("a"), 5);
  EXPECT_TRUE(m.Put("", 7));  // an empty key is a key
  EXPECT_EQ(m.Get(""), 7);
  EXPECT_EQ(m.size(), 2);
}

TEST(OffsetMap, RefusesNewKeysAtCapacityOnly) {
  OffsetMap m(24 * 100);
  EXPECT_EQ(m.slots(), 100);
  EXPECT_EQ(m.capacity(), 90);
  for (int i = 0; i < 90; ++i) ASSERT_TRUE(m.Put("key-" + std::to_string(i), i));
  EXPECT_FALSE(m.Put("one more", 1));
  EXPECT_TRUE(m.Put("key-3", 1000));  // an existing key still updates
  EXPECT_EQ(m.Get("key-3"), 1000);
  for (int i = 0; i < 90; ++i) {
    if (i != 3) {
      EXPECT_EQ(m.Get("key-" + std::to_string(i)), i);
    }
  }
  EXPECT_EQ(m.Get("one more"), -1);
  m.Clear();
  EXPECT_EQ(m.size(), 0);
  EXPECT_EQ(m.Get("key-5"), -1);
}

TEST(OffsetMap, NoCollisionsAmongAMillionKeys) {
  OffsetMap m(24LL * 1200000);
  for (int i = 0; i < 1000000; ++i) ASSERT_TRUE(m.Put("k" + std::to_string(i), i));
  EXPECT_EQ(m.size(), 1000000);
  for (int i = 0; i < 1000000; i += 997) ASSERT_EQ(m.Get("k" + std::to_string(i)), i);
}

// A test log with a model of what was written: offset -> (key, value).
struct Model {
  std::map<int64_t, std::pair<std::string, std::optional<std::string>>> by_offset;
  std::map<std::string, std::optional<std::string>> latest;  // key -> value (nullopt: tombstone)
};

LogConfig CleanerConfig() {
  LogConfig c = testing::SmallConfig();
  c.segment_bytes = 8 * 1024;
  return c;
}

// Appends one batch of (key, value) records; `codec` compresses it.
Offset AppendKv(Log& log, Model* model,
                const std::vector<std::pair<std::string, std::optional<std::string>>>& kvs,
                Compression codec = Compression::kNone, BatchProducerFields producer = {}) {
  std::vector<RecordInput> in;
  for (const auto& [k, v] : kvs) {
    RecordInput r;
    r.key = k;
    r.value = v;
    r.timestamp = TimestampMs(1000);
    in.push_back(std::move(r));
  }
  std::string b = BuildBatch(in, producer);
  if (codec != Compression::kNone) b = std::move(ConvertCompression(Bytes(b), codec)).value();
  auto a = log.Append(Bytes(b));
  EXPECT_TRUE(a.ok()) << a.status().ToString();
  for (size_t i = 0; i < kvs.size(); ++i) {
    if (model) {
      model->by_offset[(a->base_offset + static_cast<int64_t>(i)).value()] = kvs[i];
      model->latest[kvs[i].first] = kvs[i].second;
    }
  }
  return a->last_offset;
}

// `keys` keys x `versions` versions, 5 records a batch, every third batch
// compressed (lz4 / zstd alternating), values "v<version>-<key>".
void FillVersions(Log& log, Model* model, int keys, int versions, int first_version = 0) {
  int batch_no = 0;
  for (int v = first_version; v < first_version + versions; ++v) {
    for (int k = 0; k < keys; k += 5) {
      std::vector<std::pair<std::string, std::optional<std::string>>> kvs;
      for (int j = k; j < std::min(keys, k + 5); ++j)
        kvs.emplace_back("key-" + std::to_string(j),
                         "v" + std::to_string(v) + "-" + std::string(40, 'x') + std::to_string(j));
      Compression c = batch_no % 3 != 2 ? Compression::kNone
                      : (batch_no % 2 ? Compression::kLz4 : Compression::kZstd);
      AppendKv(log, model, kvs, c);
      ++batch_no;
    }
  }
}

CleanRequest Request(const Log& log, int64_t now_ms = 1000000) {
  CleanRequest r;
  r.now_ms = now_ms;
  r.clean_below = log.end_offset();
  r.delete_retention_ms = 1000;
  r.dedupe_buffer_bytes = 1 << 20;
  r.max_segment_bytes = CleanerConfig().segment_bytes;
  return r;
}

// Checks the log against the model: every record read is the one written
// at its offset (offsets never change), each key's latest value is there,
// and below `clean_end` no key appears twice.
void ExpectMatchesModel(const Log& log, const Model& model, Offset clean_end,
                        bool tombstones_gone = false) {
  std::vector<Record> recs = testing::ReadAll(log, log.start_offset());
  std::map<std::string, std::optional<std::string>> seen;
  std::map<std::string, int> below;
  for (const Record& r : recs) {
    auto it = model.by_offset.find(r.offset.value());
    ASSERT_NE(it, model.by_offset.end()) << "offset " << r.offset.value() << " was never written";
    ASSERT_EQ(r.key, it->second.first) << "offset " << r.offset.value();
    ASSERT_EQ(r.value, it->second.second) << "offset " << r.offset.value();
    seen[*r.key] = r.value;
    if (r.offset < clean_end) ++below[*r.key];
  }
  for (const auto& [k, v] : model.latest) {
    if (!v && tombstones_gone) {
      EXPECT_EQ(seen.count(k), 0u) << k << ": tombstone still there";
      continue;
    }
    ASSERT_EQ(seen.count(k), 1u) << k << " lost";
    EXPECT_EQ(seen[k], v) << k;
  }
  for (const auto& [k, n] : below) EXPECT_EQ(n, 1) << k << " appears " << n << " times";
}

std::unique_ptr<Log> OpenLog(const std::string& dir, FileEnv* env = nullptr) {
  auto r = Log::Open(dir, CleanerConfig(), env);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return std::move(r).value();
}

TEST(LogCleaner, KeepsOnlyTheLatestValuePerKey) {
  TempDir dir;
  auto log = OpenLog(dir.path());
  Model model;
  FillVersions(*log, &model, 40, 20);
  ASSERT_TRUE(log->Flush().ok());
  const int64_t before = log->size_bytes();
  const Offset end = log->end_offset();
  auto st = log->Cleanable(Request(*log));
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st->first_dirty, Offset(0));
  EXPECT_GT(st->dirty_bytes, 0);
  EXPECT_NEAR(st->dirty_ratio(), 1.0, 1e-9);
  auto rep = log->Clean(Request(*log));
  ASSERT_TRUE(rep.ok()) << rep.status().ToString();
  EXPECT_TRUE(rep->cleaned);
  EXPECT_EQ(rep->map_keys, 40);
  EXPECT_GT(rep->records_removed, 0);
  EXPECT_EQ(rep->first_dirty_after, log->active_segment_base());
  EXPECT_LT(log->size_bytes(), before / 3);
  EXPECT_EQ(log->end_offset(), end);  // offsets never change
  EXPECT_LT(log->segment_count(), 10);
  ExpectMatchesModel(*log, model, log->active_segment_base());
  // Nothing dirty any more: a second pass does nothing.
  auto again = log->Cleanable(Request(*log));
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->dirty_bytes, 0);
  // Appends continue at the same end; a reopened log (clean and unclean)
  // reads the same over the gaps.
  AppendKv(*log, &model, {{"key-1", std::string("after")}});
  ASSERT_TRUE(log->Close().ok());
  auto reopened = OpenLog(dir.path());
  EXPECT_EQ(reopened->recovery_report().truncated_at, Offset(-1));
  ExpectMatchesModel(*reopened, model, Offset(0));
  EXPECT_EQ(reopened->end_offset(), end + 1);
}

TEST(LogCleaner, ReadsAndTimeLookupsAcrossGaps) {
  TempDir dir;
  auto log = OpenLog(dir.path());
  Model model;
  FillVersions(*log, &model, 10, 30);
  ASSERT_TRUE(log->Flush().ok());
  ASSERT_TRUE(log->Clean(Request(*log)).ok());
  // A read at an offset that was removed starts at the next batch kept.
  for (int64_t o = 0; o < log->active_segment_base().value(); o += 7) {
    auto r = log->Read(Offset(o), 1 << 16, log->end_offset());
    ASSERT_TRUE(r.ok()) << o;
    ASSERT_FALSE(r->slices.empty()) << o;
    std::string bytes = testing::SliceBytes(*r);
    auto recs = DecodeRecords({reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()});
    ASSERT_TRUE(recs.ok());
    bool found = false;
    for (const Record& rec : *recs) found = found || rec.offset >= Offset(o);
    EXPECT_TRUE(found) << o;
  }
  auto t = log->OffsetForTime(TimestampMs(0));
  ASSERT_TRUE(t.ok());
  EXPECT_TRUE(model.by_offset.count(t->first.value()));
}

TEST(LogCleaner, ASmallMapCleansInSeveralPasses) {
  TempDir dir;
  auto log = OpenLog(dir.path());
  Model model;
  FillVersions(*log, &model, 100, 8);
  ASSERT_TRUE(log->Flush().ok());
  CleanRequest req = Request(*log);
  req.dedupe_buffer_bytes = 24 * 60;  // 54 keys: about half a version per pass
  int passes = 0;
  while (true) {
    auto rep = log->Clean(req);
    ASSERT_TRUE(rep.ok()) << rep.status().ToString();
    ++passes;
    ASSERT_LT(passes, 50);
    auto st = log->Cleanable(req);
    ASSERT_TRUE(st.ok());
    if (st->dirty_bytes == 0) break;
  }
  EXPECT_GT(passes, 3);
  ExpectMatchesModel(*log, model, log->active_segment_base());
}

TEST(LogCleaner, TombstonesGoOnlyAfterDeleteRetention) {
  TempDir dir;
  auto log = OpenLog(dir.path());
  Model model;
  FillVersions(*log, &model, 20, 10);
  for (int k = 0; k < 20; k += 2) AppendKv(*log, &model, {{"key-" + std::to_string(k), std::nullopt}});
  // Fill a segment with other keys so the tombstones are not in the active one.
  for (int i = 0; i < 200; ++i) AppendKv(*log, &model, {{"other-" + std::to_string(i), std::string(40, 'o')}});
  ASSERT_TRUE(log->Flush().ok());
  const int64_t t0 = 1000000;
  auto rep = log->Clean(Request(*log, t0));
  ASSERT_TRUE(rep.ok());
  Offset clean_end = rep->first_dirty_after;
  ExpectMatchesModel(*log, model, clean_end);  // tombstones still there
  // Within delete.retention.ms of the clean: kept.
  ASSERT_TRUE(log->Clean(Request(*log, t0 + 500)).ok());
  ExpectMatchesModel(*log, model, clean_end);
  // After it: gone, and no older value of those keys comes back.
  auto later = log->Clean(Request(*log, t0 + 5000));
  ASSERT_TRUE(later.ok());
  ExpectMatchesModel(*log, model, clean_end, /*tombstones_gone=*/true);
}

TEST(LogCleaner, AbortedTransactionsGoAndMarkersFollowTheRules) {
  TempDir dir;
  auto log = OpenLog(dir.path());
  Model model;
  BatchProducerFields txn{7, 0, 0, true, false};
  // Committed: key-c = "committed"; aborted: key-a, key-c overwritten (aborted).
  Offset c1 = AppendKv(*log, &model, {{"key-c", std::string("committed")}}, Compression::kNone, txn);
  std::string commit = BuildEndTxnMarkerBatch(7, 0, {true, 0});
  ASSERT_TRUE(log->Append(Bytes(commit)).ok());
  txn.base_sequence = 1;
  Offset a_first = log->end_offset();
  AppendKv(*log, nullptr, {{"key-a", std::string("aborted")}, {"key-c", std::string("aborted")}},
           Compression::kZstd, txn);
  std::string abort = BuildEndTxnMarkerBatch(7, 0, {false, 0});
  auto am = log->Append(Bytes(abort));
  ASSERT_TRUE(am.ok());
  Offset abort_marker = am->base_offset;
  for (int i = 0; i < 300; ++i) AppendKv(*log, &model, {{"pad-" + std::to_string(i % 50), std::string(40, 'p')}});
  ASSERT_TRUE(log->Flush().ok());
  CleanRequest req = Request(*log, 1000000);
  req.aborted = {{7, a_first, abort_marker}};
  ASSERT_TRUE(log->Clean(req).ok());
  // The aborted records are gone; the committed one and both markers stay.
  std::vector<Record> recs = testing::ReadAll(*log);
  for (const Record& r : recs) EXPECT_NE(r.value, std::optional<std::string>("aborted"));
  auto has_batch_at = [&](Offset o) {
    auto r = log->Read(o, 100, log->end_offset(), true);
    if (!r.ok() || r->slices.empty()) return false;
    std::string b = testing::SliceBytes(*r);
    return batch::DecodeHeader(reinterpret_cast<const uint8_t*>(b.data())).base_offset == o;
  };
  EXPECT_TRUE(has_batch_at(c1 + 1));  // commit marker: its data is still there
  EXPECT_TRUE(has_batch_at(abort_marker));  // abort marker: its data was just removed
  ExpectMatchesModel(*log, model, Offset(0));
  // After delete.retention.ms: the abort marker goes (no data left), the
  // commit marker stays (its transaction's record is still in the log).
  req.now_ms += 5000;
  ASSERT_TRUE(log->Clean(req).ok());
  EXPECT_FALSE(has_batch_at(abort_marker));
  EXPECT_TRUE(has_batch_at(c1 + 1));
  ExpectMatchesModel(*log, model, Offset(0));
}

TEST(LogCleaner, KeepsEachProducersLastBatchWhole) {
  TempDir dir;
  auto log = OpenLog(dir.path());
  Model model;
  BatchProducerFields idem{9, 0, 0, false, false};
  Offset last = AppendKv(*log, &model, {{"p", std::string("1")}, {"q", std::string("1")}},
                         Compression::kNone, idem);
  for (int i = 0; i < 300; ++i) AppendKv(*log, &model, {{"p", std::to_string(i + 2)}});
  ASSERT_TRUE(log->Flush().ok());
  CleanRequest req = Request(*log);
  req.producer_last_offsets[9] = last.value();
  ASSERT_TRUE(log->Clean(req).ok());
  auto r = log->Read(Offset(0), 100, log->end_offset());
  ASSERT_TRUE(r.ok());
  std::string b = testing::SliceBytes(*r);
  BatchHeader h = batch::DecodeHeader(reinterpret_cast<const uint8_t*>(b.data()));
  EXPECT_EQ(h.producer_id, 9);
  EXPECT_EQ(h.record_count, 2);  // "p"=1 is superseded but its batch is the producer's last
}

TEST(LogCleaner, NeverTouchesTheActiveSegmentOrPastTheBound) {
  TempDir dir;
  auto log = OpenLog(dir.path());
  Model model;
  FillVersions(*log, &model, 20, 40);
  ASSERT_TRUE(log->Flush().ok());
  CleanRequest req = Request(*log);
  auto bases = log->segment_base_offsets();
  ASSERT_GE(bases.size(), 4u);
  req.clean_below = bases[2];  // segments 0 and 1 only
  auto rep = log->Clean(req);
  ASSERT_TRUE(rep.ok());
  EXPECT_EQ(rep->first_dirty_after, bases[2]);
  auto after = log->segment_base_offsets();
  for (size_t i = 2; i < bases.size(); ++i)
    EXPECT_NE(std::find(after.begin(), after.end(), bases[i]), after.end());
  ExpectMatchesModel(*log, model, Offset(0));
  // min.compaction.lag.ms: records at t=1000 are newer than now - lag.
  CleanRequest lag = Request(*log, 2000);
  lag.min_compaction_lag_ms = 5000;
  auto st = log->Cleanable(lag);
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st->dirty_bytes, 0);
  EXPECT_EQ(st->clean_bytes, 0);
}

TEST(LogCleaner, StopAbandonsThePassUntouched) {
  TempDir dir;
  auto log = OpenLog(dir.path());
  Model model;
  FillVersions(*log, &model, 10, 30);
  ASSERT_TRUE(log->Flush().ok());
  auto sizes = testing::DirSizes(dir.path());
  std::atomic<bool> stop{true};
  CleanRequest req = Request(*log);
  req.stop = &stop;
  auto rep = log->Clean(req);
  EXPECT_FALSE(rep.ok());
  ExpectMatchesModel(*log, model, Offset(0), false);
  EXPECT_FALSE(log->failed());
}

// Every rename and unlink of a pass failed in turn (the I/O seam), the log
// abandoned there as a crash would leave it, and reopened: the latest value
// of every key and every offset kept are intact, and no .cleaned / .swap
// file survives the reopen.
void CrashAtEachStep(FileOp op) {
  for (int after = 0; after < 40; ++after) {
    SCOPED_TRACE("op " + std::string(FileOpName(op)) + " after " + std::to_string(after));
    TempDir dir;
    FaultInjectingEnv env(FileEnv::Default());
    Model model;
    bool reached_end = false;
    {
      auto log = OpenLog(dir.path(), &env);
      FillVersions(*log, &model, 20, 12);
      ASSERT_TRUE(log->Flush().ok());
      FaultRule rule;
      rule.op = op;
      rule.after = after;
      env.AddRule(rule);
      auto rep = log->Clean(Request(*log));
      reached_end = rep.ok();
      (void)log->Abandon();
    }
    env.ClearRules();
    auto log = OpenLog(dir.path());
    ExpectMatchesModel(*log, model, Offset(0), false);
    for (const auto& [name, size] : testing::DirSizes(dir.path())) {
      EXPECT_EQ(name.find(".cleaned"), std::string::npos) << name;
      EXPECT_EQ(name.find(".swap"), std::string::npos) << name;
    }
    // A later pass finishes the job.
    auto rep = log->Clean(Request(*log));
    ASSERT_TRUE(rep.ok()) << rep.status().ToString();
    ExpectMatchesModel(*log, model, log->active_segment_base());
    if (reached_end) break;
  }
}

TEST(LogCleanerCrash, AtEveryRename) { CrashAtEachStep(FileOp::kRename); }
TEST(LogCleanerCrash, AtEveryUnlink) { CrashAtEachStep(FileOp::kUnlink); }
TEST(LogCleanerCrash, AtEveryFsync) { CrashAtEachStep(FileOp::kSync); }
TEST(LogCleanerCrash, AtEveryWrite) { CrashAtEachStep(FileOp::kWrite); }

TEST(LogCleanerCrash, HalfDoneSwapIsFinishedAtOpen) {
  // The state after the commit point: a .swap beside the segments it
  // replaces (built by hand from a cleaned copy).
  TempDir dir, cleaned;
  Model model;
  {
    auto log = OpenLog(dir.path());
    FillVersions(*log, &model, 20, 12);
    ASSERT_TRUE(log->Close().ok());
  }
  std::filesystem::remove_all(cleaned.path());
  testing::CopyDir(dir.path(), cleaned.path());
  Offset first_base;
  {
    auto log = OpenLog(cleaned.path());
    ASSERT_TRUE(log->Flush().ok());
    ASSERT_TRUE(log->Clean(Request(*log)).ok());
    first_base = log->segment_base_offsets().front();
    ASSERT_TRUE(log->Close().ok());
  }
  std::string name = filename::SegmentFileName(first_base, filename::FileKind::kLog);
  std::filesystem::copy_file(cleaned.sub(name), dir.sub(name + ".swap"));
  auto log = OpenLog(dir.path());
  ExpectMatchesModel(*log, model, Offset(0), false);
  EXPECT_LT(log->segment_count(), 10);
  EXPECT_EQ(testing::FileSize(dir.sub(name + ".swap")), -1);
}

TEST(IoThrottler, HoldsTheRate) {
  IoThrottler t(1 << 20);  // 1 MiB/s
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 8; ++i) t.Throttle(64 << 10);  // 512 KiB
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_GT(s, 0.4);
  EXPECT_LT(s, 1.0);
  IoThrottler unlimited(0);
  EXPECT_EQ(unlimited.Throttle(1 << 30), 0);
}

TEST(CleanerCheckpoint, RoundTripsAndIgnoresGarbage) {
  TempDir dir;
  CleanerCheckpoint c;
  c.first_dirty = Offset(4711);
  c.segments = {{0, {123, 0}}, {100, {456, 3}}};
  ASSERT_TRUE(WriteCleanerCheckpoint(*FileEnv::Default(), dir.path(), c).ok());
  CleanerCheckpoint r = ReadCleanerCheckpoint(*FileEnv::Default(), dir.path());
  EXPECT_EQ(r.first_dirty, Offset(4711));
  EXPECT_EQ(r.segments, c.segments);
  {
    FILE* f = fopen(dir.sub(kCleanerCheckpointName).c_str(), "r+");
    fseek(f, 40, SEEK_SET);
    fputc('9', f);
    fclose(f);
  }
  r = ReadCleanerCheckpoint(*FileEnv::Default(), dir.path());
  EXPECT_EQ(r.first_dirty, Offset(0));
  EXPECT_TRUE(r.segments.empty());
}

}  // namespace
}  // namespace headrace
