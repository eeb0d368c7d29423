#include "protocol/test_util.h"

#include "protocol/codec.h"

#include <cctype>

namespace headrace::protocol::testing {

std::vector<uint8_t> FromHex(const std::string& hex) {
  std::vector<uint8_t> out;
  int hi = -1;
  for (char c : hex) {
    if (std::isspace(static_cast<unsigned char>(c))) continue;
    int v = std::isdigit(static_cast<unsigned char>(c)) ? c - '0' : std::tolower(c) - 'a' + 10;
    if (hi < 0) {
      hi = v;
    } else {
      out.push_back(static_cast<uint8_t>(hi * 16 + v));
      hi = -1;
    }
  }
  return out;
}

std::string ToHex(const std::string& bytes) {
  static const char* d = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    out.push_back(d[c >> 4]);
    out.push_back(d[c & 15]);
  }
  return out;
}

}  // namespace headrace::protocol::testing

namespace headrace::protocol::testing {

Result<std::string> ReencodeRequest(std::span<uint8_t> frame) {
  Reader r(frame);
  RequestHeader h;
  HR_RETURN_IF_ERROR(DecodeRequestHeader(r, &h));
  const int16_t v = h.request_api_version;
  OutputBuffer out;
  Writer w(out);
  h.Encode(w, RequestHeaderVersion(h.request_api_key, v));
  Status st;
  VisitRequestType(h.request_api_key, [&](auto type) {
    typename decltype(type)::type body;
    st = body.Decode(r, v);
    if (st.ok() && r.remaining() != 0) st = Status::Corruption("trailing bytes after body");
    if (st.ok()) body.Encode(w, v);
  });
  if (!st.ok()) return st;
  return out.Flatten();
}

}  // namespace headrace::protocol::testing

#include <fstream>
#include <iterator>

namespace headrace::protocol::testing {

std::string ReadTestdata(const std::string& name) {
  std::ifstream in(std::string(HR_PROTOCOL_TESTDATA) + "/" + name + ".hex");
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

}  // namespace headrace::protocol::testing
