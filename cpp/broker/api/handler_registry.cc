// The list of Kafka APIs this broker implements. Adding an API = adding its
// handler file and one line here.
#include <algorithm>
#include <array>

#include "broker/api/handler.h"

namespace headrace::broker {

extern const ApiHandler kProduceHandler;
extern const ApiHandler kFetchHandler;
extern const ApiHandler kListOffsetsHandler;
extern const ApiHandler kMetadataHandler;
extern const ApiHandler kApiVersionsHandler;

namespace {

// Sorted by API key.
constexpr std::array kHandlers = {
    &kProduceHandler,      // 0
    &kFetchHandler,        // 1
    &kListOffsetsHandler,  // 2
    &kMetadataHandler,     // 3
    &kApiVersionsHandler,
};

}  // namespace

std::span<const ApiHandler* const> AllHandlers() { return kHandlers; }

const ApiHandler* FindHandler(int16_t api_key) {
  for (const ApiHandler* h : kHandlers)
    if (h->api_key == api_key) return h;
  return nullptr;
}

}  // namespace headrace::broker
