# headrace._core.inspect_batches: the batches of a segment file's bytes, for
# `headrace log dump`. Reads nothing itself; the caller passes the bytes.

_COMPRESSION_NAMES = {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}
# A control record's key: int16 version, int16 type (KIP-98 markers).
_CONTROL_TYPES = {0: "ABORT", 1: "COMMIT"}


def _varint(data, int pos):
    """(zigzag-decoded varint at pos, position after it)."""
    cdef uint64_t z = 0
    cdef int shift = 0
    while True:
        b = data[pos]
        pos += 1
        z |= <uint64_t>(b & 0x7F) << shift
        if not b & 0x80:
            break
        shift += 7
        if shift > 63:
            raise ValueError("varint too long")
    return <int64_t>((z >> 1) ^ (-(z & 1))), pos


def _control_marker(data, int pos):
    """(marker type, coordinator epoch) of the control batch at `pos`, read
    from its first record (DecodeRecords leaves control batches out): key =
    int16 version, int16 type; value = int16 version, int32 coordinator
    epoch. What cannot be read comes back as None."""
    import struct
    kind = epoch = None
    try:
        p = pos + kBatchHeaderSize          # the first record
        _, p = _varint(data, p)             # record length
        p += 1                              # attributes
        _, p = _varint(data, p)             # timestamp delta
        _, p = _varint(data, p)             # offset delta
        klen, p = _varint(data, p)
        key = bytes(data[p:p + klen]) if klen >= 0 else None
        p += max(klen, 0)
        vlen, p = _varint(data, p)
        value = bytes(data[p:p + vlen]) if vlen >= 0 else None
    except (IndexError, ValueError):
        return None, None
    if key is not None and len(key) >= 4:
        t = struct.unpack_from(">h", key, 2)[0]
        kind = _CONTROL_TYPES.get(t, f"UNKNOWN({t})")
    if value is not None and len(value) >= 6:
        epoch = struct.unpack_from(">i", value, 2)[0]
    return kind, epoch


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
        "marker_type": None,
        "coordinator_epoch": None,
    }


def inspect_batches(data, bint with_records=True):
    """Walks back-to-back RecordBatch v2 bytes (a segment file's content).

    Returns (batches, tail): one dict per batch with its header fields,
    `valid` (full validation incl. CRC32C), `error` (the reason when not
    valid) and, when `with_records` and the batch is a valid data batch,
    `records` (decompressed when the batch is compressed) as (offset, key,
    value, headers, timestamp) tuples. A valid
    uncompressed control batch has no `records` but `marker_type` ("COMMIT"
    or "ABORT") and `coordinator_epoch` (None elsewhere). `tail` is
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
        st = MoveResult(ValidateStoredBatch(span[uint8_t](base + pos, <size_t>h.total_size())), &h)
        batch["valid"] = bool(st.ok())
        batch["error"] = None if st.ok() else st.message().decode("utf-8", "replace")
        if st.ok() and batch["control"] and batch["compression"] == "none":
            batch["marker_type"], batch["coordinator_epoch"] = _control_marker(buf, pos)
        elif with_records and st.ok() and not batch["control"]:
            recs.clear()
            st = MoveResult(DecodeRecords(span[uint8_t](base + pos, <size_t>h.total_size())), &recs)
            if st.ok():
                batch["records"] = [_record_tuple(recs[i]) for i in range(recs.size())]
        batches.append(batch)
        pos += batch["size"]
    return batches, tail
