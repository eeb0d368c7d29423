// The log cleaner's offset map: record key -> the largest offset seen for
// it, in a fixed amount of memory (log.cleaner.dedupe.buffer.size divided
// among the cleaner threads), as Kafka's SkimpyOffsetMap.
//
// Keys are not stored: each slot holds a 128-bit hash of the key and an
// offset (24 bytes). Two keys with the same 128-bit hash would be taken for
// one (the older record of either could then be dropped); at 2^-64 per pair
// of keys that is as unlikely as Kafka's MD5. Open addressing with linear
// probing; the map refuses new keys once `capacity()` (load factor 0.9 of the
// slots) are in use, so a cleaning pass that needs more stops there and the
// rest of the log is left for the next pass.
//
// Threading: not thread-safe; one cleaner thread owns one map.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

namespace headrace {

class OffsetMap {
 public:
  static constexpr int64_t kSlotBytes = 24;
  static constexpr double kLoadFactor = 0.9;

  // A map using at most `memory_bytes` (at least 16 slots).
  explicit OffsetMap(int64_t memory_bytes);

  // Records `offset` for `key`, keeping the larger of it and any offset
  // already there. Returns false (and changes nothing) when the key is new
  // and the map is at capacity.
  bool Put(std::string_view key, int64_t offset);
  // The offset recorded for `key`; -1 when none.
  int64_t Get(std::string_view key) const;
  // Forgets every key.
  void Clear();

  int64_t size() const { return size_; }
  int64_t capacity() const { return capacity_; }
  int64_t slots() const { return static_cast<int64_t>(slots_.size()); }
  // Keys that can still be added.
  int64_t room() const { return capacity_ - size_; }

 private:
  struct Slot {
    uint64_t h1 = 0, h2 = 0;
    int64_t offset = -1;  // -1 = empty
  };
  size_t Find(uint64_t h1, uint64_t h2) const;  // slot of the key or the empty one to use

  std::vector<Slot> slots_;
  int64_t size_ = 0;
  int64_t capacity_ = 0;
};

// The 128-bit key hash (two independently seeded 64-bit hashes).
void HashKey(std::string_view key, uint64_t* h1, uint64_t* h2);

}  // namespace headrace
