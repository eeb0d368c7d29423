#include "broker/cluster/cluster_view.h"

#include <gtest/gtest.h>

namespace headrace::broker {
namespace {

const char* kState = R"({"cluster_id": "c1", "controller_id": 2, "controller_epoch": 7,
  "broker_epoch": 4294967301,
  "brokers": [{"id": 3, "host": "h3", "port": 9093, "rack": "r1", "epoch": 4294967301},
              {"id": 2, "host": "h2", "port": 9092, "rack": null}],
  "topics": [{"name": "t", "id": "AAAAAAAAAAAAAAAAAAAAAQ", "configs": {"min.insync.replicas": "2"},
              "partitions": [{"partition": 0, "leader": 2, "leader_epoch": 4,
                              "replicas": [2, 3], "isr": [2]},
                             {"partition": 1, "leader": -1, "leader_epoch": 1,
                              "replicas": [3, 2], "isr": [3]}]}]})";

TEST(ClusterViewTest, ParsesTheApplyClusterDocument) {
  auto view = ParseClusterView(kState);
  ASSERT_TRUE(view.ok()) << view.status().ToString();
  const ClusterView& v = **view;
  EXPECT_EQ(v.cluster_id, "c1");
  EXPECT_EQ(v.controller_id, 2);
  EXPECT_EQ(v.controller_epoch, 7);
  ASSERT_EQ(v.brokers.size(), 2u);
  EXPECT_EQ(v.brokers[0].id, 2);  // sorted by id
  ASSERT_NE(v.FindBroker(3), nullptr);
  EXPECT_EQ(v.FindBroker(3)->rack, std::optional<std::string>("r1"));
  EXPECT_FALSE(v.FindBroker(2)->rack.has_value());
  EXPECT_EQ(v.FindBroker(4), nullptr);
  EXPECT_EQ(v.local_broker_epoch, 4294967301);  // a czxid: 64 bits
  EXPECT_EQ(v.FindBroker(3)->epoch, 4294967301);
  EXPECT_EQ(v.FindBroker(2)->epoch, -1);  // not in the document
  const TopicView* t = v.FindTopic("t");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(v.FindTopicById(t->id), t);
  EXPECT_EQ(t->configs.at("min.insync.replicas"), "2");
  ASSERT_EQ(t->partitions.size(), 2u);
  EXPECT_EQ(t->partitions[0].leader_epoch, 4);
  EXPECT_EQ(t->partitions[1].leader, -1);
  EXPECT_EQ(t->partitions[1].replicas, (std::vector<int32_t>{3, 2}));
}

TEST(ClusterViewTest, EachListenerHasItsOwnAddress) {
  auto view = ParseClusterView(R"({"controller_id": 1, "topics": [],
    "brokers": [{"id": 1, "host": "10.0.0.1", "port": 9092, "rack": null,
                 "endpoints": ["PLAINTEXT://10.0.0.1:9092", "SSL://b1.example:9093"]},
                {"id": 2, "host": "10.0.0.2", "port": 9092, "rack": null}]})");
  ASSERT_TRUE(view.ok()) << view.status().ToString();
  std::string host;
  int32_t port = 0;
  const BrokerEndpoint* b1 = (*view)->FindBroker(1);
  ASSERT_TRUE(b1->AddressFor("SSL", &host, &port));
  EXPECT_EQ(host + ":" + std::to_string(port), "b1.example:9093");
  ASSERT_TRUE(b1->AddressFor("", &host, &port));  // the inter-broker address
  EXPECT_EQ(host + ":" + std::to_string(port), "10.0.0.1:9092");
  EXPECT_FALSE(b1->AddressFor("SASL_SSL", &host, &port));  // no such listener
  // A registration without endpoints: host/port for every listener.
  ASSERT_TRUE((*view)->FindBroker(2)->AddressFor("SSL", &host, &port));
  EXPECT_EQ(host + ":" + std::to_string(port), "10.0.0.2:9092");
  EXPECT_FALSE(ParseClusterView(R"({"controller_id": 1, "topics": [],
    "brokers": [{"id": 1, "host": "h", "port": 1, "endpoints": ["nonsense"]}]})").ok());
}

TEST(ClusterViewTest, MalformedDocumentsNameTheField) {
  EXPECT_NE(ParseClusterView("[]").status().message().find("object"), std::string::npos);
  EXPECT_NE(ParseClusterView(R"({"brokers": [], "topics": []})").status().message().find("controller_id"),
            std::string::npos);
  auto gap = ParseClusterView(R"({"controller_id": 1, "brokers": [], "topics": [{"name": "t",
      "id": "AAAAAAAAAAAAAAAAAAAAAQ", "partitions": [{"partition": 1, "leader": 1,
      "leader_epoch": 0, "replicas": [1], "isr": [1]}]}]})");
  EXPECT_NE(gap.status().message().find("0..n-1"), std::string::npos);
  EXPECT_FALSE(ParseClusterView("{").ok());
}

}  // namespace
}  // namespace headrace::broker
