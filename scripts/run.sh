#!/usr/bin/env bash
# Sets everything up and starts the default single-node broker
# (data in ./data, listening on 127.0.0.1:9092).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
exec headrace broker --data-dir "${HEADRACE_DATA_DIR:-./data}" "$@"
