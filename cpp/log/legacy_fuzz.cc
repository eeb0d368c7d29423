// libFuzzer target: the format v0/v1 converter (legacy_message_set.h) on
// untrusted message sets. Each whole top-level entry's CRC is fixed up and
// its magic forced to 0/1 so that inputs reach the message parser and the
// wrappers' decompression. A crash, a sanitizer report, or a conversion
// that succeeds but yields a batch that does not validate and decode into
// exactly record_count records (abort) is a finding. Built only with
// HEADRACE_BUILD_FUZZ=ON; run by scripts/fuzz.sh.
#include <zlib.h>

#include <cstdint>
#include <cstdlib>
#include <vector>

#include "headrace/record_batch.h"
#include "log/coding.h"
#include "log/legacy_message_set.h"

namespace hr = headrace;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<uint8_t> set(data, data + size);
  size_t pos = 0;
  while (set.size() - pos >= 12 + 14) {
    const uint32_t n = hr::coding::LoadBE32(set.data() + pos + 8);
    if (n < 14 || n > set.size() - pos - 12) break;
    uint8_t* m = set.data() + pos + 12;
    m[4] &= 1;  // magic 0 or 1
    hr::coding::StoreBE32(m, static_cast<uint32_t>(crc32(0L, m + 4, n - 4)));
    pos += 12 + n;
  }
  auto batch = hr::ConvertLegacyMessageSet(set);
  if (!batch.ok()) return 0;
  std::span<const uint8_t> b(reinterpret_cast<const uint8_t*>(batch->data()), batch->size());
  auto header = hr::ValidateBatch(b);
  if (!header.ok()) abort();  // converted into something the log refuses
  auto records = hr::DecodeRecords(b);
  if (!records.ok() || records->size() != static_cast<size_t>(header->record_count)) abort();
  return 0;
}
