// DataDirLock: the exclusive lock a broker holds on its data directory
// (<data_dir>/.lock, as Kafka's), so that two brokers never share one.
// flock(2) on an open file: released by the kernel when the process ends,
// however it ends; the file itself stays. The holder's pid is written into
// the file so that a refused broker can name it.
#pragma once

#include <memory>
#include <string>

#include "common/file_env.h"
#include "headrace/status.h"

namespace headrace::broker {

class DataDirLock {
 public:
  // Creates `data_dir` if needed and locks <data_dir>/.lock. Errors: IOError
  // "data directory D is in use by another broker (pid N, lock file F)" when
  // another process (or another open in this one) holds it; IOError with the
  // errno text when the directory or file cannot be made, or when the pid
  // cannot be written and fdatasynced into it (the disk failed or is
  // read-only). The pid is written and fdatasynced through `env` (the I/O
  // seam: a FaultInjectingEnv makes a failing disk); the lock is flock(2) on
  // a descriptor of the OS's own.
  static Result<std::unique_ptr<DataDirLock>> Acquire(const std::string& data_dir,
                                                      FileEnv& env = *FileEnv::Default());
  ~DataDirLock();  // releases the lock (the file stays)
  DataDirLock(const DataDirLock&) = delete;
  DataDirLock& operator=(const DataDirLock&) = delete;

  const std::string& path() const { return path_; }

 private:
  DataDirLock(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
  const int fd_;
  const std::string path_;
};

}  // namespace headrace::broker
