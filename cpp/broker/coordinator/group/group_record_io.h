// Big-endian readers and writers of the group log's record bytes
// (group_records.h, consumer_group_records.h): "string" = int16 length +
// bytes (-1 = null), "bytes" = int32 length + bytes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace headrace::broker::group::record_io {

class Out {
 public:
  void I8(int8_t v) { Int(static_cast<uint8_t>(v), 1); }
  void I16(int16_t v) { Int(static_cast<uint16_t>(v), 2); }
  void I32(int32_t v) { Int(static_cast<uint32_t>(v), 4); }
  void I64(int64_t v) { Int(static_cast<uint64_t>(v), 8); }
  void Str(const std::string& s) {
    I16(static_cast<int16_t>(s.size()));
    s_ += s;
  }
  void NullableStr(const std::optional<std::string>& s) {
    if (!s) return I16(-1);
    Str(*s);
  }
  void Bytes(const std::string& s) {
    I32(static_cast<int32_t>(s.size()));
    s_ += s;
  }
  std::string Take() { return std::move(s_); }

 private:
  void Int(uint64_t v, int n) {
    for (int i = n - 1; i >= 0; --i) s_.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
  }
  std::string s_;
};

class In {
 public:
  explicit In(std::string_view b) : b_(b) {}
  bool ok() const { return ok_; }
  bool done() const { return pos_ == b_.size(); }
  int8_t I8() { return static_cast<int8_t>(Int(1)); }
  int16_t I16() { return static_cast<int16_t>(Int(2)); }
  int32_t I32() { return static_cast<int32_t>(Int(4)); }
  int64_t I64() { return static_cast<int64_t>(Int(8)); }
  std::optional<std::string> NullableStr() {
    int16_t n = I16();
    if (n < 0) return std::nullopt;
    return Take(static_cast<size_t>(n));
  }
  std::string Str() { return NullableStr().value_or(""); }
  std::string Bytes() {
    int32_t n = I32();
    if (n < 0) return "";
    return Take(static_cast<size_t>(n));
  }

 private:
  uint64_t Int(int n) {
    if (!ok_ || b_.size() - pos_ < static_cast<size_t>(n)) {
      ok_ = false;
      return 0;
    }
    uint64_t v = 0;
    for (int i = 0; i < n; ++i) v = (v << 8) | static_cast<uint8_t>(b_[pos_++]);
    return v;
  }
  std::string Take(size_t n) {
    if (!ok_ || b_.size() - pos_ < n) {
      ok_ = false;
      return "";
    }
    std::string s(b_.substr(pos_, n));
    pos_ += n;
    return s;
  }
  std::string_view b_;
  size_t pos_ = 0;
  bool ok_ = true;
};


}  // namespace headrace::broker::group::record_io
