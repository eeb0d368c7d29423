// Test data builders for the log engine's tests and benchmarks: temporary
// directories, batches of N records, reading slices back.
#pragma once

#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <filesystem>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "headrace/log.h"
#include "headrace/record_batch.h"

namespace headrace::testing {

// A fresh directory under $TMPDIR, removed with everything in it at scope end.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "headrace-log-XXXXXX").string();
    path_ = mkdtemp(tmpl.data());
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }
  std::string sub(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// One entry of a Kafka format v0/v1 message set (log/legacy_message_set.h)
// as a producer writes it: offset, size, CRC-32, magic, attributes (codec
// bits for a wrapper), the timestamp (magic 1), key and value.
inline std::string LegacyEntry(int8_t magic, int64_t offset, std::optional<std::string> key,
                               std::optional<std::string> value, int8_t attributes = 0,
                               int64_t ts = 0) {
  auto put32 = [](std::string* out, uint32_t v) {
    for (int shift = 24; shift >= 0; shift -= 8) out->push_back(static_cast<char>(v >> shift));
  };
  auto put_bytes = [&](std::string* out, const std::optional<std::string>& b) {
    put32(out, static_cast<uint32_t>(b ? static_cast<int32_t>(b->size()) : -1));
    if (b) out->append(*b);
  };
  std::string body;
  body.push_back(static_cast<char>(magic));
  body.push_back(static_cast<char>(attributes));
  if (magic == 1) {
    put32(&body, static_cast<uint32_t>(static_cast<uint64_t>(ts) >> 32));
    put32(&body, static_cast<uint32_t>(ts));
  }
  put_bytes(&body, key);
  put_bytes(&body, value);
  std::string out;
  put32(&out, static_cast<uint32_t>(static_cast<uint64_t>(offset) >> 32));
  put32(&out, static_cast<uint32_t>(offset));
  put32(&out, static_cast<uint32_t>(body.size() + 4));
  put32(&out, static_cast<uint32_t>(
                  crc32(0L, reinterpret_cast<const Bytef*>(body.data()), static_cast<uInt>(body.size()))));
  return out + body;
}

// One batch of `records` records: key "k<i>" (null for every third when
// `null_keys`), value of `value_size` bytes, timestamps ts, ts+1, ...
inline std::string MakeBatch(int records, size_t value_size, int64_t ts, bool null_keys = false) {
  std::vector<RecordInput> in(records);
  for (int i = 0; i < records; ++i) {
    if (!(null_keys && i % 3 == 0)) in[i].key = "k" + std::to_string(i);
    in[i].value = std::string(value_size, static_cast<char>('a' + i % 26));
    in[i].timestamp = TimestampMs(ts + i);
  }
  return BuildBatch(in);
}

// `batches` back-to-back batches as MakeBatch builds them; batch b's
// timestamps start at ts + b * records.
inline std::string MakeBatches(int batches, int records, size_t value_size, int64_t ts) {
  std::string out;
  for (int b = 0; b < batches; ++b) out += MakeBatch(records, value_size, ts + b * records);
  return out;
}

inline std::span<uint8_t> Bytes(std::string& s) {
  return {reinterpret_cast<uint8_t*>(s.data()), s.size()};
}

// Concatenated bytes of every slice, read with pread.
inline std::string SliceBytes(const ReadResult& r) {
  std::string out;
  for (const FileSlice& s : r.slices) {
    std::string buf(s.length, '\0');
    ssize_t n = pread(s.fd, buf.data(), s.length, s.position.value());
    buf.resize(n < 0 ? 0 : n);
    out += buf;
  }
  return out;
}

// Every record from `from` to the end of the log, decoded.
inline std::vector<Record> ReadAll(const Log& log, Offset from = Offset(0)) {
  std::vector<Record> out;
  Offset next = from;
  while (next < log.end_offset()) {
    auto r = log.Read(next, 1 << 20, log.end_offset());
    if (!r.ok() || r->slices.empty()) break;
    std::string bytes = SliceBytes(*r);
    auto recs = DecodeRecords({reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()});
    if (!recs.ok() || recs->empty()) break;
    for (Record& rec : *recs)
      if (rec.offset >= next) out.push_back(std::move(rec));
    next = out.empty() ? next : out.back().offset + 1;
  }
  return out;
}

inline int64_t FileSize(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 ? st.st_size : -1;
}

// Sizes of every file in `dir`, by name: "the log is untouched" checks.
inline std::vector<std::pair<std::string, int64_t>> DirSizes(const std::string& dir) {
  std::vector<std::pair<std::string, int64_t>> out;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    out.emplace_back(e.path().filename().string(), FileSize(e.path().string()));
  std::sort(out.begin(), out.end());
  return out;
}

// Copies a live log directory: the image a crash would leave behind (page
// cache included, no clean shutdown marker).
inline void CopyDir(const std::string& from, const std::string& to) {
  std::filesystem::copy(from, to, std::filesystem::copy_options::recursive);
}

// A configuration with small segments and dense indexes.
inline LogConfig SmallConfig() {
  LogConfig c;
  c.segment_bytes = 16 * 1024;
  c.index_interval_bytes = 512;
  c.max_index_bytes = 64 * 1024;
  c.retention_ms = -1;
  return c;
}

}  // namespace headrace::testing
