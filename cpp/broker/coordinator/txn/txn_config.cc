#include "broker/coordinator/txn/txn_config.h"

namespace headrace::broker::txn {
namespace {

constexpr int64_t kI32Max = 0x7fffffff;

const std::vector<ConfigKey<TxnConfig>>& Keys() {
  static const std::vector<ConfigKey<TxnConfig>> keys = {
      IntConfigKey("transaction.max.timeout.ms",
                   "Largest transaction.timeout.ms a transactional producer may use.",
                   &TxnConfig::max_timeout_ms, 1, kI32Max),
      IntConfigKey("transactional.id.expiration.ms",
                   "An idle transactional id without an open transaction is removed after this.",
                   &TxnConfig::id_expiration_ms, 1, kI32Max),
      IntConfigKey("transaction.abort.timed.out.transaction.cleanup.interval.ms",
                   "How often transactions open past their timeout are aborted.",
                   &TxnConfig::abort_check_interval_ms, 1, kI32Max),
      IntConfigKey("transaction.remove.expired.transaction.cleanup.interval.ms",
                   "How often expired transactional ids are removed.",
                   &TxnConfig::expire_check_interval_ms, 1, kI32Max),
      IntConfigKey("transaction.state.log.replication.factor",
                   "Replicas of __transaction_state in a cluster (fewer if fewer brokers are live).",
                   &TxnConfig::log_replication_factor, 1, 32767),
      IntConfigKey("transaction.state.log.num.partitions",
                   "Partitions of __transaction_state in a cluster (a transactional id's "
                   "coordinator is the leader of abs(hashCode(id)) % partitions); fixed when the "
                   "topic is first created.",
                   &TxnConfig::log_num_partitions, 1, kI32Max),
      IntConfigKey("transaction.state.log.min.isr",
                   "min.insync.replicas of __transaction_state.", &TxnConfig::log_min_isr, 1,
                   32767),
      IntConfigKey("transaction.state.log.segment.bytes",
                   "Segment size of the coordinator's log and the bytes appended between "
                   "compactions.",
                   &TxnConfig::log_segment_bytes, 4096, kI32Max),
  };
  return keys;
}

HR_REGISTER_CONFIG_FAMILY(TxnConfig, "transaction", &Keys);

}  // namespace

Status TxnConfig::Set(const std::string& key, const std::string& value) {
  return SetFromTable(Keys(), *this, key, value, "transaction");
}

std::vector<SettingDoc> TxnConfig::Describe() const { return DescribeTable(Keys(), *this); }

Status TxnConfig::Extract(std::map<std::string, std::string>& props) {
  return ExtractFromTable(Keys(), *this, props);
}

}  // namespace headrace::broker::txn
