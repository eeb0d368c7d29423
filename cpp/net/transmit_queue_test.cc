#include "net/transmit_queue.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <string>

namespace headrace::net {
namespace {

// Drains the queue as a sender would, copying byte pieces from the iovecs
// and file pieces with pread, sending at most `max_step` bytes per call.
std::string Drain(TransmitQueue& q, int64_t max_step) {
  std::string out;
  while (!q.empty()) {
    TransmitQueue::Piece p = q.Next();
    int64_t sent = 0;
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

std::string Prefix(uint32_t n) {
  return {static_cast<char>(n >> 24), static_cast<char>(n >> 16), static_cast<char>(n >> 8),
          static_cast<char>(n)};
}

class TempFile {
 public:
  explicit TempFile(const std::string& content) {
    char path[] = "/tmp/headrace_tq_XXXXXX";
    fd_ = mkstemp(path);
    unlink(path);
    EXPECT_EQ(write(fd_, content.data(), content.size()), static_cast<ssize_t>(content.size()));
  }
  ~TempFile() { close(fd_); }
  FileSlice Slice(int64_t pos, int64_t len) const {
    FileSlice s;
    s.fd = fd_;
    s.position = FilePosition(pos);
    s.length = len;
    return s;
  }

 private:
  int fd_;
};

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
  std::string file;
  for (int i = 0; i < 5000; ++i) file.push_back(static_cast<char>('a' + i % 26));
  TempFile tf(file);
  OutputBuffer body;
  body.Append("head", 4);
  body.AppendSlice(tf.Slice(100, 3000));
  body.Append("mid", 3);
  body.AppendSlice(tf.Slice(4000, 1000));
  int64_t size = body.size();
  TransmitQueue q;
  q.Push(std::move(body));
  OutputBuffer empty;
  q.Push(std::move(empty));
  std::string expect = Prefix(static_cast<uint32_t>(size)) + "head" + file.substr(100, 3000) +
                       "mid" + file.substr(4000, 1000) + Prefix(0);
  EXPECT_EQ(Drain(q, 7), expect);
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
