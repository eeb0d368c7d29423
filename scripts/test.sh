#!/usr/bin/env bash
# The whole test suite: set up, C++ unit tests (ctest), fuzz smoke run,
# then the Python tests against real broker processes.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
echo "== C++ unit tests (ctest)"
ctest --test-dir build/py --output-on-failure -j2
if [ -x scripts/fuzz.sh ]; then
  echo "== fuzz smoke run"
  scripts/fuzz.sh
fi
echo "== Python tests (pytest)"
PY=${PYTHON:-python3}
"$PY" -m pytest "$@"
