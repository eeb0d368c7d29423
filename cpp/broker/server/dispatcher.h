// Dispatcher: the broker's net::RequestHandler. Reads the request header,
// finds the API's handler in the registry, checks the version against the
// handler's range and hands the body over.
#pragma once

#include "broker/api/handler.h"
#include "net/request_handler.h"

namespace headrace::broker {

class Dispatcher : public net::RequestHandler {
 public:
  // `ctx` (and `metrics`, null: not recorded) must outlive the Dispatcher
  // and every request it handed out.
  explicit Dispatcher(BrokerContext* ctx, BrokerMetrics* metrics = nullptr)
      : ctx_(ctx), metrics_(metrics) {}

  void Handle(const net::ConnectionInfo& conn, std::span<uint8_t> frame,
              net::Responder respond) override;

 private:
  BrokerContext* const ctx_;
  BrokerMetrics* const metrics_;
};

}  // namespace headrace::broker
