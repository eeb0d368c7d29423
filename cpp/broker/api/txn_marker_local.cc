// PLACEHOLDER (replaced by the data-plane branch).
#include "broker/api/txn_marker_local.h"

#include "broker/group/group_coordinator.h"

namespace headrace::broker {

void LocalTxnMarkerWriter::Write(txn::TxnMarkerSpec spec, txn::MarkersDone done) {
  std::vector<KafkaError> errors;
  for (const auto& [topic, p] : spec.partitions) {
    if (topic == kConsumerOffsetsTopic) {
      auto groups = ctx_.coordinator();
      errors.push_back(groups ? ToKafkaError(groups->CompleteTxn(spec.producer_id, spec.commit))
                              : KafkaError::kNotCoordinator);
    } else {
      errors.push_back(KafkaError::kNone);
    }
  }
  done(std::move(errors));
}

}  // namespace headrace::broker
