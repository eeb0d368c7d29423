#include "common/uuid.h"

#include <sys/random.h>

#include <cerrno>
#include <cstdlib>
#include <cstdio>

namespace headrace {
namespace {

constexpr char kAlphabet[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

int DecodeChar(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '-') return 62;
  if (c == '_') return 63;
  return -1;
}

// 16 bytes from the kernel's CSPRNG (getrandom(2), the urandom pool, which
// blocks only before the pool is first initialised at boot). A failure
// other than EINTR cannot happen for 16 bytes on Linux >= 3.17; if it does,
// ids must not repeat, so the process stops.
void FillRandom(uint8_t* out, size_t n) {
  size_t done = 0;
  while (done < n) {
    ssize_t got = ::getrandom(out + done, n - done, 0);
    if (got < 0) {
      if (errno == EINTR) continue;
      std::perror("headrace: getrandom");
      std::abort();
    }
    done += static_cast<size_t>(got);
  }
}

}  // namespace

Uuid Uuid::Random() {
  for (;;) {
    Uuid u;
    FillRandom(u.bytes.data(), u.bytes.size());
    u.bytes[6] = (u.bytes[6] & 0x0f) | 0x40;  // version 4
    u.bytes[8] = (u.bytes[8] & 0x3f) | 0x80;  // IETF variant
    if (!u.is_zero() && u.ToBase64()[0] != '-') return u;
  }
}

const Uuid& Uuid::Zero() {
  static const Uuid zero;
  return zero;
}

bool Uuid::is_zero() const {
  for (uint8_t b : bytes) {
    if (b != 0) return false;
  }
  return true;
}

std::string Uuid::ToBase64() const {
  std::string out;
  uint32_t acc = 0;
  int bits = 0;
  for (uint8_t b : bytes) {
    acc = (acc << 8) | b;
    bits += 8;
    while (bits >= 6) {
      bits -= 6;
      out.push_back(kAlphabet[(acc >> bits) & 0x3f]);
    }
  }
  if (bits > 0) out.push_back(kAlphabet[(acc << (6 - bits)) & 0x3f]);
  return out;  // 128 bits -> 21 full chars + 1 char of 2 bits = 22
}

std::string Uuid::ToHex() const {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (uint8_t b : bytes) {
    out.push_back(kHex[b >> 4]);
    out.push_back(kHex[b & 0xf]);
  }
  return out;
}

Result<Uuid> Uuid::FromBase64(std::string_view text) {
  if (text.size() != 22) {
    return Status::InvalidArgument("uuid: expected 22 base64 characters, got " +
                                   std::to_string(text.size()));
  }
  Uuid u;
  uint32_t acc = 0;
  int bits = 0;
  size_t n = 0;
  for (char c : text) {
    int v = DecodeChar(c);
    if (v < 0) return Status::InvalidArgument("uuid: invalid base64 character");
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      if (n < 16) u.bytes[n++] = static_cast<uint8_t>(acc >> bits);
    }
  }
  if ((acc & ((1u << bits) - 1)) != 0) {
    return Status::InvalidArgument("uuid: non-zero trailing bits");
  }
  return u;
}

uint64_t Uuid::most_significant() const {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v = (v << 8) | bytes[i];
  return v;
}

uint64_t Uuid::least_significant() const {
  uint64_t v = 0;
  for (int i = 8; i < 16; ++i) v = (v << 8) | bytes[i];
  return v;
}

Uuid Uuid::FromHalves(uint64_t msb, uint64_t lsb) {
  Uuid u;
  for (int i = 0; i < 8; ++i) {
    u.bytes[i] = static_cast<uint8_t>(msb >> (56 - 8 * i));
    u.bytes[8 + i] = static_cast<uint8_t>(lsb >> (56 - 8 * i));
  }
  return u;
}

}  // namespace headrace
