// Cluster mode through a real broker and a socket (docs/cluster.md): the
// control plane's view applied with Broker::ApplyClusterState decides what
// Metadata says and which partitions this broker leads; admin requests go
// to the control plane through NextControlRequest / CompleteControlRequest.
// (Replication between brokers is tested with real processes in
// tests/test_cluster_*.py.)
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <thread>

#include "broker/api/broker_test_fixture.h"
#include "broker/base/kafka_error.h"
#include "headrace/broker.h"
#include "log/testing.h"

namespace headrace {
namespace {

using broker::Code;
using broker::KafkaError;
using namespace protocol;  // message structs

constexpr const char* kTopicId = "AAAAAAAAAAAAAAAAAAAAAQ";

class ClusterModeTest : public testing::BrokerFixture {
 protected:
  ClusterModeTest() {
    // Never contacted by the C++ broker: only the control plane talks to it.
    base_settings_ = {{"zookeeper.connect", "127.0.0.1:1"}, {"node.id", "1"}};
  }

  // A view where this broker (1) and broker 2 (nobody listens there) are
  // live, with topic t: p0 led here (epoch `epoch0`), p1 led by 2 with a
  // replica here, p2 only on 2.
  std::string View(int p0_leader = 1, int epoch0 = 1, bool with_topic = true) {
    std::string topics;
    if (with_topic) {
      topics = std::string(R"({"name": "t", "id": ")") + kTopicId + R"(", "configs": {},
        "partitions": [
          {"partition": 0, "leader": )" + std::to_string(p0_leader) +
               R"(, "leader_epoch": )" + std::to_string(epoch0) + R"(, "replicas": [1, 2], "isr": [1]},
          {"partition": 1, "leader": 2, "leader_epoch": 3, "replicas": [2, 1], "isr": [2]},
          {"partition": 2, "leader": 2, "leader_epoch": 0, "replicas": [2], "isr": [2]}]})";
    }
    return R"({"cluster_id": "zk-cluster", "controller_id": 2, "controller_epoch": 5,
      "brokers": [{"id": 1, "host": "127.0.0.1", "port": )" +
           std::to_string(port_) + R"(, "rack": "a"},
                  {"id": 2, "host": "127.0.0.1", "port": 1, "rack": "b"}],
      "topics": [)" + topics + "]}";
  }

  void Apply(const std::string& view) {
    std::vector<std::string> report;
    Status st = broker_->ApplyClusterState(view, &report);
    ASSERT_TRUE(st.ok()) << st.ToString();
    EXPECT_TRUE(report.empty()) << report.front();
  }

  int16_t ProduceError(int32_t partition) {
    ProduceRequest req;
    req.acks = 1;
    req.timeout_ms = 5000;
    auto& t = req.topic_data.emplace_back();
    t.name = "t";
    t.partition_data.push_back({partition, Records::FromBytes(testing::MakeBatch(2, 10, 1000))});
    auto resp = Call<ProduceResponse>(req, 9);
    return resp.responses.at(0).partition_responses.at(0).error_code;
  }

  MetadataResponse Metadata() {
    MetadataRequest req;
    req.topics = std::nullopt;  // all
    return Call<MetadataResponse>(req, 12);
  }
};

TEST_F(ClusterModeTest, MetadataAndLeadershipFollowTheAppliedView) {
  Apply(View());
  MetadataResponse md = Metadata();
  EXPECT_EQ(md.cluster_id, std::optional<std::string>("zk-cluster"));
  EXPECT_EQ(md.controller_id, 2);
  ASSERT_EQ(md.brokers.size(), 2u);
  EXPECT_EQ(md.brokers[1].rack, std::optional<std::string>("b"));
  ASSERT_EQ(md.topics.size(), 1u);
  const auto& parts = md.topics[0].partitions;
  ASSERT_EQ(parts.size(), 3u);
  EXPECT_EQ(parts[0].leader_id, 1);
  EXPECT_EQ(parts[0].leader_epoch, 1);
  EXPECT_EQ(parts[1].leader_id, 2);
  EXPECT_EQ(parts[1].replica_nodes, (std::vector<int32_t>{2, 1}));

  EXPECT_EQ(ProduceError(0), Code(KafkaError::kNone));
  EXPECT_EQ(ProduceError(1), Code(KafkaError::kNotLeaderOrFollower));  // a follower here
  {  // KIP-951: the answer names the leader (Produce v10, Fetch v16)
    ProduceRequest req;
    req.acks = 1;
    req.timeout_ms = 5000;
    auto& t = req.topic_data.emplace_back();
    t.name = "t";
    t.partition_data.push_back({1, Records::FromBytes(testing::MakeBatch(1, 10, 1000))});
    auto resp = Call<ProduceResponse>(req, 10);
    const auto& p = resp.responses.at(0).partition_responses.at(0);
    EXPECT_EQ(p.current_leader.leader_id, 2);
    EXPECT_EQ(p.current_leader.leader_epoch, 3);
    ASSERT_EQ(resp.node_endpoints.size(), 1u);
    EXPECT_EQ(resp.node_endpoints[0].node_id, 2);
    EXPECT_EQ(resp.node_endpoints[0].port, 1);
    FetchRequest fetch;
    fetch.replica_id = -1;
    fetch.max_wait_ms = 0;
    fetch.max_bytes = 1 << 20;
    auto& ft = fetch.topics.emplace_back();
    ft.topic = "t";
    FetchRequest::FetchPartition fp;
    fp.partition = 1;
    fp.fetch_offset = 0;
    fp.partition_max_bytes = 1 << 20;
    ft.partitions.push_back(fp);
    auto fr = Call<FetchResponse>(fetch, 12);  // v12: names, no node_endpoints yet
    const auto& fpd = fr.responses.at(0).partitions.at(0);
    EXPECT_EQ(fpd.error_code, Code(KafkaError::kNotLeaderOrFollower));
    EXPECT_EQ(fpd.current_leader.leader_id, 2);
  }
  {  // Fetch v17 by topic id in a fetch session (KIP-227): the partition led
     // elsewhere is answered with the leader hints and listed again in every
     // incremental answer while the error lasts.
    FetchRequest fetch;
    fetch.max_wait_ms = 0;
    fetch.max_bytes = 1 << 20;
    fetch.session_id = 0;
    fetch.session_epoch = 0;
    auto& ft = fetch.topics.emplace_back();
    ft.topic_id = md.topics[0].topic_id;
    FetchRequest::FetchPartition fp;
    fp.partition = 1;
    fp.partition_max_bytes = 1 << 20;
    ft.partitions.push_back(fp);
    auto fr = Call<FetchResponse>(fetch, 17);
    ASSERT_NE(fr.session_id, 0);
    const auto& fpd = fr.responses.at(0).partitions.at(0);
    EXPECT_EQ(fpd.error_code, Code(KafkaError::kNotLeaderOrFollower));
    EXPECT_EQ(fpd.current_leader.leader_id, 2);
    EXPECT_EQ(fpd.current_leader.leader_epoch, 3);
    EXPECT_EQ(fpd.preferred_read_replica, -1);
    ASSERT_EQ(fr.node_endpoints.size(), 1u);
    EXPECT_EQ(fr.node_endpoints[0].node_id, 2);

    FetchRequest inc;
    inc.max_wait_ms = 0;
    inc.max_bytes = 1 << 20;
    inc.session_id = fr.session_id;
    inc.session_epoch = 1;
    auto ir = Call<FetchResponse>(inc, 17);
    EXPECT_EQ(ir.error_code, 0);
    EXPECT_EQ(ir.session_id, fr.session_id);
    ASSERT_EQ(ir.responses.size(), 1u);
    EXPECT_EQ(ir.responses[0].topic_id, md.topics[0].topic_id);
    EXPECT_EQ(ir.responses[0].partitions.at(0).error_code,
              Code(KafkaError::kNotLeaderOrFollower));
    EXPECT_EQ(ir.responses[0].partitions.at(0).current_leader.leader_id, 2);
    ASSERT_EQ(ir.node_endpoints.size(), 1u);
  }
  EXPECT_EQ(ProduceError(2), Code(KafkaError::kNotLeaderOrFollower));  // no replica here
  EXPECT_TRUE(std::filesystem::exists(dir_.path() + "/t-1"));
  EXPECT_FALSE(std::filesystem::exists(dir_.path() + "/t-2"));

  // An older epoch changes nothing; a newer one moves the leadership away.
  Apply(View(/*p0_leader=*/2, /*epoch0=*/0));
  EXPECT_EQ(ProduceError(0), Code(KafkaError::kNone));
  Apply(View(/*p0_leader=*/2, /*epoch0=*/2));
  EXPECT_EQ(ProduceError(0), Code(KafkaError::kNotLeaderOrFollower));
  Apply(View(/*p0_leader=*/1, /*epoch0=*/3));
  EXPECT_EQ(ProduceError(0), Code(KafkaError::kNone));

  // Deleted in the cluster: the local replicas go.
  Apply(View(1, 3, /*with_topic=*/false));
  EXPECT_TRUE(Metadata().topics.empty());
  EXPECT_EQ(ProduceError(0), Code(KafkaError::kLeaderNotAvailable));  // auto-creation asked
  uint64_t id = 0;
  std::string kind, payload;
  ASSERT_TRUE(broker_->NextControlRequest(1000, &id, &kind, &payload));
  EXPECT_EQ(kind, "create_topics");
  EXPECT_NE(payload.find("\"t\""), std::string::npos) << payload;
  EXPECT_TRUE(broker_->CompleteControlRequest(id, R"({"topics": []})"));
}

// Until the control plane applied a first view the broker answers nothing
// (it would give clients another cluster id and no leaders): connections
// are closed. After a restart the same holds, and the replicas reopen as
// followers without a leader, so the first view decides their roles.
TEST_F(ClusterModeTest, NothingIsServedBeforeTheFirstViewAlsoAfterARestart) {
  std::string error;
  MetadataRequest md;
  md.topics = std::nullopt;
  EXPECT_FALSE(client_->Call<MetadataResponse>(md, 12, &error).has_value());
  EXPECT_TRUE(client_->PeerClosed());
  client_ = std::make_unique<testing::KafkaTestClient>(port_);
  Apply(View());
  EXPECT_EQ(ProduceError(0), Code(KafkaError::kNone));
  RestartBroker();
  EXPECT_FALSE(client_->Call<MetadataResponse>(md, 12, &error).has_value());
  client_ = std::make_unique<testing::KafkaTestClient>(port_);
  Apply(View(/*p0_leader=*/2, 4));  // reopened as a follower; stays one
  EXPECT_EQ(ProduceError(0), Code(KafkaError::kNotLeaderOrFollower));
  Apply(View(1, 5));
  EXPECT_EQ(ProduceError(0), Code(KafkaError::kNone));
}

TEST_F(ClusterModeTest, CreateTopicsIsAnsweredByTheControlPlane) {
  Apply(View());
  CreateTopicsRequest req;
  req.timeout_ms = 10000;
  auto& good = req.topics.emplace_back();
  good.name = "fresh";
  good.num_partitions = 3;
  good.replication_factor = 2;
  auto& bad = req.topics.emplace_back();
  bad.name = "badconfig";
  bad.num_partitions = 1;
  bad.replication_factor = 1;
  bad.configs.push_back({"min.insync.replicas", std::string("zero")});
  std::thread control([&] {
    uint64_t id = 0;
    std::string kind, payload;
    ASSERT_TRUE(broker_->NextControlRequest(5000, &id, &kind, &payload));
    EXPECT_EQ(kind, "create_topics");
    EXPECT_NE(payload.find("\"fresh\""), std::string::npos) << payload;
    EXPECT_EQ(payload.find("badconfig"), std::string::npos) << "refused before it is forwarded";
    EXPECT_TRUE(broker_->CompleteControlRequest(
        id, R"({"topics": [{"name": "fresh", "error_code": 0, "error_message": null,
                 "topic_id": "AAAAAAAAAAAAAAAAAAAAAg", "num_partitions": 3,
                 "replication_factor": 2}]})"));
  });
  auto resp = Call<CreateTopicsResponse>(req, 7);
  control.join();
  ASSERT_EQ(resp.topics.size(), 2u);
  for (const auto& t : resp.topics) {
    if (t.name == "fresh") {
      EXPECT_EQ(t.error_code, 0);
      EXPECT_EQ(t.num_partitions, 3);
      EXPECT_EQ(t.topic_id.ToBase64(), "AAAAAAAAAAAAAAAAAAAAAg");
    } else {
      EXPECT_EQ(t.error_code, Code(KafkaError::kInvalidConfig));
    }
  }
}

TEST_F(ClusterModeTest, AdminRequestsTimeOutWhenTheControlPlaneDoesNotAnswer) {
  Apply(View());
  DeleteTopicsRequest req;
  req.topic_names = {"t"};
  req.timeout_ms = 300;
  std::thread ticker([&] {  // what the control plane's ISR poll does
    for (int i = 0; i < 20; ++i) {
      (void)broker_->TakeIsrChanges();
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  });
  auto resp = Call<DeleteTopicsResponse>(req, 5);
  ticker.join();
  ASSERT_EQ(resp.responses.size(), 1u);
  EXPECT_EQ(resp.responses[0].error_code, Code(KafkaError::kRequestTimedOut));
}

TEST_F(ClusterModeTest, FindCoordinatorAsksForTheOffsetsTopicThenNamesItsLeader) {
  Apply(View());
  FindCoordinatorRequest req;
  req.key = "g";
  auto first = Call<FindCoordinatorResponse>(req, 3);
  EXPECT_EQ(first.error_code, Code(KafkaError::kCoordinatorNotAvailable));
  uint64_t id = 0;
  std::string kind, payload;
  ASSERT_TRUE(broker_->NextControlRequest(1000, &id, &kind, &payload));
  EXPECT_NE(payload.find("__consumer_offsets"), std::string::npos) << payload;
  EXPECT_NE(payload.find("compact"), std::string::npos) << payload;
  EXPECT_TRUE(broker_->CompleteControlRequest(id, "{\"topics\": []}"));
  std::string view = View();
  view.insert(view.rfind(']'), std::string(R"(, {"name": "__consumer_offsets", "id": "AAAAAAAAAAAAAAAAAAAAAw",
      "configs": {"cleanup.policy": "compact"}, "partitions": [{"partition": 0, "leader": 1,
      "leader_epoch": 0, "replicas": [1], "isr": [1]}]})"));
  Apply(view);
  auto second = Call<FindCoordinatorResponse>(req, 3);
  EXPECT_EQ(second.error_code, 0);
  EXPECT_EQ(second.node_id, 1);
  EXPECT_EQ(second.port, port_);
}

// __consumer_offsets with two partitions: 0 led here, 1 by broker 2. Group
// "b" (Java hashCode 98, partition 0) is coordinated here, group "a" (97,
// partition 1) by broker 2: each group API answers per group.
TEST_F(ClusterModeTest, GroupApisAreRoutedByTheGroupsPartition) {
  std::string view = View();
  view.insert(view.rfind(']'), std::string(R"(, {"name": "__consumer_offsets", "id": "AAAAAAAAAAAAAAAAAAAAAw",
      "configs": {"cleanup.policy": "compact"}, "partitions": [
        {"partition": 0, "leader": 1, "leader_epoch": 0, "replicas": [1], "isr": [1]},
        {"partition": 1, "leader": 2, "leader_epoch": 0, "replicas": [2], "isr": [2]}]})"));
  Apply(view);
  {
    FindCoordinatorRequest req;
    req.coordinator_keys = {"a", "b"};
    auto resp = Call<FindCoordinatorResponse>(req, 4);
    ASSERT_EQ(resp.coordinators.size(), 2u);
    EXPECT_EQ(resp.coordinators[0].key, "a");
    EXPECT_EQ(resp.coordinators[0].node_id, 2);
    EXPECT_EQ(resp.coordinators[0].port, 1);
    EXPECT_EQ(resp.coordinators[1].node_id, 1);
    EXPECT_EQ(resp.coordinators[1].port, port_);
  }
  auto commit = [&](const std::string& group) {
    OffsetCommitRequest req;
    req.group_id = group;
    auto& t = req.topics.emplace_back();
    t.name = "t";
    // Partition 2 has no replica here: the topic is checked against the view.
    for (int32_t p : {0, 2}) t.partitions.push_back({p, 5 + p, -1, -1, std::string("m")});
    auto resp = Call<OffsetCommitResponse>(req, 8);
    return std::make_pair(resp.topics.at(0).partitions.at(0).error_code,
                          resp.topics.at(0).partitions.at(1).error_code);
  };
  EXPECT_EQ(commit("b"), std::make_pair(Code(KafkaError::kNone), Code(KafkaError::kNone)));
  EXPECT_EQ(commit("a"), std::make_pair(Code(KafkaError::kNotCoordinator),
                                        Code(KafkaError::kNotCoordinator)));
  {  // OffsetFetch v8 batches groups: each answered by its own partition.
    OffsetFetchRequest req;
    for (const char* g : {"a", "b"}) {
      auto& rg = req.groups.emplace_back();
      rg.group_id = g;
      rg.topics = std::nullopt;  // every committed offset
    }
    auto resp = Call<OffsetFetchResponse>(req, 8);
    ASSERT_EQ(resp.groups.size(), 2u);
    EXPECT_EQ(resp.groups[0].error_code, Code(KafkaError::kNotCoordinator));
    EXPECT_EQ(resp.groups[1].error_code, Code(KafkaError::kNone));
    ASSERT_EQ(resp.groups[1].topics.size(), 1u);
    ASSERT_EQ(resp.groups[1].topics[0].partitions.size(), 2u);
    EXPECT_EQ(resp.groups[1].topics[0].partitions[0].committed_offset, 5);
    EXPECT_EQ(resp.groups[1].topics[0].partitions[1].committed_offset, 7);
  }
  {  // ListGroups: the groups of the partitions led here.
    auto resp = Call<ListGroupsResponse>(ListGroupsRequest{}, 4);
    EXPECT_EQ(resp.error_code, 0);
    ASSERT_EQ(resp.groups.size(), 1u);
    EXPECT_EQ(resp.groups[0].group_id, "b");
  }
  {  // DescribeGroups per group.
    DescribeGroupsRequest req;
    req.groups = {"a", "b"};
    auto resp = Call<DescribeGroupsResponse>(req, 5);
    ASSERT_EQ(resp.groups.size(), 2u);
    EXPECT_EQ(resp.groups[0].error_code, Code(KafkaError::kNotCoordinator));
    EXPECT_EQ(resp.groups[1].error_code, Code(KafkaError::kNone));
    EXPECT_EQ(resp.groups[1].group_state, "Empty");
  }
  {  // Leading partition 1 too (a new view): "a" is coordinated here now.
    std::string moved = view;
    const std::string from = R"({"partition": 1, "leader": 2, "leader_epoch": 0, "replicas": [2], "isr": [2]})";
    moved.replace(moved.find(from), from.size(),
                  R"({"partition": 1, "leader": 1, "leader_epoch": 1, "replicas": [1], "isr": [1]})");
    Apply(moved);
    EXPECT_EQ(commit("a"), std::make_pair(Code(KafkaError::kNone), Code(KafkaError::kNone)));
  }
}


// KIP-380 / KIP-903: a follower fetch carries its broker epoch (v12-14 the
// headrace tag, v15+ ReplicaState); one older than the registration in the
// view is refused whole; the ISR addition the leader proposes names the
// epoch the follower fetched under.
TEST_F(ClusterModeTest, FollowerFetchesUnderAStaleBrokerEpochAreRefused) {
  std::string view = View();
  const std::string two = R"({"id": 2, "host": "127.0.0.1", "port": 1, "rack": "b")";
  const size_t at = view.find(two);
  ASSERT_NE(at, std::string::npos);
  view.replace(at, two.size(), R"({"id": 2, "host": "127.0.0.1", "port": 1, "rack": "b", "epoch": 42)");
  Apply(view);
  auto fetch = [&](int16_t version, int64_t epoch) {
    FetchRequest req;
    req.max_wait_ms = 0;
    req.max_bytes = 1 << 20;
    if (version >= 15) {
      req.replica_state.replica_id = 2;
      req.replica_state.replica_epoch = epoch;
    } else {
      req.replica_id = 2;
      req.headrace_replica_epoch = epoch;
    }
    auto& t = req.topics.emplace_back();
    t.topic = "t";
    t.topic_id = Uuid::FromBase64(kTopicId).value();
    FetchRequest::FetchPartition p;
    p.partition = 0;
    p.current_leader_epoch = 1;
    p.partition_max_bytes = 1 << 20;
    t.partitions.push_back(p);
    return Call<FetchResponse>(req, version);
  };
  for (int16_t version : {12, 15}) {
    FetchResponse stale = fetch(version, 41);
    EXPECT_EQ(stale.error_code, Code(KafkaError::kStaleBrokerEpoch)) << "v" << version;
    EXPECT_TRUE(stale.responses.empty());
  }
  auto isr_changes = [&] {  // compact: the JSON is written indented
    std::string out = broker_->TakeIsrChanges();
    std::erase_if(out, [](char c) { return c == ' ' || c == '\n'; });
    return out;
  };
  EXPECT_EQ(isr_changes(), "[]");  // a refused fetch moved nothing
  for (int64_t epoch : {-1, 43}) {  // none given; newer than the view (it may lag)
    FetchResponse ok = fetch(12, epoch);
    EXPECT_EQ(ok.error_code, 0);
    ASSERT_EQ(ok.responses.size(), 1u);
    EXPECT_EQ(ok.responses[0].partitions.at(0).error_code, 0);
  }
  FetchResponse current = fetch(15, 42);
  ASSERT_EQ(current.responses.size(), 1u);
  EXPECT_EQ(current.responses[0].partitions.at(0).error_code, 0);
  EXPECT_EQ(isr_changes(),
            R"([{"broker_epochs":{"2":42},"isr":[1,2],"leader_epoch":1,"partition":0,"topic":"t"}])");
}

}  // namespace
}  // namespace headrace
