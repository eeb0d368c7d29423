#include "broker/coordinator/base/group_partition.h"

#include <limits>

namespace headrace::broker::group {
namespace {

constexpr uint32_t kReplacement = 0xFFFD;

// Decodes the code point starting at `utf8[*i]` and advances *i past it; a
// malformed sequence yields U+FFFD and advances by one byte.
uint32_t NextCodePoint(std::string_view utf8, size_t* i) {
  const auto byte = [&](size_t k) { return static_cast<uint8_t>(utf8[k]); };
  const uint8_t b0 = byte(*i);
  if (b0 < 0x80) {
    ++*i;
    return b0;
  }
  int len = 0;
  uint32_t cp = 0;
  uint32_t min = 0;
  if ((b0 & 0xE0) == 0xC0) {
    len = 2, cp = b0 & 0x1F, min = 0x80;
  } else if ((b0 & 0xF0) == 0xE0) {
    len = 3, cp = b0 & 0x0F, min = 0x800;
  } else if ((b0 & 0xF8) == 0xF0) {
    len = 4, cp = b0 & 0x07, min = 0x10000;
  } else {
    ++*i;
    return kReplacement;
  }
  if (*i + len > utf8.size()) {
    ++*i;
    return kReplacement;
  }
  for (int k = 1; k < len; ++k) {
    const uint8_t b = byte(*i + k);
    if ((b & 0xC0) != 0x80) {
      ++*i;
      return kReplacement;
    }
    cp = (cp << 6) | (b & 0x3F);
  }
  // Overlong forms, surrogates and values past U+10FFFF are malformed.
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
    ++*i;
    return kReplacement;
  }
  *i += len;
  return cp;
}

}  // namespace

int32_t JavaStringHashCode(std::string_view utf8) {
  uint32_t h = 0;  // unsigned: wraps exactly like Java's int arithmetic
  for (size_t i = 0; i < utf8.size();) {
    const uint32_t cp = NextCodePoint(utf8, &i);
    if (cp >= 0x10000) {  // two UTF-16 code units
      const uint32_t v = cp - 0x10000;
      h = 31 * h + (0xD800 + (v >> 10));
      h = 31 * h + (0xDC00 + (v & 0x3FF));
    } else {
      h = 31 * h + cp;
    }
  }
  return static_cast<int32_t>(h);
}

int32_t GroupPartition(std::string_view group_id, int32_t partitions) {
  const int32_t h = JavaStringHashCode(group_id);
  const int32_t a = h == std::numeric_limits<int32_t>::min() ? 0 : (h < 0 ? -h : h);
  return a % partitions;
}

}  // namespace headrace::broker::group
