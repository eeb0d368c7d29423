// Which partition of __consumer_offsets holds a group: Kafka's rule,
// abs(groupId.hashCode()) % partitions, where hashCode is Java's
// String.hashCode (h = 31 * h + c over the UTF-16 code units, in 32-bit
// two's complement arithmetic) and abs is Kafka's Utils.abs
// (Integer.MIN_VALUE maps to 0). A client, a tool or another broker that
// computes the partition the Kafka way finds the same one.
#pragma once

#include <cstdint>
#include <string_view>

namespace headrace::broker::group {

// Java's String.hashCode of the string whose UTF-8 encoding is `utf8` (group
// ids arrive as UTF-8 on the wire; Java decodes them into UTF-16 first).
// A code point above U+FFFF counts as its two surrogates. Malformed UTF-8
// (which Java's decoder replaces) counts each offending byte as U+FFFD.
int32_t JavaStringHashCode(std::string_view utf8);

// abs(JavaStringHashCode(group_id)) % partitions (Kafka's
// GroupMetadataManager.partitionFor). REQUIRES: partitions > 0.
int32_t GroupPartition(std::string_view group_id, int32_t partitions);

}  // namespace headrace::broker::group
