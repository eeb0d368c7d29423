// Kafka's Uuid: 16 bytes, big-endian on the wire (the codec reads and writes
// `bytes`), used for topic ids (KIP-516) and the cluster id. The one Uuid type
// of the project: the codec and the broker share it. Its text form is URL-safe base64 without padding (22 chars),
// the way Kafka tools print ids.
#pragma once

#include <array>
#include <compare>
#include <cstdint>
#include <string>
#include <string_view>

#include "headrace/status.h"

namespace headrace {

struct Uuid {
  std::array<uint8_t, 16> bytes{};

  // A random version-4 Uuid that is never zero and whose base64 form never
  // starts with '-' (so it cannot be mistaken for a command-line flag).
  static Uuid Random();
  static const Uuid& Zero();  // Kafka's ZERO_UUID: "no id"
  bool is_zero() const;

  std::string ToBase64() const;  // 22 chars, URL-safe, no padding
  std::string ToHex() const;     // 32 lowercase hex digits
  // Errors: InvalidArgument for anything but 22 URL-safe base64 chars that
  // decode to 16 bytes.
  static Result<Uuid> FromBase64(std::string_view text);

  // Big-endian halves, as Kafka puts them on the wire.
  uint64_t most_significant() const;
  uint64_t least_significant() const;
  static Uuid FromHalves(uint64_t msb, uint64_t lsb);

  auto operator<=>(const Uuid&) const = default;
};

struct UuidHash {
  size_t operator()(const Uuid& u) const noexcept {
    return static_cast<size_t>(u.most_significant() ^ (u.least_significant() * 31));
  }
};

}  // namespace headrace
