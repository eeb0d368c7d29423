// A blocking Kafka-protocol connection from a follower to its leader: one
// TCP socket, requests encoded with the codec's EncodeRequest (request header
// v1/v2 with the follower's client id), responses decoded with the generated
// Decode. Used by one replica fetcher thread; only Interrupt() may be called
// from another thread.
//
// Secured as the inter-broker listener is (inter_broker_security.h): after
// the TCP connect, a TLS handshake (SSL, SASL_SSL) and then SaslHandshake
// v1 + SaslAuthenticate v2 rounds (SASL_*), all within the connect
// timeout and interruptible. When the leader gives the session a lifetime
// (KIP-368 session_lifetime_ms > 0), the connection re-authenticates in
// band, on the same socket, before the next request once 85% of it has
// passed (as Kafka's clients, which pick 85-95%).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "broker/replication/inter_broker_security.h"
#include "headrace/status.h"
#include "protocol/codec.h"

namespace headrace::net {
class TlsClientStream;
}

namespace headrace::broker::replication {

class LeaderConnection {
 public:
  // `client_id`: "headrace-replica-<local broker id>". `security`: how the
  // inter-broker listener is secured (null = PLAINTEXT).
  explicit LeaderConnection(std::string client_id,
                            std::shared_ptr<const InterBrokerSecurity> security = nullptr);
  ~LeaderConnection();
  LeaderConnection(const LeaderConnection&) = delete;
  LeaderConnection& operator=(const LeaderConnection&) = delete;

  // Connects to host:port (a name or an address), giving up after
  // `connect_timeout_ms`; a response must then arrive within
  // `read_timeout_ms` of its request. Errors: IOError (resolution, refused,
  // unreachable, timeout, or interrupted by Interrupt(); a failed TLS
  // handshake or SASL authentication, naming the cause).
  Status Connect(const std::string& host, int32_t port, int connect_timeout_ms,
                 int read_timeout_ms);
  bool connected() const { return fd_ >= 0; }
  void Close();
  // Unblocks a Connect or Call in progress on another thread (it then fails
  // with IOError) and makes every later Connect fail: the fetcher is
  // shutting down. Thread-safe.
  void Interrupt();

  // Sends `req` at `version` and waits for its response. Records fields of
  // the result point into a frame this connection keeps until the next
  // Call. Errors: IOError (closed, timed out, interrupted: the connection is
  // then closed), Corruption (a malformed or mismatched response: closed).
  template <typename Resp, typename Req>
  Result<Resp> Call(const Req& req, int16_t version) {
    if (reauthenticate_at_ && std::chrono::steady_clock::now() >= *reauthenticate_at_) {
      HR_RETURN_IF_ERROR(Authenticate());
    }
    return RoundTrip<Resp>(req, version);
  }

 private:
  template <typename Resp, typename Req>
  Result<Resp> RoundTrip(const Req& req, int16_t version) {
    const int32_t correlation_id = next_correlation_id_++;
    OutputBuffer out;
    protocol::EncodeRequest(out, correlation_id, client_id_, version, req);
    HR_RETURN_IF_ERROR(SendFrame(out.Flatten()));
    HR_RETURN_IF_ERROR(ReadFrame());
    protocol::Reader r(frame_);
    protocol::ResponseHeader header;
    Status st = header.Decode(r, protocol::ResponseHeaderVersion(Resp::kApiKey, version));
    if (st.ok() && header.correlation_id != correlation_id) {
      st = Status::Corruption("response correlation id " + std::to_string(header.correlation_id) +
                              ", expected " + std::to_string(correlation_id));
    }
    Resp resp;
    if (st.ok()) st = resp.Decode(r, version);
    if (!st.ok()) {
      Close();
      return Status::Corruption("malformed response from the leader: " + st.message());
    }
    return resp;
  }

  // The SASL rounds (SaslHandshake, SaslAuthenticate...) on the connected
  // socket; sets reauthenticate_at_. IOError naming the mechanism, user and
  // the leader's message when refused (the connection is then closed).
  Status Authenticate();
  Status SendFrame(const std::string& body);
  Status ReadFrame();  // into frame_
  Status Failed(const std::string& what);  // closes, returns IOError

  const std::string client_id_;
  const std::shared_ptr<const InterBrokerSecurity> security_;
  std::string host_;  // connected to (messages)
  std::unique_ptr<net::TlsClientStream> tls_;  // SSL / SASL_SSL, once handshaken
  std::optional<std::chrono::steady_clock::time_point> reauthenticate_at_;
  int fd_ = -1;                 // owned by the calling thread
  std::mutex interrupt_mu_;     // guards interrupted_ and the fd seen by Interrupt
  int interrupt_fd_ = -1;
  bool interrupted_ = false;
  int32_t next_correlation_id_ = 1;
  std::vector<uint8_t> frame_;  // the last response (header + body)
};

}  // namespace headrace::broker::replication
