#!/usr/bin/env bash
# Fuzz smoke runs of the Kafka protocol decoder (cpp/protocol/decode_fuzz.cc),
# of record batch validation vs decoding (cpp/log/batch_fuzz.cc) and of the
# record batch codecs on untrusted bytes (cpp/log/compression_fuzz.cc).
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
  log_compression_fuzz
CORPUS="$BUILD/protocol_corpus"
mkdir -p "$CORPUS"
for f in cpp/protocol/testdata/*.hex; do
  python3 -c 'import sys; open(sys.argv[2], "wb").write(bytes.fromhex(open(sys.argv[1]).read().strip()))' \
    "$f" "$CORPUS/$(basename "$f" .hex).bin"
done
FUZZER=$(find "$BUILD" -name protocol_decode_fuzz -type f -perm -u+x | head -1)
echo "== fuzzing the protocol decoder ($RUNS runs)"
# New corpus entries go to a scratch dir so the seeds stay as committed.
SCRATCH=$(mktemp -d)
trap 'rm -rf "$SCRATCH"' EXIT
"$FUZZER" -runs="$RUNS" -print_funcs=0 -max_len=4096 -timeout=10 -rss_limit_mb=2048 \
  -print_final_stats=1 -artifact_prefix="$BUILD/" "$SCRATCH" "$CORPUS"
BATCH_FUZZER=$(find "$BUILD" -name log_batch_fuzz -type f -perm -u+x | head -1)
echo "== fuzzing record batch validation ($((RUNS / 2)) runs)"
BATCH_SCRATCH=$(mktemp -d)
trap 'rm -rf "$SCRATCH" "$BATCH_SCRATCH"' EXIT
"$BATCH_FUZZER" -runs="$((RUNS / 2))" -print_funcs=0 -max_len=2048 -timeout=10 \
  -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$BUILD/" "$BATCH_SCRATCH" \
  cpp/log/testdata/batch_fuzz
CODEC_FUZZER=$(find "$BUILD" -name log_compression_fuzz -type f -perm -u+x | head -1)
echo "== fuzzing the codecs ($((RUNS / 2)) runs)"
CODEC_SCRATCH=$(mktemp -d)
trap 'rm -rf "$SCRATCH" "$BATCH_SCRATCH" "$CODEC_SCRATCH"' EXIT
"$CODEC_FUZZER" -runs="$((RUNS / 2))" -print_funcs=0 -max_len=4096 -timeout=10 \
  -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$BUILD/" "$CODEC_SCRATCH"
