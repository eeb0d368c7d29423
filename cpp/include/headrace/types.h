// Strong types for the numbers that must never be mixed up: absolute
// offsets, offsets relative to a segment base, byte positions in a file,
// millisecond timestamps and leader epochs.
#pragma once

#include <compare>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>

namespace headrace {

// A named integer. Arithmetic with its own kind and with plain integers is
// explicit through value(); comparisons are allowed.
template <typename Tag, typename Rep>
class StrongInt {
 public:
  using rep = Rep;
  constexpr StrongInt() = default;
  constexpr explicit StrongInt(Rep v) : v_(v) {}
  constexpr Rep value() const { return v_; }
  constexpr auto operator<=>(const StrongInt&) const = default;
  constexpr StrongInt operator+(Rep d) const { return StrongInt(v_ + d); }
  constexpr StrongInt operator-(Rep d) const { return StrongInt(v_ - d); }
  constexpr Rep operator-(StrongInt o) const { return v_ - o.v_; }
  constexpr StrongInt& operator+=(Rep d) { v_ += d; return *this; }
  static constexpr StrongInt max() { return StrongInt(std::numeric_limits<Rep>::max()); }
  static constexpr StrongInt min() { return StrongInt(std::numeric_limits<Rep>::min()); }

 private:
  Rep v_{};
};

struct OffsetTag {};
struct RelativeOffsetTag {};
struct FilePositionTag {};
struct TimestampTag {};
struct LeaderEpochTag {};

// Absolute offset of a record in a partition.
using Offset = StrongInt<OffsetTag, int64_t>;
// Offset minus the segment's base offset; what the offset index stores.
using RelativeOffset = StrongInt<RelativeOffsetTag, int32_t>;
// Byte position inside one segment file.
using FilePosition = StrongInt<FilePositionTag, int64_t>;
// Milliseconds since the Unix epoch; -1 means "no timestamp".
using TimestampMs = StrongInt<TimestampTag, int64_t>;
// Leader epoch of a partition (for replication); -1 means unknown.
using LeaderEpoch = StrongInt<LeaderEpochTag, int32_t>;

inline constexpr TimestampMs kNoTimestamp{-1};

// A contiguous byte range of an open file. `keepalive` owns whatever keeps
// `fd` open (the segment); the slice stays valid while a copy of it lives,
// even if the segment is deleted by retention meanwhile.
struct FileSlice {
  int fd = -1;
  FilePosition position{0};
  int64_t length = 0;
  std::shared_ptr<const void> keepalive;
};

}  // namespace headrace

template <typename Tag, typename Rep>
struct std::hash<headrace::StrongInt<Tag, Rep>> {
  size_t operator()(headrace::StrongInt<Tag, Rep> v) const noexcept {
    return std::hash<Rep>()(v.value());
  }
};
