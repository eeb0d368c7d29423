#include "net/transmit_queue.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <memory>
#include <string>

#include "common/test_file.h"

namespace headrace::net {
namespace {

// Drains the queue as a sender would, copying byte pieces from the iovecs
// and file pieces with pread, sending at most `max_step` bytes per call
// (ranges to load are marked loaded at once).
std::string Drain(TransmitQueue& q, int64_t max_step) {
  std::string out;
  while (!q.empty()) {
    TransmitQueue::Piece p = q.Next();
    int64_t sent = 0;
    if (p.kind == TransmitQueue::Kind::kLoad) {
      q.MarkLoaded();  // pread below reads it anyway
      continue;
    }
    if (p.kind == TransmitQueue::Kind::kFile) {
      int64_t n = std::min(p.file_length, max_step);
      std::string buf(static_cast<size_t>(n), '\0');
      EXPECT_EQ(pread(p.file_fd, buf.data(), buf.size(), p.file_offset), n);
      out += buf;
      sent = n;
    } else {
      for (int i = 0; i < p.iovcnt && sent < max_step; ++i) {
        int64_t n = std::min<int64_t>(static_cast<int64_t>(q.iov()[i].iov_len), max_step - sent);
        out.append(static_cast<const char*>(q.iov()[i].iov_base), static_cast<size_t>(n));
        sent += n;
      }
    }
    q.Consume(sent);
  }
  return out;
}

std::string Pattern(int64_t n) {
  std::string s;
  for (int64_t i = 0; i < n; ++i) s.push_back(static_cast<char>('a' + i % 26));
  return s;
}

std::string Prefix(uint32_t n) {
  return {static_cast<char>(n >> 24), static_cast<char>(n >> 16), static_cast<char>(n >> 8),
          static_cast<char>(n)};
}

using testing::TestFile;

TEST(TransmitQueueTest, PrefixesEachResponseAndBatchesByteChunks) {
  TransmitQueue q;
  OutputBuffer a;
  a.Append("hello", 5);
  OutputBuffer b;
  b.Append("xy", 2);
  q.Push(std::move(a));
  q.Push(std::move(b));
  EXPECT_EQ(q.unsent_bytes(), 15);
  TransmitQueue::Piece p = q.Next();
  EXPECT_EQ(p.kind, TransmitQueue::Kind::kBytes);
  EXPECT_EQ(p.iovcnt, 4);  // prefix, body, prefix, body: one sendmsg
  EXPECT_EQ(Drain(q, 1 << 20), Prefix(5) + "hello" + Prefix(2) + "xy");
  EXPECT_EQ(q.unsent_bytes(), 0);
}

TEST(TransmitQueueTest, FileSlicesAreSeparatePiecesAndPartialSendsResume) {
  std::string file = Pattern(40000);
  TestFile tf(file);
  OutputBuffer body;
  body.Append("head", 4);
  body.AppendSlice(tf.Slice(100, 20000));
  body.Append("mid", 3);
  body.AppendSlice(tf.Slice(30000, 10000));
  int64_t size = body.size();
  TransmitQueue q;
  q.Push(std::move(body));
  OutputBuffer empty;
  q.Push(std::move(empty));
  std::string expect = Prefix(static_cast<uint32_t>(size)) + "head" + file.substr(100, 20000) +
                       "mid" + file.substr(30000, 10000) + Prefix(0);
  EXPECT_EQ(Drain(q, 7), expect);
}

// Responses holding up to kCopyFileBytes of (cached) file bytes are copied
// when queued: they leave in one sendmsg together with the responses around
// them. One byte more and the file bytes are sent from the file.
TEST(TransmitQueueTest, SmallFileRangesAreCopiedLargeOnesSentFromTheFile) {
  const int64_t limit = TransmitQueue::kCopyFileBytes;
  std::string file = Pattern(2 * limit + 10);
  TestFile tf(file);
  for (int64_t extra : {int64_t{0}, int64_t{1}}) {
    SCOPED_TRACE("file bytes = limit + " + std::to_string(extra));
    OutputBuffer small;
    small.Append("h", 1);
    small.AppendSlice(tf.Slice(0, 1000));
    small.Append("m", 1);
    small.AppendSlice(tf.Slice(5000, limit - 1000 + extra));
    int64_t size = small.size();
    OutputBuffer next;
    next.Append("next", 4);
    TransmitQueue q;
    q.Push(std::move(small));
    q.Push(std::move(next));
    TransmitQueue::Piece first = q.Next();
    EXPECT_EQ(first.kind, TransmitQueue::Kind::kBytes);
    if (extra == 0) {
      EXPECT_EQ(first.iovcnt, 4);  // prefix, the copied body, prefix, "next"
    } else {
      EXPECT_EQ(first.iovcnt, 2);  // prefix, "h"; then the file
      q.Consume(5);
      EXPECT_EQ(q.Next().kind, TransmitQueue::Kind::kFile);
    }
    std::string expect = Prefix(static_cast<uint32_t>(size)) + "h" + file.substr(0, 1000) + "m" +
                         file.substr(5000, limit - 1000 + extra) + Prefix(4) + "next";
    EXPECT_EQ(Drain(q, 1 << 20), std::string(expect).substr(extra == 0 ? 0 : 5));
  }
}

// A fake page cache: ranges are "not cached" until MarkLoaded, counted.
int g_cached_calls = 0;
bool g_cold = true;
Result<bool> ReadNeverCached(const FileSlice&, uint8_t*) { return false; }
bool CachedWhenWarm(int, int64_t, int64_t) {
  ++g_cached_calls;
  return !g_cold;
}

// A file range not in the page cache comes out as a kLoad piece (with its
// keepalive) as long as it is not marked loaded; nothing behind it (a later
// response) goes out meanwhile; once loaded it is sent from the file without
// asking again.
TEST(TransmitQueueTest, AFileRangeNotCachedIsLoadedBeforeAnythingAfterItIsSent) {
  g_cached_calls = 0;
  g_cold = true;
  std::string file = Pattern(3000);
  TestFile tf(file);
  OutputBuffer cold;
  cold.Append("hd", 2);
  FileSlice slice = tf.Slice(500, 2000);
  auto keep = std::make_shared<int>(1);
  slice.keepalive = keep;
  cold.AppendSlice(slice);
  OutputBuffer after;
  after.Append("after", 5);
  TransmitQueue q({.read_if_cached = ReadNeverCached, .cached = CachedWhenWarm});
  q.Push(std::move(cold));  // small, but not cached: not copied
  q.Push(std::move(after));
  EXPECT_EQ(q.Next().iovcnt, 2);  // prefix + "hd"
  q.Consume(6);
  for (int i = 0; i < 2; ++i) {
    TransmitQueue::Piece p = q.Next();
    ASSERT_EQ(p.kind, TransmitQueue::Kind::kLoad);
    EXPECT_EQ(p.file_offset, 500);
    EXPECT_EQ(p.file_length, 2000);
    EXPECT_EQ(p.file_keepalive, keep);
  }
  q.MarkLoaded();  // still "cold" to the fake: the queue must not ask again
  int asked = g_cached_calls;
  TransmitQueue::Piece p = q.Next();
  EXPECT_EQ(p.kind, TransmitQueue::Kind::kFile);
  EXPECT_EQ(p.file_length, 2000);
  EXPECT_EQ(Drain(q, 700), file.substr(500, 2000) + Prefix(5) + "after");
  EXPECT_EQ(g_cached_calls, asked);
}

// Large ranges are checked (and sent) window by window.
TEST(TransmitQueueTest, LargeFileRangesAreCheckedInWindows) {
  g_cached_calls = 0;
  g_cold = false;
  const int64_t window = TransmitQueue::kCacheWindowBytes;
  TestFile tf("");
  ASSERT_EQ(ftruncate(tf.fd(), window + 4096), 0);
  OutputBuffer big;
  big.AppendSlice(tf.Slice(0, window + 4096));
  TransmitQueue q({.read_if_cached = ReadNeverCached, .cached = CachedWhenWarm});
  q.Push(std::move(big));
  q.Consume(4);  // the prefix
  TransmitQueue::Piece p = q.Next();
  EXPECT_EQ(p.kind, TransmitQueue::Kind::kFile);
  EXPECT_EQ(p.file_length, window);
  q.Consume(window - 100);
  EXPECT_EQ(q.Next().file_length, 100);  // the rest of the checked window
  EXPECT_EQ(g_cached_calls, 1);
  q.Consume(100);
  g_cold = true;
  p = q.Next();
  EXPECT_EQ(p.kind, TransmitQueue::Kind::kLoad);
  EXPECT_EQ(p.file_offset, window);
  EXPECT_EQ(p.file_length, 4096);
}

TEST(TransmitQueueTest, ManyChunksAreCappedAtMaxIov) {
  TransmitQueue q;
  for (int i = 0; i < 100; ++i) {
    OutputBuffer b;
    b.Append("z", 1);
    q.Push(std::move(b));
  }
  EXPECT_EQ(q.Next().iovcnt, TransmitQueue::kMaxIov);
  std::string expect;
  for (int i = 0; i < 100; ++i) expect += Prefix(1) + "z";
  EXPECT_EQ(Drain(q, 1 << 20), expect);
}

}  // namespace
}  // namespace headrace::net
