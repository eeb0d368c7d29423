#!/usr/bin/env bash
# Installs every system and Python package headrace needs, then builds and
# installs the package (C++ core + binding) into the current Python.
# Idempotent: a second run only rebuilds what changed (build/py).
set -euo pipefail
cd "$(dirname "$0")/.."

APT_PACKAGES=(g++ cmake ninja-build pkg-config liburing-dev libgtest-dev libgmock-dev
              libbenchmark-dev librdkafka-dev kcat clang libclang-rt-14-dev
              zookeeper   # clusters: tests/test_cluster_*.py, `headrace cluster up`
              zlib1g-dev libsnappy-dev liblz4-dev libzstd-dev  # record batch codecs
              iproute2 nftables  # network partitions between brokers: tests/test_cluster_faults.py
              libssl-dev openssl  # TLS listeners (cpp/net/tls_*.cc), test certificates
              nlohmann-json3-dev  # SASL: JWT/JWKS JSON (cpp/broker/sasl)
              chromium chromium-driver)  # the web console in a headless browser: tests/test_console.py
# Spark (tests/test_spark_*.py) and ZooKeeper need a Java 17+ runtime; this
# machine kind ships OpenJDK 17, install it only where it is missing. Debian's
# zookeeper package is only run as a child process (headrace.cluster.
# zookeeper_server), never as the system service.
command -v java >/dev/null 2>&1 || APT_PACKAGES+=(openjdk-17-jre-headless)
missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing Debian packages: ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi

PY=${PYTHON:-python3}
"$PY" -m pip install -q --disable-pip-version-check -r requirements-dev.txt
echo "setup: building headrace (C++ core, binding, tests)"
"$PY" -m pip install -q --disable-pip-version-check --no-build-isolation --no-deps .
