// PLACEHOLDER (replaced by the data-plane branch): the local marker writer.
#pragma once

#include "broker/api/handler.h"
#include "broker/txn/txn_marker_writer.h"

namespace headrace::broker {

class LocalTxnMarkerWriter : public txn::TxnMarkerWriter {
 public:
  explicit LocalTxnMarkerWriter(BrokerContext& ctx) : ctx_(ctx) {}
  void Write(txn::TxnMarkerSpec spec, txn::MarkersDone done) override;

 private:
  BrokerContext& ctx_;
};

}  // namespace headrace::broker
