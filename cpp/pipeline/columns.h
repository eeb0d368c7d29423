// The column buffers RecordColumns appends to, in Arrow's layouts: a
// validity bitmap (LSB first, 1 = valid), int32 offsets and a data buffer
// for variable-width columns, plain arrays for fixed-width ones. Shared by
// the decoder (record_columns.cc) and the export (arrow_export.cc).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "headrace/arrow_c.h"
#include "headrace/record_columns.h"

namespace headrace::pipeline {

// A validity bitmap that counts its nulls.
struct Validity {
  std::vector<uint8_t> bits;
  int64_t length = 0;
  int64_t nulls = 0;
  void Append(bool valid) {
    if ((length & 7) == 0) bits.push_back(0);
    if (valid) bits.back() |= static_cast<uint8_t>(1u << (length & 7));
    else ++nulls;
    ++length;
  }
};

// A binary or utf8 column: validity, offsets (length + 1), data.
struct VarColumn {
  Validity valid;
  std::vector<int32_t> offsets{0};
  std::string data;
  void Append(const uint8_t* p, int32_t len) {  // len -1 = null
    valid.Append(len >= 0);
    if (len > 0) data.append(reinterpret_cast<const char*>(p), static_cast<size_t>(len));
    offsets.push_back(static_cast<int32_t>(data.size()));
  }
  int64_t bytes() const { return static_cast<int64_t>(data.size() + offsets.size() * 4); }
};

}  // namespace headrace::pipeline

namespace headrace {

// Every column of RecordColumns (headrace/record_columns.h).
struct RecordColumns::Columns {
  pipeline::VarColumn key, value;
  std::vector<int64_t> offset;
  std::vector<int64_t> timestamp_us;
  pipeline::Validity timestamp_valid;
  std::vector<int32_t> timestamp_type;
  // headers: list offsets into the entries; entries are (key utf8, value binary)
  std::vector<int32_t> header_offsets{0};
  pipeline::VarColumn header_key, header_value;
  // topic and partition are the same for every row: filled at export
  std::vector<int32_t> topic_offsets;
  std::string topic_data;
  std::vector<int32_t> partition;

  int64_t rows() const { return static_cast<int64_t>(offset.size()); }
};

namespace pipeline {
// Fills *out with the columns of `cols` (moved out; include_headers says
// whether the headers column is there). See arrow_export.cc.
void ExportColumns(std::unique_ptr<RecordColumns::Columns> cols, const std::string& topic,
                   int32_t partition, bool include_headers, ArrowArray* out);
}  // namespace pipeline

}  // namespace headrace
