// libFuzzer target: the codecs on untrusted bytes. The first input byte
// picks the codec (1-4), the rest is handed to Decompress with a 1 MiB bound
// (the broker's bound is larger; the contract is the same). A crash, a
// sanitizer report, an output above the bound, or a stream that decompresses
// but does not come back the same after Compress + Decompress (abort) is a
// finding. Built only with HEADRACE_BUILD_FUZZ=ON; run by scripts/fuzz.sh.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "log/compression.h"

namespace hr = headrace;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const auto codec = static_cast<hr::Compression>(1 + data[0] % 4);
  std::span<const uint8_t> in(data + 1, size - 1);
  constexpr size_t kBound = 1 << 20;
  std::string out;
  hr::Status st = hr::compression::Decompress(codec, in, &out, kBound);
  if (!st.ok()) {
    if (st.code() != hr::StatusCode::kCorruption) abort();
    return 0;
  }
  if (out.size() > kBound) abort();
  std::string packed, back;
  if (!hr::compression::Compress(codec, {reinterpret_cast<const uint8_t*>(out.data()), out.size()},
                                 &packed)
           .ok())
    abort();
  if (!hr::compression::Decompress(codec, {reinterpret_cast<const uint8_t*>(packed.data()),
                                           packed.size()},
                                   &back, kBound)
           .ok() ||
      back != out)
    abort();
  return 0;
}
