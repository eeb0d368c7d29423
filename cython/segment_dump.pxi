# headrace._core.inspect_batches: the batches of a segment file's bytes, for
# `headrace log dump`. Reads nothing itself; the caller passes the bytes.

_COMPRESSION_NAMES = {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}


cdef dict _batch_dict(const BatchHeader& h, int64_t position):
    return {
        "position": position,
        "base_offset": h.base_offset.value(),
        "last_offset": h.last_offset().value(),
        "record_count": h.record_count,
        "size": h.total_size(),
        "magic": h.magic,
        "crc": h.crc,
        "compression": _COMPRESSION_NAMES.get(h.attributes & 7, str(h.attributes & 7)),
        "timestamp_type": "LogAppendTime" if h.attributes & 8 else "CreateTime",
        "transactional": bool(h.is_transactional()),
        "control": bool(h.is_control()),
        "base_timestamp": h.base_timestamp.value(),
        "max_timestamp": h.max_timestamp.value(),
        "partition_leader_epoch": h.partition_leader_epoch,
        "producer_id": h.producer_id,
        "producer_epoch": h.producer_epoch,
        "base_sequence": h.base_sequence,
    }


def inspect_batches(data, bint with_records=True):
    """Walks back-to-back RecordBatch v2 bytes (a segment file's content).

    Returns (batches, tail): one dict per batch with its header fields,
    `valid` (full validation incl. CRC32C), `error` (the reason when not
    valid) and, when `with_records` and the batch is valid and uncompressed,
    `records` as (offset, key, value, headers, timestamp) tuples; `tail` is
    None or a description of bytes at the end that do not form a batch.
    """
    cdef bytes buf = bytes(data)
    cdef uint8_t* base = <uint8_t*><const char*>buf
    cdef int64_t n = len(buf)
    cdef int64_t pos = 0
    cdef BatchHeader h
    cdef vector[CRecord] recs
    cdef CStatus st
    cdef size_t i
    batches = []
    tail = None
    while pos < n:
        st = MoveResult(ParseBatchHeader(span[uint8_t](base + pos, <size_t>(n - pos))), &h)
        if not st.ok():
            tail = f"{n - pos} bytes at position {pos} are not a whole batch: " \
                   + st.message().decode("utf-8", "replace")
            break
        batch = _batch_dict(h, pos)
        st = MoveResult(ValidateBatch(span[uint8_t](base + pos, <size_t>h.total_size())), &h)
        batch["valid"] = bool(st.ok())
        batch["error"] = None if st.ok() else st.message().decode("utf-8", "replace")
        if with_records and st.ok() and batch["compression"] == "none":
            recs.clear()
            st = MoveResult(DecodeRecords(span[uint8_t](base + pos, <size_t>h.total_size())), &recs)
            if st.ok():
                batch["records"] = [_record_tuple(recs[i]) for i in range(recs.size())]
        batches.append(batch)
        pos += batch["size"]
    return batches, tail
