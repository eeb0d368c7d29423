// OutputBuffer: what an encoder produces and the transmit layer sends. It is
// a sequence of chunks, each either owned bytes or a FileSlice (record bytes
// that stay in a segment file and go out with sendfile / splice). Encoders
// append to it; nothing here does I/O.
#pragma once

#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "headrace/types.h"

namespace headrace {

class OutputBuffer {
 public:
  struct Chunk {
    std::string bytes;  // used when !is_slice
    FileSlice slice;    // used when is_slice
    bool is_slice = false;
    int64_t size() const { return is_slice ? slice.length : static_cast<int64_t>(bytes.size()); }
  };

  // Appends raw bytes to the last byte chunk (or a new one).
  void Append(const void* data, size_t n) {
    if (chunks_.empty() || chunks_.back().is_slice) chunks_.emplace_back();
    chunks_.back().bytes.append(static_cast<const char*>(data), n);
    size_ += static_cast<int64_t>(n);
  }
  void Append(std::span<const uint8_t> b) { Append(b.data(), b.size()); }
  // Appends `bytes` as a byte chunk of its own (moved, not copied).
  void AppendChunk(std::string bytes) {
    if (bytes.empty()) return;
    size_ += static_cast<int64_t>(bytes.size());
    chunks_.emplace_back().bytes = std::move(bytes);
  }
  // Appends a file slice; its bytes are not copied.
  void AppendSlice(FileSlice s) {
    if (s.length <= 0) return;
    size_ += s.length;
    Chunk c;
    c.slice = std::move(s);
    c.is_slice = true;
    chunks_.push_back(std::move(c));
  }
  // Overwrites 4 bytes at absolute byte position `pos`, which must lie in a
  // byte chunk (used to patch length prefixes). Returns false otherwise.
  bool PatchInt32BE(int64_t pos, int32_t v);

  int64_t size() const { return size_; }
  const std::vector<Chunk>& chunks() const { return chunks_; }
  std::vector<Chunk>& mutable_chunks() { return chunks_; }
  bool has_slices() const {
    for (const auto& c : chunks_) if (c.is_slice) return true;
    return false;
  }
  // Copies everything (reading slices with pread) into one string. For tests
  // and for the TLS path later; never used on the plaintext fetch path.
  std::string Flatten() const;

 private:
  std::vector<Chunk> chunks_;
  int64_t size_ = 0;
};

}  // namespace headrace
