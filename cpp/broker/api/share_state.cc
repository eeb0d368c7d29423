#include "broker/api/share_state.h"

#include "broker/coordinator/share/share_coordinators.h"
#include "common/logging.h"

namespace headrace::broker {
namespace {

// The coordinator of `key` on this broker, or null (state in memory only).
std::shared_ptr<share::ShareCoordinator> CoordinatorFor(const BrokerContext& ctx,
                                                        const share::SharePartitionKey& key) {
  if (ctx.share_coordinators == nullptr) return nullptr;
  return ctx.share_coordinators->For(share::ShareCoordinatorKey(key)).coordinator;
}

ShareStatePersist Outcome(const share::ShareCoordinator& c, share::SharePersisted p,
                          const share::SharePartitionKey& key) {
  if (p.error == KafkaError::kNone) return {KafkaError::kNone, LogCommitPoint{c.log_partition(), Offset(p.end)}};
  HR_LOG(kWarn) << "share state of " << share::ShareCoordinatorKey(key)
                << " not written: " << KafkaErrorName(p.error);
  const bool fenced = p.error == KafkaError::kFencedStateEpoch ||
                      p.error == KafkaError::kFencedLeaderEpoch;
  return {fenced ? p.error : KafkaError::kKafkaStorageError, std::nullopt};
}

}  // namespace

namespace share_state_internal {

std::optional<share::ShareState> Read(BrokerContext& ctx, const share::SharePartitionKey& key,
                                      bool* coordinated) {
  std::shared_ptr<share::ShareCoordinator> c = CoordinatorFor(ctx, key);
  *coordinated = c != nullptr;
  return c ? c->Read(key) : std::nullopt;
}

ShareStatePersist Initialize(BrokerContext& ctx, const share::SharePartitionKey& key,
                             int64_t start_offset, int32_t leader_epoch) {
  std::shared_ptr<share::ShareCoordinator> c = CoordinatorFor(ctx, key);
  if (!c) return {};
  return Outcome(*c, c->Initialize(key, /*state_epoch=*/0, start_offset, leader_epoch), key);
}

}  // namespace share_state_internal

ShareStatePersist PersistSharePartition(BrokerContext& ctx, const share::SharePartitionKey& key,
                                        const share::ShareRegistry::Entry& entry,
                                        int32_t leader_epoch) {
  std::shared_ptr<share::ShareCoordinator> c = CoordinatorFor(ctx, key);
  if (!c || !entry.state) return {};
  share::ShareState write;
  write.state_epoch = entry.state_epoch;
  write.leader_epoch = leader_epoch;
  write.start_offset = entry.state->start_offset();
  write.batches = entry.state->Snapshot();
  return Outcome(*c, c->Write(key, write), key);
}

std::vector<LogCommitPoint> DeleteShareState(BrokerContext& ctx, const std::string& group) {
  std::vector<LogCommitPoint> out;
  // The stored state goes first: a share-partition created again meanwhile
  // must not read it back.
  if (ctx.share_coordinators) {
  for (const auto& [partition, c] : ctx.share_coordinators->All()) {
    if (c->StatesOf(group).empty()) continue;
    share::SharePersisted p = c->DeleteGroup(group);
    if (p.error == KafkaError::kNone) {
      out.emplace_back(c->log_partition(), Offset(p.end));
    } else {
      HR_LOG(kWarn) << "share state of group " << group << " not deleted: "
                    << KafkaErrorName(p.error);
    }
  }
  }
  if (ctx.share_partitions) ctx.share_partitions->DropGroup(group);
  return out;
}

}  // namespace headrace::broker
