// libFuzzer target: batch validation (ValidateBatch's fused CRC + skip-only
// record check) against the record decoder's full walk. The input becomes
// one RecordBatch v2 whose framing the fuzzer cannot break by accident:
// length, magic and CRC are fixed up, compression is cleared, so every input
// reaches the record walk. A crash, a sanitizer report, or a batch that
// validates but does not decode into exactly record_count records (abort) is
// a finding. Built only with HEADRACE_BUILD_FUZZ=ON; run by scripts/fuzz.sh.
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "headrace/record_batch.h"
#include "log/coding.h"
#include "log/record_batch_internal.h"

namespace hr = headrace;
namespace batch = headrace::batch;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < static_cast<size_t>(hr::kBatchHeaderSize)) return 0;
  std::vector<uint8_t> b(data, data + size);
  hr::coding::StoreBE32(b.data() + batch::kLengthPos,
                        static_cast<uint32_t>(size - hr::kBatchLogOverhead));
  b[batch::kMagicPos] = hr::kMagicV2;
  uint16_t attrs = hr::coding::LoadBE16(b.data() + batch::kAttributesPos);
  attrs &= static_cast<uint16_t>(~(batch::kCompressionMask | 0x20));  // uncompressed, not control
  hr::coding::StoreBE16(b.data() + batch::kAttributesPos, attrs);
  // Small record counts, so that the fuzzer finds valid walks.
  b[batch::kRecordCountPos] = 0;
  b[batch::kRecordCountPos + 1] = 0;
  b[batch::kRecordCountPos + 2] = 0;
  hr::coding::StoreBE32(b.data() + batch::kCrcPos, batch::ComputeCrc(b));

  auto header = hr::ValidateBatch(b);
  auto records = hr::DecodeRecords(b);
  if (header.ok()) {
    if (!records.ok()) abort();  // validated but the decoder refuses it
    if (records->size() != static_cast<size_t>(header->record_count)) abort();
  }
  return 0;
}
