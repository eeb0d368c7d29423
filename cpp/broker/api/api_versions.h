#pragma once

#include "broker/api/handler.h"

namespace headrace::broker {

// Answers an ApiVersions request whose version we do not support with a v0
// response carrying UNSUPPORTED_VERSION and our supported ranges.
void ReplyUnsupportedApiVersions(const Request& req);

}  // namespace headrace::broker
