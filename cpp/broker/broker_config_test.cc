#include "broker/broker_config.h"

#include <gtest/gtest.h>

namespace headrace::broker {
namespace {

TEST(BrokerConfigTest, DefaultsMatchTheDocumentation) {
  BrokerConfig c;
  EXPECT_EQ(c.node_id, 0);
  ASSERT_EQ(c.listeners.size(), 1u);
  EXPECT_EQ(c.listeners[0].ToString(), "PLAINTEXT://127.0.0.1:9092");
  EXPECT_EQ(c.effective_advertised_host(), "127.0.0.1");
  EXPECT_EQ(c.effective_advertised_port(), 9092);
  EXPECT_TRUE(c.auto_create_topics_enable);
  EXPECT_EQ(c.num_partitions, 1);
  EXPECT_EQ(c.default_replication_factor, 1);
  EXPECT_EQ(c.socket_request_max_bytes, 104857600);
  EXPECT_EQ(c.socket_send_buffer_bytes, -1);
  EXPECT_EQ(c.socket_receive_buffer_bytes, -1);
  EXPECT_EQ(c.log_retention_check_interval_ms, 300000);
  EXPECT_TRUE(c.acks_all_fsync);
  EXPECT_TRUE(c.Validate().ok());
}

TEST(BrokerConfigTest, SetsKafkaPropertyNames) {
  BrokerConfig c;
  ASSERT_TRUE(c.SetAll({{"node.id", "3"},
                        {"listeners", "PLAINTEXT://0.0.0.0:19092"},
                        {"advertised.listeners", "PLAINTEXT://broker1:29092"},
                        {"log.dirs", "/var/lib/headrace"},
                        {"num.partitions", "6"},
                        {"auto.create.topics.enable", "false"},
                        {"log.retention.hours", "1"},
                        {"log.segment.bytes", "1048576"},
                        {"log.message.timestamp.type", "LogAppendTime"},
                        {"headrace.group.commit.linger.us", "200"},
                        {"socket.send.buffer.bytes", "16777216"},
                        {"socket.receive.buffer.bytes", "1048576"}})
                  .ok());
  EXPECT_EQ(c.node_id, 3);
  ASSERT_EQ(c.listeners.size(), 1u);
  EXPECT_EQ(c.listeners[0].host, "0.0.0.0");
  EXPECT_EQ(c.listeners[0].port, 19092);
  EXPECT_EQ(c.effective_advertised_host(), "broker1");
  EXPECT_EQ(c.effective_advertised_port(), 29092);
  EXPECT_EQ(c.data_dir, "/var/lib/headrace");
  EXPECT_EQ(c.num_partitions, 6);
  EXPECT_FALSE(c.auto_create_topics_enable);
  EXPECT_EQ(c.log_defaults.retention_ms, 3600000);
  EXPECT_EQ(c.log_defaults.segment_bytes, 1048576);
  EXPECT_EQ(c.log_defaults.timestamp_type, TimestampType::kLogAppendTime);
  EXPECT_EQ(c.group_commit_linger_us, 200);
  EXPECT_EQ(c.socket_send_buffer_bytes, 16777216);
  EXPECT_EQ(c.socket_receive_buffer_bytes, 1048576);

  TopicDefaults d = c.topic_defaults();
  EXPECT_TRUE(d.static_keys.count("retention.ms"));
  EXPECT_TRUE(d.static_keys.count("segment.bytes"));
  EXPECT_FALSE(d.static_keys.count("flush.ms"));
}

TEST(BrokerConfigTest, RetentionMsWinsOverHours) {
  BrokerConfig c;
  ASSERT_TRUE(c.SetAll({{"log.retention.hours", "5"}, {"log.retention.ms", "1234"}}).ok());
  EXPECT_EQ(c.log_defaults.retention_ms, 1234);
}

TEST(BrokerConfigTest, ErrorsNameTheKey) {
  BrokerConfig c;
  Status s = c.Set("num.partitions", "0");
  EXPECT_EQ(s.message(), "num.partitions: must be an integer between 1 and 2147483647");
  s = c.Set("log.retention.ms", "-5");
  EXPECT_EQ(s.message(), "log.retention.ms: must be an integer >= -1");
  s = c.Set("auto.create.topics.enable", "yes");
  EXPECT_EQ(s.message(), "auto.create.topics.enable: must be true or false");
  EXPECT_EQ(c.Set("socket.send.buffer.bytes", "-2").message(),
            "socket.send.buffer.bytes: must be an integer between -1 and 2147483647");
  EXPECT_EQ(c.Set("bogus.key", "1").code(), StatusCode::kNotFound);
  std::set<std::string> ignored;
  EXPECT_TRUE(c.SetAll({{"bogus.key", "1"}}, &ignored).ok());
  EXPECT_EQ(ignored, std::set<std::string>{"bogus.key"});
}

}  // namespace
}  // namespace headrace::broker
