#!/usr/bin/env bash
# Fuzz smoke runs of the Kafka protocol decoder (cpp/protocol/decode_fuzz.cc),
# of record batch validation vs decoding (cpp/log/batch_fuzz.cc) and of the
# record batch codecs on untrusted bytes (cpp/log/compression_fuzz.cc) and
# of the format v0/v1 converter (cpp/log/legacy_fuzz.cc) and of the decoder of
# fetched records into Arrow columns (cpp/pipeline/columns_fuzz.cc).
# Configures a separate clang build in build/fuzz with HEADRACE_BUILD_FUZZ=ON
# (ASan + UBSan + libFuzzer), builds only the fuzz targets, seeds the
# decoder with the captured client frames in cpp/protocol/testdata and runs a
# bounded number of inputs each (the batch target starts from the inputs that
# once found a bug, cpp/log/testdata/batch_fuzz). Exits non-zero on a crash, sanitizer report
# or timeout. Env: FUZZ_RUNS (default 200000; the batch target gets half),
# FUZZ_JOBS (build parallelism, default 2).
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${FUZZ_RUNS:-200000}
BUILD=build/fuzz
CC_BIN=$(command -v clang || command -v clang-14 || true)
CXX_BIN=$(command -v clang++ || command -v clang++-14 || true)
if [ -z "$CXX_BIN" ]; then
  echo "fuzz.sh: clang++ not found" >&2
  exit 1
fi
SAN="-fsanitize=address,undefined,fuzzer-no-link -fno-sanitize-recover=undefined"
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=None \
  -DCMAKE_C_COMPILER="$CC_BIN" -DCMAKE_CXX_COMPILER="$CXX_BIN" \
  -DCMAKE_C_FLAGS="-O1 -g0 $SAN" -DCMAKE_CXX_FLAGS="-O1 -g0 $SAN" \
  -DHEADRACE_BUILD_FUZZ=ON -DHEADRACE_BUILD_TESTS=OFF >/dev/null
cmake --build "$BUILD" -j"${FUZZ_JOBS:-2}" --target protocol_decode_fuzz log_batch_fuzz \
  log_compression_fuzz log_legacy_fuzz pipeline_columns_fuzz
CORPUS="$BUILD/protocol_corpus"
mkdir -p "$CORPUS"
for f in cpp/protocol/testdata/*.hex; do
  python3 -c 'import sys; open(sys.argv[2], "wb").write(bytes.fromhex(open(sys.argv[1]).read().strip()))' \
    "$f" "$CORPUS/$(basename "$f" .hex).bin"
done
# New corpus entries go to scratch dirs so the seeds stay as committed.
SCRATCH_ROOT=$(mktemp -d)
trap 'rm -rf "$SCRATCH_ROOT"' EXIT

# fuzz TARGET WHAT RUNS MAX_LEN [SEED_DIR...]: one bounded libFuzzer run.
fuzz() {
  local target=$1 what=$2 runs=$3 max_len=$4
  shift 4
  local bin
  bin=$(find "$BUILD" -name "$target" -type f -perm -u+x | head -1)
  echo "== fuzzing $what ($runs runs)"
  mkdir -p "$SCRATCH_ROOT/$target"
  "$bin" -runs="$runs" -print_funcs=0 -max_len="$max_len" -timeout=10 -rss_limit_mb=2048 \
    -print_final_stats=1 -artifact_prefix="$BUILD/" "$SCRATCH_ROOT/$target" "$@"
}

fuzz protocol_decode_fuzz "the protocol decoder" "$RUNS" 4096 "$CORPUS"
fuzz log_batch_fuzz "record batch validation" "$((RUNS / 2))" 2048 cpp/log/testdata/batch_fuzz
fuzz log_compression_fuzz "the codecs" "$((RUNS / 2))" 4096
fuzz log_legacy_fuzz "the format v0/v1 converter" "$((RUNS / 2))" 4096 cpp/log/testdata/legacy_fuzz
fuzz pipeline_columns_fuzz "the decoder into Arrow columns" "$((RUNS / 2))" 4096 \
  cpp/log/testdata/batch_fuzz
