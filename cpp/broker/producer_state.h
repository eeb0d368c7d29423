// Per-partition producer state (idempotent and transactional producers).
//
// Placeholder: empty until idempotence lands. It will map producer id ->
// {epoch, last sequence numbers of the last 5 batches, their offsets,
// first offset of an open transaction}, checked and updated by
// Partition::Append under Partition's append mutex, snapshotted to
// <partition dir>/<offset>.snapshot and rebuilt from the log on recovery.
// The first unstable offset it tracks will bound read_committed fetches
// (the last stable offset).
#pragma once

namespace headrace::broker {

struct ProducerStateTable {};

}  // namespace headrace::broker
