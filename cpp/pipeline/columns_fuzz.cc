// libFuzzer target: RecordColumns::Append on arbitrary Fetch record bytes.
// The first byte picks read_committed and headers; the bytes after it are
// the records. Any input must end in rows or a Corruption/Unsupported
// status, never a crash or sanitizer report; the export must agree with
// the row count. Built only with HEADRACE_BUILD_FUZZ=ON; run by scripts/fuzz.sh.
#include <cstdint>
#include <cstdlib>

#include "headrace/record_columns.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const bool committed = data[0] & 1, headers = data[0] & 2;
  headrace::RecordColumns cols("t", 0, headers);
  headrace::AbortedTransaction aborted[] = {{0, 0}, {1, 5}};
  auto res = cols.Append({data + 1, size - 1}, 0, INT64_MAX, committed, aborted);
  if (res.ok() && res->rows != cols.num_rows()) abort();
  ArrowArray a;
  const int64_t rows = cols.num_rows();
  cols.Export(&a);
  if (a.length != rows) abort();
  a.release(&a);
  return 0;
}
