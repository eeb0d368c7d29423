// Base64 (RFC 4648) as SASL needs it: the standard alphabet with padding
// for SCRAM's salts, nonces and proofs and for the credential strings, and
// the URL-safe alphabet without padding for JWTs and JWKs.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace headrace::broker::sasl {

std::string Base64Encode(std::string_view bytes);
// Standard alphabet; padding required (length a multiple of 4). nullopt:
// not valid base64.
std::optional<std::string> Base64Decode(std::string_view text);
// URL-safe alphabet ('-', '_'), padding optional. nullopt: not valid.
std::optional<std::string> Base64UrlDecode(std::string_view text);

}  // namespace headrace::broker::sasl
