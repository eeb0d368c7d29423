// libFuzzer target: arbitrary bytes as one request frame (header + body, any
// api key and version). Whatever decodes is encoded again, decoded again and
// encoded again; the two encodings must be identical. Crashes, sanitizer
// reports and a mismatch (abort) are findings. Built only with
// HEADRACE_BUILD_FUZZ=ON; run by scripts/fuzz.sh.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "protocol/codec.h"

namespace hp = headrace::protocol;

namespace {

template <typename M>
void CheckStable(const M& first, int16_t version) {
  headrace::OutputBuffer out;
  hp::Writer w(out);
  first.Encode(w, version);
  std::string once = out.Flatten();
  std::vector<uint8_t> copy(once.begin(), once.end());
  hp::Reader r(copy);
  M second;
  if (!second.Decode(r, version).ok() || r.remaining() != 0) abort();
  headrace::OutputBuffer out2;
  hp::Writer w2(out2);
  second.Encode(w2, version);
  if (out2.Flatten() != once) abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<uint8_t> frame(data, data + size);  // the codec wants a mutable frame
  hp::Reader r(frame);
  hp::RequestHeader header;
  if (!hp::DecodeRequestHeader(r, &header).ok()) return 0;
  CheckStable(header, hp::RequestHeaderVersion(header.request_api_key, header.request_api_version));
  const int16_t v = header.request_api_version;
  hp::VisitRequestType(header.request_api_key, [&](auto type) {
    typename decltype(type)::type body;
    if (body.Decode(r, v).ok()) CheckStable(body, v);
  });
  // The same bytes as a response body of that api key, for the other half.
  hp::Reader again(frame);
  (void)again.Skip(8);
  hp::VisitResponseType(header.request_api_key, [&](auto type) {
    typename decltype(type)::type body;
    if (body.Decode(again, v).ok()) CheckStable(body, v);
  });
  return 0;
}
