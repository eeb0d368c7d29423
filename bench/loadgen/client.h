// librdkafka client construction and the payload layout the load generator
// uses to carry send timestamps from producer to consumer.
#pragma once

#include <librdkafka/rdkafka.h>

#include <cstdint>
#include <cstring>
#include <string>

#include "options.h"

namespace headrace::loadgen {

// Payload: bytes [0, 8) the send time (NowNs(), host order), [8, 12) kMagic;
// the rest is filler. Values shorter than kStampBytes carry no timestamp.
inline constexpr char kMagic[4] = {'H', 'R', 'L', 'G'};
inline constexpr int kStampBytes = 12;

inline void StampPayload(char* payload, int size, uint64_t now_ns) {
  if (size < kStampBytes) return;
  std::memcpy(payload, &now_ns, 8);
  std::memcpy(payload + 8, kMagic, 4);
}

// The send time carried by `payload`, or 0 if it carries none.
inline uint64_t PayloadStamp(const void* payload, size_t size) {
  if (payload == nullptr || size < static_cast<size_t>(kStampBytes)) return 0;
  const char* p = static_cast<const char*>(payload);
  if (std::memcmp(p + 8, kMagic, 4) != 0) return 0;
  uint64_t ns;
  std::memcpy(&ns, p, 8);
  return ns;
}

// A producer configured from `o` (acks, linger, batch size, compression,
// large local queues, then every --pset), with `dr_cb` as delivery report
// callback and `opaque` passed to it. Returns null and fills *error on
// failure.
rd_kafka_t* NewProducer(const Options& o, void (*dr_cb)(rd_kafka_t*, const rd_kafka_message_t*, void*),
                        void* opaque, std::string* error);

// A consumer (partitions are assigned explicitly: no group membership, no
// offsets committed), partition EOF events on, then every --cset. Returns
// null and fills *error on failure.
rd_kafka_t* NewConsumer(const Options& o, std::string* error);

}  // namespace headrace::loadgen
