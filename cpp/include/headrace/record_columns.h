// Fetched record batches decoded straight into Arrow columns, handed over
// through the Arrow C data interface (headrace/arrow_c.h): the reading half
// of the pipeline edge (docs/spark.md, "How the source reads"). No object
// per record: each record appends to a handful of column buffers, and an
// export moves those buffers into an ArrowArray that owns them.
//
// The columns are those of Spark's Kafka source, in its order:
//   key binary (null when absent), value binary (null for a tombstone),
//   topic utf8, partition int32, offset int64,
//   timestamp int64 microseconds (null when the record has none, < 0),
//   timestampType int32 (0 CreateTime, 1 LogAppendTime),
//   headers list<struct<key: utf8, value: binary>> (only when asked).
// Every field nullable, as Spark's schema says; the consumer supplies that
// schema when importing (pyarrow: RecordBatch._import_from_c(ptr, schema)).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "headrace/arrow_c.h"
#include "headrace/record_batch.h"  // AbortedTransaction
#include "headrace/status.h"

namespace headrace {

// What one Append learnt besides the rows.
struct AppendResult {
  // Where the next fetch starts: one past the last offset of the last whole
  // batch seen (control and skipped batches included), or `from` when the
  // bytes held no whole batch.
  int64_t next_offset = 0;
  int64_t rows = 0;  // rows appended
};

class RecordColumns {
 public:
  RecordColumns(std::string topic, int32_t partition, bool include_headers);
  ~RecordColumns();
  RecordColumns(const RecordColumns&) = delete;
  RecordColumns& operator=(const RecordColumns&) = delete;

  // Appends the records with from <= offset < until of `records` (a Fetch
  // response partition's records: back-to-back RecordBatch v2 of any codec,
  // the last possibly cut short, which ends the data). Control batches are
  // skipped; with `read_committed`, so are the batches of aborted
  // transactions, found from `aborted` (the same response's list) as Kafka's
  // consumer does. Each batch is checked (length, CRC, record structure)
  // before any of its rows is appended.
  // Errors: Corruption for a bad batch (rows of the batches before it stay
  // appended), Unsupported for message format v0/v1, TooLarge when a
  // column would pass 2 GiB (export more often).
  Result<AppendResult> Append(std::span<const uint8_t> records, int64_t from, int64_t until,
                              bool read_committed, std::span<const AbortedTransaction> aborted);

  int64_t num_rows() const;
  // Bytes held in the column buffers (keys, values, headers and fixed columns).
  int64_t num_bytes() const;

  // Moves the rows collected so far into *out, a struct array of the columns
  // above (length = num_rows()), whose release callback frees them; this
  // object starts empty again.
  void Export(ArrowArray* out);

 // The column buffers (defined in cpp/pipeline/columns.h, not part of the API).
  struct Columns;

 private:
  Status AppendBatch(std::span<const uint8_t> batch, int64_t from, int64_t until);
  std::string topic_;
  int32_t partition_;
  bool include_headers_;
  std::unique_ptr<Columns> cols_;
  std::string scratch_;  // decompressed records sections
};

}  // namespace headrace
