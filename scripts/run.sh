#!/usr/bin/env bash
# Sets up what a broker needs (scripts/setup.sh: no test toolchain, no C++
# tests) and starts the default single-node broker (data in ./data,
# listening on 127.0.0.1:9092). Extra arguments go to `headrace broker`.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
exec "${PYTHON:-python3}" -m headrace broker --data-dir "${HEADRACE_DATA_DIR:-./data}" "$@"
