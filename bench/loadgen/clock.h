// Time and CPU readings shared by the load generator's threads.
#pragma once

#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>

namespace headrace::loadgen {

// CLOCK_MONOTONIC in ns: system-wide, so a timestamp written by one process
// can be compared with a reading taken by another on the same host.
inline uint64_t NowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000u + static_cast<uint64_t>(ts.tv_nsec);
}

inline void SleepNs(uint64_t ns) {
  timespec ts{static_cast<time_t>(ns / 1000000000u), static_cast<long>(ns % 1000000000u)};
  nanosleep(&ts, nullptr);
}

// utime + stime of process `pid` in seconds, from /proc/<pid>/stat; -1 if
// it cannot be read.
inline double ProcessCpuSeconds(int pid) {
  std::string path = "/proc/" + std::to_string(pid) + "/stat";
  FILE* f = std::fopen(path.c_str(), "r");
  if (f == nullptr) return -1;
  char buf[2048];
  size_t n = std::fread(buf, 1, sizeof(buf) - 1, f);
  std::fclose(f);
  buf[n] = '\0';
  // Fields after the ")" that closes the command name: state is field 3,
  // utime field 14, stime field 15.
  const char* p = std::strrchr(buf, ')');
  if (p == nullptr) return -1;
  unsigned long long utime = 0, stime = 0;
  if (std::sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &utime,
                  &stime) != 2)
    return -1;
  return static_cast<double>(utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

// Seconds the threads of process `pid` have spent
// runnable but waiting for a CPU, summed over its current threads
// (/proc/PID/task/*/schedstat, second field). On a shared machine this is
// the time other work took from the process: the noise in a measurement.
// -1 if it cannot be read.
inline double RunQueueWaitSeconds(int pid) {
  std::string dir = "/proc/" + std::to_string(pid) + "/task";
  std::error_code ec;
  double total = 0;
  bool any = false;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    FILE* f = std::fopen((e.path() / "schedstat").c_str(), "r");
    if (f == nullptr) continue;
    unsigned long long run = 0, wait = 0;
    if (std::fscanf(f, "%llu %llu", &run, &wait) == 2) {
      total += static_cast<double>(wait) / 1e9;
      any = true;
    }
    std::fclose(f);
  }
  return any ? total : -1;
}

// CPU seconds used so far by this process (all threads).
inline double SelfCpuSeconds() {
  rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

}  // namespace headrace::loadgen
