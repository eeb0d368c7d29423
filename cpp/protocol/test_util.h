// Helpers shared by the protocol tests.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/output_buffer.h"
#include "protocol/wire.h"
#include "headrace/status.h"

namespace headrace::protocol::testing {

inline std::vector<uint8_t> Bytes(const std::string& s) { return {s.begin(), s.end()}; }

// Encodes `m` at `version` into a flat byte string.
template <typename M>
std::string EncodeToString(const M& m, int16_t version) {
  OutputBuffer out;
  Writer w(out);
  m.Encode(w, version);
  return out.Flatten();
}

// "0a1b..." -> bytes. Whitespace is ignored.
std::vector<uint8_t> FromHex(const std::string& hex);
std::string ToHex(const std::string& bytes);

}  // namespace headrace::protocol::testing

namespace headrace::protocol::testing {

// Decodes a whole request frame (header + body, any api key/version) and
// encodes it again. Fails with the decode Status, or Corruption if bytes are
// left over after the body. `frame` is modified only if a decoder would.
Result<std::string> ReencodeRequest(std::span<uint8_t> frame);

}  // namespace headrace::protocol::testing

namespace headrace::protocol::testing {
// The hex text of testdata/<name>.hex ("" if missing).
std::string ReadTestdata(const std::string& name);
}  // namespace headrace::protocol::testing
