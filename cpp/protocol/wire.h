// Kafka wire primitives: the hand-written half of the protocol codec. The
// generated message code (protocol/messages.h, built from the schemas by
// gen_codec.py) is written entirely in terms of Reader and Writer.
//
// The codec does no I/O. Reader walks a MUTABLE request frame: decoded
// `records` fields are spans into that frame, so the broker can rewrite base
// offsets in place before appending. Writer appends to an OutputBuffer; a
// `records` field given as FileSlices is appended with AppendSlice, never
// copied.
//
// Every Reader call is bounds-checked and returns Status::Corruption
// ("malformed ...") on bad input; lengths are checked against the remaining
// bytes before anything is allocated.
#pragma once

#include <array>
#include <compare>
#include <cstdint>
#include <cstring>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "common/output_buffer.h"
#include "common/uuid.h"
#include "headrace/status.h"
#include "headrace/types.h"

namespace headrace::protocol {

// Kafka UUIDs (topic ids, directory ids) are the project's one Uuid type
// (common/uuid.h): 16 bytes, big-endian on the wire.
using Uuid = ::headrace::Uuid;
using UuidHash = ::headrace::UuidHash;

// The value of a `records` field (a RecordBatch sequence, opaque to the
// codec). Exactly one source is normally used:
//  - `data`:   after Decode, a mutable view into the request frame (valid
//              only while the frame is); for Encode, bytes the caller keeps
//              alive until the OutputBuffer is sent or flattened.
//  - `owned`:  bytes owned by this object (Encode side).
//  - `slices`: file ranges (Encode side; fetch responses, zero-copy).
// Encode writes the total length, then data, owned, slices in that order.
// Default: empty and NOT null (length 0). Kafka's Java default is null, but
// an empty set is what every client accepts in a fetch response.
struct Records {
  bool is_null = false;
  std::span<uint8_t> data;
  std::string owned;
  std::vector<FileSlice> slices;

  static Records Null() { Records r; r.is_null = true; return r; }
  static Records FromSlices(std::vector<FileSlice> s) { Records r; r.slices = std::move(s); return r; }
  static Records FromBytes(std::string b) { Records r; r.owned = std::move(b); return r; }

  // Total byte length of all sources (0 when null).
  int64_t size() const;
  // Equal when both are null, or both hold the same bytes in data+owned and
  // the same (fd, position, length) slices.
  bool operator==(const Records& o) const;
};

class Reader {
 public:
  explicit Reader(std::span<uint8_t> data) : data_(data) {}

  size_t position() const { return pos_; }
  size_t remaining() const { return data_.size() - pos_; }
  // The unread bytes (a mutable view into the frame).
  std::span<uint8_t> rest() const { return data_.subspan(pos_); }

  Status Int8(int8_t* v);
  Status Int16(int16_t* v);
  Status Int32(int32_t* v);
  Status Int64(int64_t* v);
  Status Uint16(uint16_t* v);
  Status Uint32(uint32_t* v);
  Status Float64(double* v);
  Status Bool(bool* v);  // any non-zero byte is true
  Status Varint(int32_t* v);   // zigzag, at most 5 bytes
  Status Varlong(int64_t* v);  // zigzag, at most 10 bytes
  Status UVarint(uint32_t* v); // unsigned, at most 5 bytes
  Status ReadUuid(Uuid* v);

  // Strings: int16 length (compact: unsigned varint length+1). A null on the
  // wire is an error for String, and for NullableString unless allow_null.
  Status String(std::string* v, bool compact);
  Status NullableString(std::optional<std::string>* v, bool compact, bool allow_null = true);
  // Bytes: int32 length (compact: unsigned varint length+1).
  Status Bytes(std::string* v, bool compact);
  Status NullableBytes(std::optional<std::string>* v, bool compact, bool allow_null = true);
  // A records field: a length-prefixed view into the frame (no copy).
  Status ReadRecords(Records* v, bool compact, bool allow_null = true);

  // Array length: int32 (compact: unsigned varint n+1). Sets *n = -1 for a
  // null array (an error unless allow_null). Fails unless
  // n * min_element_size <= remaining(), so no absurd count gets allocated.
  Status ArrayLength(int32_t* n, bool compact, size_t min_element_size, bool allow_null);

  Status Skip(size_t n);
  // A reader over the next n bytes; this reader moves past them.
  Status Sub(size_t n, Reader* sub);
  // Reads a tagged-field section and calls fn(tag, Reader over the value)
  // for each entry; fn returns Status. Unknown tags: fn just returns OK and
  // the value is skipped.
  template <typename Fn>
  Status TaggedFields(Fn&& fn);
  Status SkipTaggedFields() {
    return TaggedFields([](uint32_t, Reader&) { return Status::OK(); });
  }

  static Status Malformed(const char* what);

 private:
  Status Need(size_t n) const {
    return n <= remaining() ? Status::OK() : Malformed("truncated input");
  }
  std::span<uint8_t> data_;
  size_t pos_ = 0;
};

class Writer {
 public:
  explicit Writer(OutputBuffer& out) : out_(out) {}
  OutputBuffer& out() { return out_; }

  void Int8(int8_t v) { Raw(&v, 1); }
  void Int16(int16_t v);
  void Int32(int32_t v);
  void Int64(int64_t v);
  void Uint16(uint16_t v);
  void Uint32(uint32_t v);
  void Float64(double v);
  void Bool(bool v) { Int8(v ? 1 : 0); }
  void Varint(int32_t v);
  void Varlong(int64_t v);
  void UVarint(uint32_t v);
  void WriteUuid(const Uuid& v) { Raw(v.bytes.data(), 16); }

  // REQUIRES: a non-compact string is at most 32767 bytes (longer ones are
  // truncated so the frame stays well-formed).
  void String(std::string_view v, bool compact);
  // A null value is written as null when allow_null, else as "".
  void NullableString(const std::optional<std::string>& v, bool compact, bool allow_null = true);
  void Bytes(std::string_view v, bool compact);
  void NullableBytes(const std::optional<std::string>& v, bool compact, bool allow_null = true);
  // Length prefix, then data, owned, slices (slices via AppendSlice).
  void WriteRecords(const Records& v, bool compact, bool allow_null = true);
  void ArrayLength(size_t n, bool compact);
  void NullArray(bool compact);
  // One tagged-field entry: tag, size, then the bytes of `value`, which must
  // hold only byte chunks.
  void TaggedField(uint32_t tag, const OutputBuffer& value);
  void Raw(const void* p, size_t n) { out_.Append(p, n); }

 private:
  OutputBuffer& out_;
};

// ---- array and struct helpers used by the generated code -----------------

// Element codecs. Structs use their own Decode/Encode(version).
inline Status ReadElem(Reader& r, int8_t* v, int16_t, bool) { return r.Int8(v); }
inline Status ReadElem(Reader& r, int16_t* v, int16_t, bool) { return r.Int16(v); }
inline Status ReadElem(Reader& r, int32_t* v, int16_t, bool) { return r.Int32(v); }
inline Status ReadElem(Reader& r, int64_t* v, int16_t, bool) { return r.Int64(v); }
inline Status ReadElem(Reader& r, Uuid* v, int16_t, bool) { return r.ReadUuid(v); }
inline Status ReadElem(Reader& r, std::string* v, int16_t, bool c) { return r.String(v, c); }
template <typename T>
Status ReadElem(Reader& r, T* v, int16_t version, bool) { return v->Decode(r, version); }

inline void WriteElem(Writer& w, int8_t v, int16_t, bool) { w.Int8(v); }
inline void WriteElem(Writer& w, int16_t v, int16_t, bool) { w.Int16(v); }
inline void WriteElem(Writer& w, int32_t v, int16_t, bool) { w.Int32(v); }
inline void WriteElem(Writer& w, int64_t v, int16_t, bool) { w.Int64(v); }
inline void WriteElem(Writer& w, const Uuid& v, int16_t, bool) { w.WriteUuid(v); }
inline void WriteElem(Writer& w, const std::string& v, int16_t, bool c) { w.String(v, c); }
template <typename T>
void WriteElem(Writer& w, const T& v, int16_t version, bool) { v.Encode(w, version); }

// The fewest bytes one element can take on the wire.
template <typename T>
constexpr size_t MinWireSize(bool compact) {
  if constexpr (std::is_same_v<T, std::string>) return compact ? 1 : 2;
  else if constexpr (std::is_same_v<T, Uuid>) return 16;
  else if constexpr (std::is_arithmetic_v<T>) return sizeof(T);
  else return 1;  // a struct: generated code guarantees >= 1 byte
}

template <typename T>
Status ReadArray(Reader& r, std::vector<T>* out, int16_t version, bool compact) {
  int32_t n = 0;
  HR_RETURN_IF_ERROR(r.ArrayLength(&n, compact, MinWireSize<T>(compact), false));
  out->clear();
  if constexpr (std::is_arithmetic_v<T>) out->reserve(static_cast<size_t>(n));
  for (int32_t i = 0; i < n; ++i) {  // grows as elements decode, no up-front reserve
    HR_RETURN_IF_ERROR(ReadElem(r, &out->emplace_back(), version, compact));
  }
  return Status::OK();
}

template <typename T>
Status ReadNullableArray(Reader& r, std::optional<std::vector<T>>* out, int16_t version,
                         bool compact, bool allow_null) {
  int32_t n = 0;
  HR_RETURN_IF_ERROR(r.ArrayLength(&n, compact, MinWireSize<T>(compact), allow_null));
  if (n < 0) {
    out->reset();
    return Status::OK();
  }
  auto& vec = out->emplace();
  for (int32_t i = 0; i < n; ++i) {
    HR_RETURN_IF_ERROR(ReadElem(r, &vec.emplace_back(), version, compact));
  }
  return Status::OK();
}

template <typename T>
void WriteArray(Writer& w, const std::vector<T>& a, int16_t version, bool compact) {
  w.ArrayLength(a.size(), compact);
  for (const auto& e : a) WriteElem(w, e, version, compact);
}

// A null array is written as null when allow_null, else as empty.
template <typename T>
void WriteNullableArray(Writer& w, const std::optional<std::vector<T>>& a, int16_t version,
                        bool compact, bool allow_null) {
  if (!a) {
    if (allow_null) w.NullArray(compact); else w.ArrayLength(0, compact);
    return;
  }
  WriteArray(w, *a, version, compact);
}

// Nullable struct (KIP-893): int8 -1 for null, 1 then the struct.
template <typename T>
Status ReadNullableStruct(Reader& r, std::optional<T>* out, int16_t version, bool allow_null) {
  int8_t marker = 0;
  HR_RETURN_IF_ERROR(r.Int8(&marker));
  if (marker < 0) {
    if (!allow_null) return Reader::Malformed("null in a non-nullable struct field");
    out->reset();
    return Status::OK();
  }
  // emplace(T{}) rather than emplace(): clang caches "not default-constructible"
  // for nested structs with member initialisers while the outer class is open.
  return out->emplace(T{}).Decode(r, version);
}

// A null struct is written as null when allow_null, else as a default one.
template <typename T>
void WriteNullableStruct(Writer& w, const std::optional<T>& v, int16_t version, bool allow_null) {
  if (!v && allow_null) {
    w.Int8(-1);
    return;
  }
  w.Int8(1);
  if (v) v->Encode(w, version); else T{}.Encode(w, version);
}

template <typename Fn>
Status Reader::TaggedFields(Fn&& fn) {
  uint32_t count = 0;
  HR_RETURN_IF_ERROR(UVarint(&count));
  for (uint32_t i = 0; i < count; ++i) {
    uint32_t tag = 0, size = 0;
    HR_RETURN_IF_ERROR(UVarint(&tag));
    HR_RETURN_IF_ERROR(UVarint(&size));
    Reader value(std::span<uint8_t>{});
    HR_RETURN_IF_ERROR(Sub(size, &value));
    HR_RETURN_IF_ERROR(fn(tag, value));
  }
  return Status::OK();
}

}  // namespace headrace::protocol
