#include "broker/partition/topic_name.h"

#include <string>

#include "broker/base/kafka_error.h"

namespace headrace::broker {

Status ValidateTopicName(std::string_view name) {
  auto invalid = [&](const std::string& why) {
    return KafkaStatus(KafkaError::kInvalidTopicException,
                       "Topic name \"" + std::string(name) + "\" is illegal: " + why);
  };
  if (name.empty()) return invalid("it is empty");
  if (name == "." || name == "..") return invalid("it cannot be \".\" or \"..\"");
  if (name.size() > kMaxTopicNameLength) {
    return invalid("it is longer than " + std::to_string(kMaxTopicNameLength) + " characters");
  }
  for (char c : name) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '_' || c == '-';
    if (!ok) return invalid("it contains characters other than ASCII alphanumerics, '.', '_' and '-'");
  }
  return Status::OK();
}

bool IsInternalTopic(std::string_view name) {
  return name == "__consumer_offsets" || name == "__transaction_state" ||
         name == "__share_group_state";
}

Status CheckClientOpOnInternalTopic(std::string_view name, InternalTopicOp op) {
  if (!IsInternalTopic(name)) return Status::OK();
  const std::string topic(name);
  switch (op) {
    case InternalTopicOp::kCreate:
      return KafkaStatus(KafkaError::kTopicAlreadyExists,
                         "Topic '" + topic + "' is an internal topic the broker creates itself.");
    case InternalTopicOp::kDelete:
      return KafkaStatus(KafkaError::kInvalidTopicException,
                         "Cannot delete internal topic " + topic + ".");
    case InternalTopicOp::kCreatePartitions:
      return KafkaStatus(KafkaError::kInvalidTopicException,
                         "Cannot add partitions to internal topic " + topic + ".");
    case InternalTopicOp::kDeleteRecords:
      return KafkaStatus(KafkaError::kInvalidTopicException,
                         "Cannot delete records of internal topic " + topic);
    case InternalTopicOp::kProduce:
      return KafkaStatus(KafkaError::kInvalidTopicException,
                         "Cannot append to internal topic " + topic);
  }
  return Status::OK();
}

bool TopicNamesCollide(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    char x = a[i] == '.' ? '_' : a[i];
    char y = b[i] == '.' ? '_' : b[i];
    if (x != y) return false;
  }
  return true;
}

}  // namespace headrace::broker
