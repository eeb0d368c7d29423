// A minimal blocking Kafka client for end-to-end tests: one TCP connection,
// requests encoded with the codec's EncodeRequest, responses decoded with
// the generated Decode. Test-only (header-only, not part of the library).
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <vector>

#include "protocol/codec.h"

namespace headrace::testing {

class KafkaTestClient {
 public:
  // Connects to 127.0.0.1:port. Reads time out after `timeout_s` seconds so
  // a broker that never answers fails the test instead of hanging it.
  explicit KafkaTestClient(int port, int timeout_s = 20) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    timeval tv{timeout_s, 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    int one = 1;
    ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    connected_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  }
  ~KafkaTestClient() {
    if (fd_ >= 0) ::close(fd_);
  }
  KafkaTestClient(const KafkaTestClient&) = delete;
  KafkaTestClient& operator=(const KafkaTestClient&) = delete;

  bool connected() const { return connected_; }

  // Sends `req` at `version`; returns its correlation id.
  template <typename Req>
  int32_t Send(const Req& req, int16_t version) {
    int32_t correlation_id = next_correlation_id_++;
    OutputBuffer out;
    protocol::EncodeRequest(out, correlation_id, "e2e-test", version, req);
    std::string body = out.Flatten();
    uint32_t size = htonl(static_cast<uint32_t>(body.size()));
    std::string frame(reinterpret_cast<const char*>(&size), 4);
    frame += body;
    WriteAll(frame);
    return correlation_id;
  }

  // Reads the next response, which must answer `correlation_id`, and
  // decodes it as Resp at `version`. nullopt (with *error set) on a closed
  // connection, a timeout, a wrong correlation id or a malformed body.
  // Records fields point into a frame this client keeps alive.
  template <typename Resp>
  std::optional<Resp> Receive(int32_t correlation_id, int16_t version, std::string* error) {
    std::vector<uint8_t>* frame = ReadFrame();
    if (frame == nullptr) {
      *error = "no response (connection closed or timed out)";
      return std::nullopt;
    }
    protocol::Reader r(*frame);
    protocol::ResponseHeader header;
    Status st = header.Decode(r, protocol::ResponseHeaderVersion(Resp::kApiKey, version));
    if (!st.ok()) {
      *error = "bad response header: " + st.message();
      return std::nullopt;
    }
    if (header.correlation_id != correlation_id) {
      *error = "correlation id " + std::to_string(header.correlation_id) + ", expected " +
               std::to_string(correlation_id);
      return std::nullopt;
    }
    Resp resp;
    st = resp.Decode(r, version);
    if (!st.ok() || r.remaining() != 0) {
      *error = "bad response body: " + (st.ok() ? std::string("trailing bytes") : st.message());
      return std::nullopt;
    }
    return resp;
  }

  template <typename Resp, typename Req>
  std::optional<Resp> Call(const Req& req, int16_t version, std::string* error) {
    return Receive<Resp>(Send(req, version), version, error);
  }

  // True when the broker closed the connection (read returns 0 or fails
  // with something other than a timeout).
  bool PeerClosed() {
    uint8_t b;
    ssize_t n = ::recv(fd_, &b, 1, 0);
    return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
  }

 private:
  void WriteAll(const std::string& data) {
    size_t done = 0;
    while (done < data.size()) {
      ssize_t n = ::send(fd_, data.data() + done, data.size() - done, MSG_NOSIGNAL);
      if (n <= 0) return;
      done += static_cast<size_t>(n);
    }
  }
  bool ReadAll(uint8_t* p, size_t n) {
    size_t done = 0;
    while (done < n) {
      ssize_t got = ::recv(fd_, p + done, n - done, 0);
      if (got <= 0) return false;
      done += static_cast<size_t>(got);
    }
    return true;
  }
  std::vector<uint8_t>* ReadFrame() {
    uint32_t size_be = 0;
    if (!ReadAll(reinterpret_cast<uint8_t*>(&size_be), 4)) return nullptr;
    frames_.emplace_back(ntohl(size_be));
    if (!ReadAll(frames_.back().data(), frames_.back().size())) return nullptr;
    return &frames_.back();
  }

  int fd_ = -1;
  bool connected_ = false;
  int32_t next_correlation_id_ = 1;
  std::deque<std::vector<uint8_t>> frames_;  // decoded responses point into these
};

}  // namespace headrace::testing
