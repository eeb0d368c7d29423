#!/usr/bin/env bash
# The whole test suite: the include rules (scripts/check_includes.py), set up
# everything (scripts/setup.sh --test: the test
# toolchain, the C++ unit tests built into build/py), C++ unit tests (ctest),
# fuzz smoke run, then the Python tests against real broker processes.
set -euo pipefail
cd "$(dirname "$0")/.."
echo "== include rules (cpp/rooms.toml)"
python3 scripts/check_includes.py
scripts/setup.sh --test
echo "== C++ unit tests (ctest)"
ctest --test-dir build/py --output-on-failure -j2
if [ -x scripts/fuzz.sh ]; then
  echo "== fuzz smoke run"
  scripts/fuzz.sh
fi
echo "== Python tests (pytest)"
PY=${PYTHON:-python3}
"$PY" -m pytest "$@"
