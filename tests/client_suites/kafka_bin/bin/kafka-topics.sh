#!/bin/sh
# kafka-topics.sh for librdkafka's test suite (KAFKA_PATH): ../kafka_tools.py.
exec "${HEADRACE_SUITE_PYTHON:-python3}" "$(dirname "$0")/../kafka_tools.py" topics "$@"
