#include "broker/base/kafka_error.h"

#include <gtest/gtest.h>

namespace headrace::broker {
namespace {

TEST(KafkaErrorTest, WireNumbersMatchTheProtocolGuide) {
  EXPECT_EQ(Code(KafkaError::kUnknownServerError), -1);
  EXPECT_EQ(Code(KafkaError::kNone), 0);
  EXPECT_EQ(Code(KafkaError::kOffsetOutOfRange), 1);
  EXPECT_EQ(Code(KafkaError::kCorruptMessage), 2);
  EXPECT_EQ(Code(KafkaError::kUnknownTopicOrPartition), 3);
  EXPECT_EQ(Code(KafkaError::kNotLeaderOrFollower), 6);
  EXPECT_EQ(Code(KafkaError::kMessageTooLarge), 10);
  EXPECT_EQ(Code(KafkaError::kInvalidTopicException), 17);
  EXPECT_EQ(Code(KafkaError::kRecordListTooLarge), 18);
  EXPECT_EQ(Code(KafkaError::kInvalidRequiredAcks), 21);
  EXPECT_EQ(Code(KafkaError::kInvalidTimestamp), 32);
  EXPECT_EQ(Code(KafkaError::kUnsupportedVersion), 35);
  EXPECT_EQ(Code(KafkaError::kTopicAlreadyExists), 36);
  EXPECT_EQ(Code(KafkaError::kInvalidPartitions), 37);
  EXPECT_EQ(Code(KafkaError::kInvalidReplicationFactor), 38);
  EXPECT_EQ(Code(KafkaError::kInvalidConfig), 40);
  EXPECT_EQ(Code(KafkaError::kInvalidRequest), 42);
  EXPECT_EQ(Code(KafkaError::kPolicyViolation), 44);
  EXPECT_EQ(Code(KafkaError::kKafkaStorageError), 56);
  EXPECT_EQ(Code(KafkaError::kInvalidRecord), 87);
  EXPECT_EQ(Code(KafkaError::kUnknownTopicId), 100);
  EXPECT_EQ(Code(KafkaError::kInconsistentTopicId), 103);
  EXPECT_EQ(Code(KafkaError::kInvalidRecordState), 121);
  EXPECT_EQ(Code(KafkaError::kShareSessionNotFound), 122);
  EXPECT_EQ(Code(KafkaError::kInvalidShareSessionEpoch), 123);
  EXPECT_EQ(Code(KafkaError::kFencedStateEpoch), 124);
  EXPECT_EQ(Code(KafkaError::kShareSessionLimitReached), 133);
}

TEST(KafkaErrorTest, ShareGroupErrorsHaveKafkasNames) {
  EXPECT_STREQ(KafkaErrorName(KafkaError::kInvalidRecordState), "INVALID_RECORD_STATE");
  EXPECT_STREQ(KafkaErrorName(KafkaError::kShareSessionNotFound), "SHARE_SESSION_NOT_FOUND");
  EXPECT_STREQ(KafkaErrorName(KafkaError::kInvalidShareSessionEpoch), "INVALID_SHARE_SESSION_EPOCH");
  EXPECT_STREQ(KafkaErrorName(KafkaError::kFencedStateEpoch), "FENCED_STATE_EPOCH");
  EXPECT_STREQ(KafkaErrorName(KafkaError::kShareSessionLimitReached), "SHARE_SESSION_LIMIT_REACHED");
}

TEST(KafkaErrorTest, PlainStatusesMapByCode) {
  EXPECT_EQ(ToKafkaError(Status::OK()), KafkaError::kNone);
  EXPECT_EQ(ToKafkaError(Status::NotFound("x")), KafkaError::kUnknownTopicOrPartition);
  EXPECT_EQ(ToKafkaError(Status::Corruption("x")), KafkaError::kCorruptMessage);
  EXPECT_EQ(ToKafkaError(Status::InvalidArgument("x")), KafkaError::kInvalidRequest);
  EXPECT_EQ(ToKafkaError(Status::IOError("x")), KafkaError::kKafkaStorageError);
  EXPECT_EQ(ToKafkaError(Status::OutOfRange("x")), KafkaError::kOffsetOutOfRange);
  EXPECT_EQ(ToKafkaError(Status::AlreadyExists("x")), KafkaError::kTopicAlreadyExists);
  EXPECT_EQ(ToKafkaError(Status::TooLarge("x")), KafkaError::kMessageTooLarge);
  EXPECT_EQ(ToKafkaError(Status::Closed("x")), KafkaError::kNotLeaderOrFollower);
  EXPECT_EQ(ToKafkaError(Status::Unsupported("x")), KafkaError::kUnsupportedVersion);
}

TEST(KafkaErrorTest, KafkaStatusCarriesTheExactCodeAndAGenericOne) {
  Status s = KafkaStatus(KafkaError::kInvalidPartitions, "Number of partitions must be larger than 0.");
  EXPECT_EQ(ToKafkaError(s), KafkaError::kInvalidPartitions);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "Number of partitions must be larger than 0.");
  EXPECT_EQ(KafkaStatus(KafkaError::kUnknownTopicId, "x").code(), StatusCode::kNotFound);
  EXPECT_EQ(ToKafkaError(KafkaStatus(KafkaError::kUnknownServerError, "x")),
            KafkaError::kUnknownServerError);
  EXPECT_STREQ(KafkaErrorName(KafkaError::kInvalidConfig), "INVALID_CONFIG");
}

}  // namespace
}  // namespace headrace::broker
