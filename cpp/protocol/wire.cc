#include "protocol/wire.h"

#include <algorithm>
#include <bit>
#include <limits>

namespace headrace::protocol {
namespace {


template <typename U>
U LoadBE(const uint8_t* p) {
  U v = 0;
  for (size_t i = 0; i < sizeof(U); ++i) v = static_cast<U>((v << 8) | p[i]);
  return v;
}

template <typename U>
void StoreBE(Writer& w, U v) {
  uint8_t b[sizeof(U)];
  for (size_t i = 0; i < sizeof(U); ++i) b[i] = static_cast<uint8_t>(v >> (8 * (sizeof(U) - 1 - i)));
  w.Raw(b, sizeof(U));
}

}  // namespace

// ---- Records ---------------------------------------------------------------

int64_t Records::size() const {
  if (is_null) return 0;
  int64_t n = static_cast<int64_t>(data.size() + owned.size());
  for (const auto& s : slices) n += std::max<int64_t>(s.length, 0);
  return n;
}

bool Records::operator==(const Records& o) const {
  if (is_null != o.is_null) return false;
  std::string a(data.begin(), data.end()), b(o.data.begin(), o.data.end());
  if (a + owned != b + o.owned || slices.size() != o.slices.size()) return false;
  for (size_t i = 0; i < slices.size(); ++i) {
    const auto &x = slices[i], &y = o.slices[i];
    if (x.fd != y.fd || x.position != y.position || x.length != y.length) return false;
  }
  return true;
}

// ---- Reader ----------------------------------------------------------------

Status Reader::Malformed(const char* what) {
  return Status::Corruption(std::string("malformed Kafka message: ") + what);
}

#define HR_FIXED_READ(Name, T, U)                                  \
  Status Reader::Name(T* v) {                                      \
    HR_RETURN_IF_ERROR(Need(sizeof(U)));                           \
    *v = static_cast<T>(LoadBE<U>(data_.data() + pos_));           \
    pos_ += sizeof(U);                                             \
    return Status::OK();                                           \
  }
HR_FIXED_READ(Int8, int8_t, uint8_t)
HR_FIXED_READ(Int16, int16_t, uint16_t)
HR_FIXED_READ(Int32, int32_t, uint32_t)
HR_FIXED_READ(Int64, int64_t, uint64_t)
HR_FIXED_READ(Uint16, uint16_t, uint16_t)
HR_FIXED_READ(Uint32, uint32_t, uint32_t)
#undef HR_FIXED_READ

Status Reader::Float64(double* v) {
  uint64_t u = 0;
  HR_RETURN_IF_ERROR(Int64(reinterpret_cast<int64_t*>(&u)));
  *v = std::bit_cast<double>(u);
  return Status::OK();
}

Status Reader::Bool(bool* v) {
  int8_t b = 0;
  HR_RETURN_IF_ERROR(Int8(&b));
  *v = b != 0;
  return Status::OK();
}

Status Reader::UVarint(uint32_t* v) {
  uint32_t result = 0;
  for (int shift = 0; shift < 35; shift += 7) {
    HR_RETURN_IF_ERROR(Need(1));
    uint8_t b = data_[pos_++];
    if (shift == 28 && (b & 0xf0) != 0) return Malformed("unsigned varint overflows 32 bits");
    result |= static_cast<uint32_t>(b & 0x7f) << shift;
    if ((b & 0x80) == 0) {
      *v = result;
      return Status::OK();
    }
  }
  return Malformed("unsigned varint longer than 5 bytes");
}

Status Reader::Varint(int32_t* v) {
  uint32_t u = 0;
  HR_RETURN_IF_ERROR(UVarint(&u));
  *v = static_cast<int32_t>((u >> 1) ^ (~(u & 1) + 1));
  return Status::OK();
}

Status Reader::Varlong(int64_t* v) {
  uint64_t result = 0;
  for (int shift = 0; shift < 70; shift += 7) {
    HR_RETURN_IF_ERROR(Need(1));
    uint8_t b = data_[pos_++];
    if (shift == 63 && (b & 0xfe) != 0) return Malformed("varlong overflows 64 bits");
    result |= static_cast<uint64_t>(b & 0x7f) << shift;
    if ((b & 0x80) == 0) {
      *v = static_cast<int64_t>((result >> 1) ^ (~(result & 1) + 1));
      return Status::OK();
    }
  }
  return Malformed("varlong longer than 10 bytes");
}

Status Reader::ReadUuid(Uuid* v) {
  HR_RETURN_IF_ERROR(Need(16));
  std::memcpy(v->bytes.data(), data_.data() + pos_, 16);
  pos_ += 16;
  return Status::OK();
}

// Reads a length prefix: int16 / int32 or compact (uvarint n+1). Sets *len
// to -1 for null. Checks the length against the remaining bytes.
namespace {
Status ReadLength(Reader& r, bool compact, bool wide, int64_t* len) {
  if (compact) {
    uint32_t n = 0;
    HR_RETURN_IF_ERROR(r.UVarint(&n));
    *len = static_cast<int64_t>(n) - 1;
  } else if (wide) {
    int32_t n = 0;
    HR_RETURN_IF_ERROR(r.Int32(&n));
    *len = n;
  } else {
    int16_t n = 0;
    HR_RETURN_IF_ERROR(r.Int16(&n));
    *len = n;
  }
  if (*len < -1) return Reader::Malformed("negative length");
  if (*len > static_cast<int64_t>(r.remaining())) return Reader::Malformed("length beyond end of input");
  return Status::OK();
}
}  // namespace

Status Reader::String(std::string* v, bool compact) {
  int64_t len = 0;
  HR_RETURN_IF_ERROR(ReadLength(*this, compact, false, &len));
  if (len < 0) return Malformed("null in a non-nullable string");
  v->assign(reinterpret_cast<const char*>(data_.data() + pos_), static_cast<size_t>(len));
  pos_ += static_cast<size_t>(len);
  return Status::OK();
}

Status Reader::NullableString(std::optional<std::string>* v, bool compact, bool allow_null) {
  int64_t len = 0;
  HR_RETURN_IF_ERROR(ReadLength(*this, compact, false, &len));
  if (len < 0) {
    if (!allow_null) return Malformed("null in a non-nullable string");
    v->reset();
    return Status::OK();
  }
  v->emplace(reinterpret_cast<const char*>(data_.data() + pos_), static_cast<size_t>(len));
  pos_ += static_cast<size_t>(len);
  return Status::OK();
}

Status Reader::Bytes(std::string* v, bool compact) {
  int64_t len = 0;
  HR_RETURN_IF_ERROR(ReadLength(*this, compact, true, &len));
  if (len < 0) return Malformed("null in non-nullable bytes");
  v->assign(reinterpret_cast<const char*>(data_.data() + pos_), static_cast<size_t>(len));
  pos_ += static_cast<size_t>(len);
  return Status::OK();
}

Status Reader::NullableBytes(std::optional<std::string>* v, bool compact, bool allow_null) {
  int64_t len = 0;
  HR_RETURN_IF_ERROR(ReadLength(*this, compact, true, &len));
  if (len < 0) {
    if (!allow_null) return Malformed("null in non-nullable bytes");
    v->reset();
    return Status::OK();
  }
  v->emplace(reinterpret_cast<const char*>(data_.data() + pos_), static_cast<size_t>(len));
  pos_ += static_cast<size_t>(len);
  return Status::OK();
}

Status Reader::ReadRecords(Records* v, bool compact, bool allow_null) {
  int64_t len = 0;
  HR_RETURN_IF_ERROR(ReadLength(*this, compact, true, &len));
  *v = Records();
  if (len < 0) {
    if (!allow_null) return Malformed("null in non-nullable records");
    v->is_null = true;
    return Status::OK();
  }
  v->data = data_.subspan(pos_, static_cast<size_t>(len));
  pos_ += static_cast<size_t>(len);
  return Status::OK();
}

Status Reader::ArrayLength(int32_t* n, bool compact, size_t min_element_size, bool allow_null) {
  int64_t len = 0;
  if (compact) {
    uint32_t u = 0;
    HR_RETURN_IF_ERROR(UVarint(&u));
    len = static_cast<int64_t>(u) - 1;
  } else {
    int32_t s = 0;
    HR_RETURN_IF_ERROR(Int32(&s));
    len = s;
  }
  if (len < -1) return Malformed("negative array length");
  if (len == -1) {
    if (!allow_null) return Malformed("null in a non-nullable array");
    *n = -1;
    return Status::OK();
  }
  if (static_cast<uint64_t>(len) * std::max<size_t>(min_element_size, 1) > remaining()) {
    return Malformed("array length beyond end of input");
  }
  *n = static_cast<int32_t>(len);
  return Status::OK();
}

Status Reader::Skip(size_t n) {
  HR_RETURN_IF_ERROR(Need(n));
  pos_ += n;
  return Status::OK();
}

Status Reader::Sub(size_t n, Reader* sub) {
  HR_RETURN_IF_ERROR(Need(n));
  *sub = Reader(data_.subspan(pos_, n));
  pos_ += n;
  return Status::OK();
}

// ---- Writer ----------------------------------------------------------------

void Writer::Int16(int16_t v) { StoreBE(*this, static_cast<uint16_t>(v)); }
void Writer::Int32(int32_t v) { StoreBE(*this, static_cast<uint32_t>(v)); }
void Writer::Int64(int64_t v) { StoreBE(*this, static_cast<uint64_t>(v)); }
void Writer::Uint16(uint16_t v) { StoreBE(*this, v); }
void Writer::Uint32(uint32_t v) { StoreBE(*this, v); }
void Writer::Float64(double v) { StoreBE(*this, std::bit_cast<uint64_t>(v)); }

void Writer::UVarint(uint32_t v) {
  uint8_t b[5];
  size_t n = 0;
  while (v >= 0x80) {
    b[n++] = static_cast<uint8_t>(v | 0x80);
    v >>= 7;
  }
  b[n++] = static_cast<uint8_t>(v);
  Raw(b, n);
}

void Writer::Varint(int32_t v) {
  UVarint((static_cast<uint32_t>(v) << 1) ^ static_cast<uint32_t>(v >> 31));
}

void Writer::Varlong(int64_t v) {
  uint64_t u = (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63);
  uint8_t b[10];
  size_t n = 0;
  while (u >= 0x80) {
    b[n++] = static_cast<uint8_t>(u | 0x80);
    u >>= 7;
  }
  b[n++] = static_cast<uint8_t>(u);
  Raw(b, n);
}

void Writer::String(std::string_view v, bool compact) {
  if (!compact && v.size() > 0x7fff) v = v.substr(0, 0x7fff);
  if (compact) UVarint(static_cast<uint32_t>(v.size() + 1)); else Int16(static_cast<int16_t>(v.size()));
  Raw(v.data(), v.size());
}

void Writer::NullableString(const std::optional<std::string>& v, bool compact, bool allow_null) {
  if (v) return String(*v, compact);
  if (!allow_null) return String("", compact);
  if (compact) UVarint(0); else Int16(-1);
}

void Writer::Bytes(std::string_view v, bool compact) {
  if (compact) UVarint(static_cast<uint32_t>(v.size() + 1)); else Int32(static_cast<int32_t>(v.size()));
  Raw(v.data(), v.size());
}

void Writer::NullableBytes(const std::optional<std::string>& v, bool compact, bool allow_null) {
  if (v) return Bytes(*v, compact);
  if (!allow_null) return Bytes("", compact);
  if (compact) UVarint(0); else Int32(-1);
}

void Writer::WriteRecords(const Records& v, bool compact, bool allow_null) {
  if (v.is_null && allow_null) {
    if (compact) UVarint(0); else Int32(-1);
    return;
  }
  int64_t n = v.size();
  if (compact) UVarint(static_cast<uint32_t>(n + 1)); else Int32(static_cast<int32_t>(n));
  if (v.is_null) return;
  if (!v.data.empty()) Raw(v.data.data(), v.data.size());
  if (!v.owned.empty()) Raw(v.owned.data(), v.owned.size());
  for (const auto& s : v.slices) out_.AppendSlice(s);
}

void Writer::ArrayLength(size_t n, bool compact) {
  if (compact) UVarint(static_cast<uint32_t>(n + 1)); else Int32(static_cast<int32_t>(n));
}

void Writer::NullArray(bool compact) {
  if (compact) UVarint(0); else Int32(-1);
}

void Writer::TaggedField(uint32_t tag, const OutputBuffer& value) {
  UVarint(tag);
  UVarint(static_cast<uint32_t>(value.size()));
  for (const auto& c : value.chunks()) Raw(c.bytes.data(), c.bytes.size());
}

}  // namespace headrace::protocol
