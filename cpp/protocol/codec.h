// The protocol codec's front door for handlers: the generated messages plus
// request-header reading and response framing. No I/O.
//
//   #include "protocol/codec.h"
//   RequestHeader h;
//   Reader r(frame);
//   Status st = DecodeRequestHeader(r, &h);   // r now points at the body
//   ProduceRequest req;  HR_RETURN_IF_ERROR(req.Decode(r, h.request_api_version));
//   ProduceResponse resp; ...
//   OutputBuffer out;  EncodeResponse(out, h.correlation_id, h.request_api_version, resp);
//
// See docs/protocol-codec.md.
#pragma once

#include <cstdint>

#include "common/output_buffer.h"
#include "headrace/status.h"
#include "protocol/messages.h"
#include "protocol/wire.h"

namespace headrace::protocol {

// Reads the request header at the start of `r` and leaves `r` at the body.
// Always fills request_api_key, request_api_version and correlation_id when
// the frame has at least 8 bytes, even when it then fails, so the broker can
// answer an unknown key/version with UNSUPPORTED_VERSION.
// Returns:
//  - OK: a known (api key, version); the header is fully decoded with the
//    header version RequestHeaderVersion() gives.
//  - Unsupported: unknown api key or version outside the schema's range; the
//    client id was read if it was there (header v1 layout); the body is not
//    to be decoded.
//  - Corruption: fewer than 8 bytes, or a malformed header.
Status DecodeRequestHeader(Reader& r, RequestHeader* header);

// Writes a whole response (header + body) for `Response` at `version`, with
// the header version ResponseHeaderVersion() gives (v0 for ApiVersions).
template <typename Response>
void EncodeResponse(OutputBuffer& out, int32_t correlation_id, int16_t version,
                    const Response& body) {
  Writer w(out);
  ResponseHeader h;
  h.correlation_id = correlation_id;
  h.Encode(w, ResponseHeaderVersion(Response::kApiKey, version));
  body.Encode(w, version);
}

// Writes a whole request (header + body); for tests and the replica fetcher.
template <typename Request>
void EncodeRequest(OutputBuffer& out, int32_t correlation_id, std::string_view client_id,
                   int16_t version, const Request& body) {
  Writer w(out);
  RequestHeader h;
  h.request_api_key = Request::kApiKey;
  h.request_api_version = version;
  h.correlation_id = correlation_id;
  h.client_id = std::string(client_id);
  h.Encode(w, RequestHeaderVersion(Request::kApiKey, version));
  body.Encode(w, version);
}

}  // namespace headrace::protocol
