// Small socket helpers for the server: listening, naming peers, tuning
// accepted sockets.
#pragma once

#include <cstdint>
#include <string>

#include "headrace/status.h"

namespace headrace::net {

struct ListenResult {
  int fd = -1;
  uint16_t port = 0;  // the bound port (useful when asked for port 0)
};

// Binds and listens on host:port (host "" or "0.0.0.0" = all IPv4
// addresses, "::" = all IPv6, a name is resolved). The socket is
// close-on-exec and blocking; backends set O_NONBLOCK as they need.
Result<ListenResult> ListenTcp(const std::string& host, uint16_t port, int backlog);

// "host:port" of the peer ("[v6]:port" for IPv6), or "?" if unknown.
std::string PeerName(int fd);

// TCP_NODELAY, and SO_SNDBUF / SO_RCVBUF when > 0 (the *FORCE variants
// first, which may exceed net.core.wmem_max/rmem_max when permitted).
void TuneAcceptedSocket(int fd, int send_buffer_bytes, int receive_buffer_bytes);

// Sets or clears O_NONBLOCK.
void SetNonBlocking(int fd, bool on);

}  // namespace headrace::net
