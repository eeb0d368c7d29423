// Small socket helpers for the server: listening, naming peers, tuning
// accepted sockets.
#pragma once

#include <sys/socket.h>

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

// TCP_NODELAY, SO_SNDBUF / SO_RCVBUF when > 0 (the *FORCE variants first,
// which may exceed net.core.wmem_max/rmem_max when permitted), and
// SetLocalCongestionControl(fd, local_congestion_control).
void TuneAcceptedSocket(int fd, int send_buffer_bytes, int receive_buffer_bytes,
                        const std::string& local_congestion_control);

// True when `peer` is on this host as far as a connection from it to `self`
// can tell: a loopback address (127/8, ::1, v4-mapped 127/8) or `self`'s
// own address.
bool AddressIsLocal(const sockaddr_storage& peer, const sockaddr_storage& self);

// AddressIsLocal of a connected socket's peer and own address; false if
// either is unknown (not connected).
bool PeerIsLocal(int fd);

// Sets TCP_CONGESTION to `algorithm` when PeerIsLocal(fd); no-op when
// `algorithm` is empty. A connection within the host has no network to
// control, and a pacing algorithm (BBR without the fq qdisc paces with a
// timer per burst) only costs CPU there: docs/network.md. A refusal by
// the kernel is ignored (the connection keeps the system's default).
void SetLocalCongestionControl(int fd, const std::string& algorithm);

// OK when this process may set TCP_CONGESTION `algorithm` (empty: OK);
// else InvalidArgument naming the sysctls that decide it.
Status CheckCongestionControl(const std::string& algorithm);

// Sets or clears O_NONBLOCK.
void SetNonBlocking(int fd, bool on);

}  // namespace headrace::net
