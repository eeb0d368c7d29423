#include "protocol/codec.h"

#include <string>

namespace headrace::protocol {

Status DecodeRequestHeader(Reader& r, RequestHeader* header) {
  *header = RequestHeader();
  if (r.remaining() < 8) return Reader::Malformed("request shorter than its header");
  Reader peek = r;  // Reader is a (span, position) pair: copying it rewinds nothing
  HR_RETURN_IF_ERROR(peek.Int16(&header->request_api_key));
  HR_RETURN_IF_ERROR(peek.Int16(&header->request_api_version));
  HR_RETURN_IF_ERROR(peek.Int32(&header->correlation_id));
  const ApiInfo* api = FindApi(header->request_api_key);
  const bool known = api != nullptr && header->request_api_version >= api->min_version &&
                     header->request_api_version <= api->max_version;
  if (!known) {
    // Best effort: the header v1 client id, then stop.
    std::optional<std::string> client_id;
    if (peek.NullableString(&client_id, false).ok()) header->client_id = std::move(client_id);
    r = peek;
    return Status::Unsupported("unsupported api key " + std::to_string(header->request_api_key) +
                               " version " + std::to_string(header->request_api_version));
  }
  const int16_t hv = RequestHeaderVersion(header->request_api_key, header->request_api_version);
  RequestHeader full;
  Status st = full.Decode(r, hv);
  if (!st.ok()) return st;  // *header keeps key, version and correlation id
  *header = std::move(full);
  return Status::OK();
}

}  // namespace headrace::protocol
