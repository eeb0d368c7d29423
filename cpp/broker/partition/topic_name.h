// Topic name rules, as Kafka applies them.
#pragma once

#include <string_view>

#include "headrace/status.h"

namespace headrace::broker {

inline constexpr size_t kMaxTopicNameLength = 249;

// OK for 1..249 characters of [a-zA-Z0-9._-] that are not "." or "..".
// Otherwise a Status mapping to INVALID_TOPIC_EXCEPTION with the reason.
Status ValidateTopicName(std::string_view name);

// Topics the broker itself owns (__consumer_offsets, __transaction_state,
// __share_group_state).
bool IsInternalTopic(std::string_view name);

// What a client may not do to an internal topic (the coordinators own them).
enum class InternalTopicOp { kCreate, kDelete, kCreatePartitions, kProduce, kDeleteRecords };
// OK for any other topic. For an internal one: kCreate TOPIC_ALREADY_EXISTS
// (the broker creates them itself), the others INVALID_TOPIC_EXCEPTION
// ("Cannot append to internal topic", as Kafka answers a Produce).
Status CheckClientOpOnInternalTopic(std::string_view name, InternalTopicOp op);

// Kafka treats '.' and '_' as the same character in metric names, so two
// topics whose names differ only there collide ("a.b" vs "a_b").
bool TopicNamesCollide(std::string_view a, std::string_view b);

}  // namespace headrace::broker
