#include "log/offset_map.h"

#include <algorithm>
#include <cstring>

namespace headrace {
namespace {

inline uint64_t Mix(uint64_t a, uint64_t b) {
  __uint128_t r = static_cast<__uint128_t>(a) * b;
  return static_cast<uint64_t>(r) ^ static_cast<uint64_t>(r >> 64);
}

inline uint64_t Load64(const char* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}

// A multiply-mix hash over 8-byte words (wyhash-style), seeded.
uint64_t Hash64(std::string_view key, uint64_t seed) {
  constexpr uint64_t k0 = 0xa0761d6478bd642fULL, k1 = 0xe7037ed1a0b428dbULL,
                     k2 = 0x8ebc6af09c88c6e3ULL;
  uint64_t h = seed ^ Mix(seed ^ k0, key.size() ^ k1);
  const char* p = key.data();
  size_t n = key.size();
  while (n >= 8) {
    h = Mix(h ^ Load64(p) ^ k1, k2 ^ h);
    p += 8;
    n -= 8;
  }
  uint64_t tail = 0;
  std::memcpy(&tail, p, n);
  h = Mix(h ^ tail ^ k2, k0 ^ (n + 1));
  return Mix(h ^ k0, h ^ k1);
}

}  // namespace

void HashKey(std::string_view key, uint64_t* h1, uint64_t* h2) {
  *h1 = Hash64(key, 0x243f6a8885a308d3ULL);
  *h2 = Hash64(key, 0x13198a2e03707344ULL);
}

OffsetMap::OffsetMap(int64_t memory_bytes) {
  int64_t n = std::max<int64_t>(16, memory_bytes / kSlotBytes);
  slots_.resize(static_cast<size_t>(n));
  capacity_ = std::max<int64_t>(1, static_cast<int64_t>(static_cast<double>(n) * kLoadFactor));
}

size_t OffsetMap::Find(uint64_t h1, uint64_t h2) const {
  size_t i = static_cast<size_t>(h1 % slots_.size());
  while (slots_[i].offset >= 0 && !(slots_[i].h1 == h1 && slots_[i].h2 == h2))
    i = i + 1 == slots_.size() ? 0 : i + 1;
  return i;  // the load factor keeps an empty slot: the probe ends
}

bool OffsetMap::Put(std::string_view key, int64_t offset) {
  uint64_t h1, h2;
  HashKey(key, &h1, &h2);
  Slot& s = slots_[Find(h1, h2)];
  if (s.offset >= 0) {
    s.offset = std::max(s.offset, offset);
    return true;
  }
  if (size_ >= capacity_) return false;
  s = {h1, h2, offset};
  ++size_;
  return true;
}

int64_t OffsetMap::Get(std::string_view key) const {
  uint64_t h1, h2;
  HashKey(key, &h1, &h2);
  return slots_[Find(h1, h2)].offset;
}

void OffsetMap::Clear() {
  std::fill(slots_.begin(), slots_.end(), Slot{});
  size_ = 0;
}

}  // namespace headrace
