// headrace-reference: what this machine can move over loopback without a
// broker, so broker figures can be given as a fraction of it.
//
//   tcp       one sender thread write()s `--chunk` bytes at a time to a
//             loopback TCP socket; one receiver thread read()s them into a
//             buffer of the same size. (Reference for produce.)
//   sendfile  the sender sendfile()s `--chunk` bytes at a time from a file
//             already in the page cache (written, then read once) to the
//             socket; the receiver read()s as above. (Reference for fetch.)
//   tcp-file  as tcp, but the receiver also write()s every chunk it reads to
//             the end of a new file in `--dir` (default $TMPDIR): the least
//             a broker must do per produced byte on this machine (socket to
//             memory to page cache, one thread), without any protocol.
//
// Both use the kernel's default socket buffer sizes, as the broker does.
// The sendfile sender uses the TCP congestion control the broker gives a
// connection from this host (`--sendfile-congestion`, default reno, as
// headrace.socket.local.congestion.control; "" = the system's default);
// the tcp senders stand for a client and keep the system's default.
// Prints MB/s (10^6 bytes per second) per mode and, with --json, one JSON
// line per mode on stdout. Usage: headrace-reference
// [tcp|sendfile|tcp-file|all] [--seconds S] [--chunk BYTES] [--file-mb N]
// [--dir DIR] [--sendfile-congestion NAME] [--json]
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

struct Args {
  std::string mode = "all";
  double seconds = 3;
  size_t chunk = 1 << 20;
  size_t file_mb = 256;
  std::string dir;  // tcp-file: where the file goes ("" = temp directory)
  std::string sendfile_congestion = "reno";  // "" = the system's default
  bool json = false;
};

[[noreturn]] void Die(const char* what) {
  std::perror(what);
  std::exit(1);
}

// A connected loopback pair: {sender fd, receiver fd}.
std::pair<int, int> LoopbackPair() {
  int listener = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  if (bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) Die("bind");
  if (listen(listener, 1) != 0) Die("listen");
  getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len);
  int sender = socket(AF_INET, SOCK_STREAM, 0);
  if (connect(sender, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) Die("connect");
  int receiver = accept(listener, nullptr, nullptr);
  if (receiver < 0) Die("accept");
  close(listener);
  return {sender, receiver};
}

// Reads until EOF, appending what it reads to `sink` unless it is -1;
// returns the bytes read.
int64_t Drain(int fd, size_t chunk, int sink) {
  std::vector<char> buf(chunk);
  int64_t total = 0;
  for (;;) {
    ssize_t n = read(fd, buf.data(), buf.size());
    if (n <= 0) return total;
    for (ssize_t off = 0; sink >= 0 && off < n;) {
      ssize_t w = write(sink, buf.data() + off, n - off);
      if (w <= 0) Die("write file");
      off += w;
    }
    total += n;
  }
}

// Runs `send(fd, deadline)` against a draining receiver (which also writes
// to `sink` unless it is -1), the sender on TCP congestion control
// `congestion` ("" = the system's default); returns MB/s.
template <typename SendFn>
double Measure(const Args& a, SendFn send, int sink = -1, const std::string& congestion = "") {
  auto [tx, rx] = LoopbackPair();
  if (!congestion.empty() &&
      setsockopt(tx, IPPROTO_TCP, TCP_CONGESTION, congestion.data(),
                 static_cast<socklen_t>(congestion.size())) != 0) {
    Die("setsockopt TCP_CONGESTION");
  }
  int64_t received = 0;
  std::thread receiver([&, rx = rx] { received = Drain(rx, a.chunk, sink); });
  auto start = Clock::now();
  auto deadline = start + std::chrono::duration_cast<Clock::duration>(
                              std::chrono::duration<double>(a.seconds));
  send(tx, deadline);
  shutdown(tx, SHUT_WR);
  receiver.join();
  double secs = std::chrono::duration<double>(Clock::now() - start).count();
  close(tx);
  close(rx);
  return received / secs / 1e6;
}

// A new empty file in `dir` ("" = the temp directory); its path in `path`.
int NewFile(const std::string& dir, std::string* path) {
  std::filesystem::path base =
      dir.empty() ? std::filesystem::temp_directory_path() : std::filesystem::path(dir);
  *path = (base / "headrace-reference-XXXXXX").string();
  int fd = mkstemp(path->data());
  if (fd < 0) Die("mkstemp");
  return fd;
}

double MeasureTcp(const Args& a, int sink = -1) {
  std::vector<char> buf(a.chunk, 'x');
  return Measure(
      a,
      [&](int fd, Clock::time_point deadline) {
        while (Clock::now() < deadline) {
          size_t off = 0;
          while (off < buf.size()) {
            ssize_t n = write(fd, buf.data() + off, buf.size() - off);
            if (n <= 0) Die("write");
            off += n;
          }
        }
      },
      sink);
}

double MeasureTcpToFile(const Args& a) {
  std::string path;
  int file = NewFile(a.dir, &path);
  double mbs = MeasureTcp(a, file);
  close(file);
  unlink(path.c_str());
  return mbs;
}

// A file of `mb` MiB under $TMPDIR, written and read once so it is cached.
int CachedFile(size_t mb, std::string* path) {
  int fd = NewFile("", path);
  std::vector<char> buf(1 << 20, 'y');
  for (size_t i = 0; i < mb; ++i)
    if (write(fd, buf.data(), buf.size()) != static_cast<ssize_t>(buf.size())) Die("write file");
  for (off_t off = 0; pread(fd, buf.data(), buf.size(), off) > 0; off += buf.size()) {
  }
  return fd;
}

double MeasureSendfile(const Args& a) {
  std::string path;
  int file = CachedFile(a.file_mb, &path);
  const off_t size = static_cast<off_t>(a.file_mb) << 20;
  double mbs = Measure(
      a,
      [&](int fd, Clock::time_point deadline) {
        off_t off = 0;
        while (Clock::now() < deadline) {
          if (off + static_cast<off_t>(a.chunk) > size) off = 0;
          off_t end = off + static_cast<off_t>(a.chunk);
          while (off < end) {
            ssize_t n = sendfile(fd, file, &off, end - off);
            if (n <= 0) Die("sendfile");
          }
        }
      },
      -1, a.sendfile_congestion);
  close(file);
  unlink(path.c_str());
  return mbs;
}

void Report(const Args& a, const char* mode, double mbs) {
  std::fprintf(a.json ? stderr : stdout, "%-9s %.0f MB/s (chunk %zu bytes, %.1f s)\n", mode, mbs,
               a.chunk, a.seconds);
  if (a.json)
    std::printf("{\"reference\":\"%s\",\"mb_per_s\":%.1f,\"chunk\":%zu,\"seconds\":%.2f}\n", mode,
                mbs, a.chunk, a.seconds);
  std::fflush(stdout);
}

Args Parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    std::string s = argv[i];
    bool has_value = i + 1 < argc;
    if (s == "--json") a.json = true;
    else if (s == "--seconds" && has_value) a.seconds = std::atof(argv[++i]);
    else if (s == "--chunk" && has_value) a.chunk = std::strtoull(argv[++i], nullptr, 10);
    else if (s == "--file-mb" && has_value) a.file_mb = std::strtoull(argv[++i], nullptr, 10);
    else if (s == "--dir" && has_value) a.dir = argv[++i];
    else if (s == "--sendfile-congestion" && has_value) a.sendfile_congestion = argv[++i];
    else if (s == "tcp" || s == "sendfile" || s == "tcp-file" || s == "all") a.mode = s;
    else {
      std::fprintf(stderr,
                   "usage: headrace-reference [tcp|sendfile|tcp-file|all] [--seconds S] "
                   "[--chunk BYTES] [--file-mb N] [--dir DIR] [--sendfile-congestion NAME] "
                   "[--json]\n");
      std::exit(2);
    }
  }
  if (a.chunk == 0 || a.file_mb * (1 << 20) < a.chunk) {
    std::fprintf(stderr, "headrace-reference: --chunk must be > 0 and fit in --file-mb\n");
    std::exit(2);
  }
  return a;
}

}  // namespace

int main(int argc, char** argv) {
  Args a = Parse(argc, argv);
  if (a.mode == "tcp" || a.mode == "all") Report(a, "tcp", MeasureTcp(a));
  if (a.mode == "sendfile" || a.mode == "all") Report(a, "sendfile", MeasureSendfile(a));
  if (a.mode == "tcp-file" || a.mode == "all") Report(a, "tcp-file", MeasureTcpToFile(a));
  return 0;
}
