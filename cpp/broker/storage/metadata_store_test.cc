#include "broker/storage/metadata_store.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "broker/base/kafka_error.h"
#include "common/fault_injecting_env.h"
#include "common/file_env.h"

namespace headrace::broker {
namespace {

namespace fs = std::filesystem;

class MetadataStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("hr_meta_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::unique_ptr<FileMetadataStore> OpenStore() {
    auto s = FileMetadataStore::Open(dir_.string());
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    return std::move(s).value();
  }
  fs::path dir_;
};

TEST_F(MetadataStoreTest, IdentityIsGeneratedOnceAndSurvivesReopen) {
  std::string cluster;
  {
    auto store = OpenStore();
    auto id = store->Bootstrap({"", 7});
    ASSERT_TRUE(id.ok());
    cluster = id->cluster_id;
    EXPECT_EQ(cluster.size(), 22u);
    EXPECT_EQ(id->node_id, 7);
  }
  auto store = OpenStore();
  auto id = store->Bootstrap({"", 7});
  ASSERT_TRUE(id.ok());
  EXPECT_EQ(id->cluster_id, cluster);
  auto wrong_node = store->Bootstrap({"", 8});
  EXPECT_EQ(ToKafkaError(wrong_node.status()), KafkaError::kInconsistentClusterId);
  auto wrong_cluster = store->Bootstrap({"AAAAAAAAAAAAAAAAAAAAAQ", 7});
  EXPECT_EQ(ToKafkaError(wrong_cluster.status()), KafkaError::kInconsistentClusterId);
}

TEST_F(MetadataStoreTest, TopicsSurviveReopen) {
  TopicMetadata a{"alpha", Uuid::Random(), 3, {{"retention.ms", "1000"}}};
  TopicMetadata b{"beta", Uuid::Random(), 1, {}};
  {
    auto store = OpenStore();
    ASSERT_TRUE(store->Bootstrap({"", 0}).ok());
    ASSERT_TRUE(store->PutTopic(b).ok());
    ASSERT_TRUE(store->PutTopic(a).ok());
    a.partition_count = 5;
    ASSERT_TRUE(store->PutTopic(a).ok());  // replace
  }
  {
    auto store = OpenStore();
    auto topics = store->LoadTopics();
    ASSERT_TRUE(topics.ok());
    ASSERT_EQ(topics->size(), 2u);
    EXPECT_EQ((*topics)[0], a);
    EXPECT_EQ((*topics)[1], b);
    ASSERT_TRUE(store->DeleteTopic("alpha").ok());
    EXPECT_EQ(store->DeleteTopic("alpha").code(), StatusCode::kNotFound);
  }
  auto store = OpenStore();
  auto topics = store->LoadTopics();
  ASSERT_EQ(topics->size(), 1u);
  EXPECT_EQ((*topics)[0].name, "beta");
  EXPECT_FALSE(fs::exists(dir_ / "headrace-meta.json.tmp"));
}

// Each step of the atomic replace failing (through the FileEnv seam) leaves
// the store and the file at the old state.
TEST_F(MetadataStoreTest, AFailedWriteKeepsMemoryAndFileAtTheOldState) {
  TopicMetadata a{"alpha", Uuid::Random(), 3, {}};
  TopicMetadata b{"beta", Uuid::Random(), 1, {}};
  FaultInjectingEnv env(FileEnv::Default());
  auto opened = FileMetadataStore::Open(dir_.string(), &env);
  ASSERT_TRUE(opened.ok());
  FileMetadataStore& store = **opened;
  ASSERT_TRUE(store.PutTopic(a).ok());
  for (FileOp op : {FileOp::kWrite, FileOp::kSync, FileOp::kRename}) {
    env.AddRule({op, "headrace-meta.json", 0, /*once=*/true, ENOSPC, op == FileOp::kWrite, ""});
    Status st = store.PutTopic(b);
    EXPECT_EQ(st.code(), StatusCode::kIOError) << FileOpName(op);
    EXPECT_EQ(st.sys_errno(), ENOSPC) << st.ToString();
    EXPECT_EQ(store.LoadTopics()->size(), 1u) << FileOpName(op);
    env.ClearRules();
  }
  auto reopened = OpenStore();
  auto topics = reopened->LoadTopics();
  ASSERT_EQ(topics->size(), 1u);
  EXPECT_EQ((*topics)[0], a);
}

TEST_F(MetadataStoreTest, FileIsTheDocumentedJson) {
  auto store = OpenStore();
  Uuid id;
  id.bytes[15] = 1;
  ASSERT_TRUE(store->PutTopic({"t", id, 2, {{"cleanup.policy", "compact"}}}).ok());
  auto text = ReadWholeFile(*FileEnv::Default(), (dir_ / "headrace-meta.json").string());
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(text.value(),
            "{\n"
            "  \"topics\": [\n"
            "    {\n"
            "      \"configs\": {\n"
            "        \"cleanup.policy\": \"compact\"\n"
            "      },\n"
            "      \"name\": \"t\",\n"
            "      \"partitions\": 2,\n"
            "      \"topic_id\": \"AAAAAAAAAAAAAAAAAAAAAQ\"\n"
            "    }\n"
            "  ],\n"
            "  \"version\": 1\n"
            "}\n");
}

TEST_F(MetadataStoreTest, RejectsCorruptOrNewerFiles) {
  fs::create_directories(dir_);
  std::ofstream(dir_ / "headrace-meta.json") << "{\"version\": 1, \"topics\": [{\"name\": 5}]}";
  auto bad = FileMetadataStore::Open(dir_.string());
  EXPECT_EQ(bad.status().code(), StatusCode::kCorruption);
  std::ofstream(dir_ / "headrace-meta.json") << "{\"version\": 2, \"topics\": []}";
  auto newer = FileMetadataStore::Open(dir_.string());
  EXPECT_EQ(newer.status().code(), StatusCode::kUnsupported);
  std::ofstream(dir_ / "headrace-meta.json") << "{\"version\": 1, \"topics\": [";
  EXPECT_EQ(FileMetadataStore::Open(dir_.string()).status().code(), StatusCode::kCorruption);
}

}  // namespace
}  // namespace headrace::broker
