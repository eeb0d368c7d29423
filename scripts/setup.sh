#!/usr/bin/env bash
# Installs the system and Python packages headrace needs, then builds and
# installs the package (C++ core + binding) into the current Python.
#   scripts/setup.sh          what the broker needs (scripts/run.sh): compiler,
#                             CMake, Ninja, liburing, compression and OpenSSL
#                             headers, the runtime PyPI packages; no C++ tests
#   scripts/setup.sh --test   everything the test suite needs too
#                             (scripts/test.sh): GoogleTest, google-benchmark,
#                             clang (fuzzing), kcat, librdkafka, ZooKeeper,
#                             Java (Spark), iproute2/nftables, every PyPI test
#                             package; builds the C++ unit tests (ctest)
#   scripts/setup.sh --client-suites   (with or without --test) also what
#                             the clients' own test suites need
#                             (tests/client_suites/run.py): a deb-src entry
#                             for Debian bookworm (apt-get source librdkafka)
#                             and librdkafka's build dependencies
# Idempotent: a second run only rebuilds what changed (build/py).
set -euo pipefail
cd "$(dirname "$0")/.."

MODE=run
CLIENT_SUITES=0
for arg in "$@"; do
  case "$arg" in
    --test) MODE=test ;;
    --client-suites) CLIENT_SUITES=1 ;;
    *) echo "setup: unknown flag $arg" >&2; exit 2 ;;
  esac
done

# What building and running a broker needs.
APT_PACKAGES=(g++ cmake ninja-build pkg-config liburing-dev
              zlib1g-dev libsnappy-dev liblz4-dev libzstd-dev  # record batch codecs
              libssl-dev  # TLS listeners
              nlohmann-json3-dev  # JSON (cpp/broker/base/json.cc), header-only
              librdkafka-dev)  # rdkafka.h for the CLI's bulk producer (cpp/cli/)
if [ "$MODE" = test ]; then
  APT_PACKAGES+=(libgtest-dev libgmock-dev libbenchmark-dev kcat clang
                 libclang-rt-14-dev
                 zookeeper   # clusters: tests/test_cluster_*.py, `headrace cluster up`
                 iproute2 nftables  # network partitions: tests/test_cluster_faults.py
                 python3-venv  # the wheel test (tests/test_wheel.py)
                 openssl  # test certificates (tests/test_security_tls.py)
                 chromium chromium-driver)  # the web console in a headless browser: tests/test_console.py
  # Spark (tests/test_spark_*.py) and ZooKeeper need a Java 17+ runtime; this
  # machine kind ships OpenJDK 17, install it only where it is missing.
  # Debian's zookeeper package is only run as a child process
  # (headrace.cluster.zookeeper_server), never as the system service.
  command -v java >/dev/null 2>&1 || APT_PACKAGES+=(openjdk-17-jre-headless)
fi
APT_UPDATE=0
if [ "$CLIENT_SUITES" = 1 ]; then
  # librdkafka's test suite comes from Debian's source package and is built
  # in-tree (configure, make): dpkg-dev unpacks it; the codec/TLS headers
  # are librdkafka's build dependencies.
  APT_PACKAGES+=(dpkg-dev make libssl-dev zlib1g-dev libzstd-dev liblz4-dev libsasl2-dev
                 rapidjson-dev)  # its stats and transactional-consumer tests need RapidJSON
  DEB_SRC=/etc/apt/sources.list.d/headrace-deb-src.sources
  if [ ! -f "$DEB_SRC" ]; then
    printf '%s\n' 'Types: deb-src' 'URIs: http://deb.debian.org/debian' 'Suites: bookworm' \
      'Components: main' 'Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg' > "$DEB_SRC"
    APT_UPDATE=1
  fi
fi
missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
[ ${#missing[@]} -gt 0 ] || [ "$APT_UPDATE" = 0 ] || apt-get update -qq
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing Debian packages: ${missing[*]}"
  apt-get update -qq
  # The run command takes no recommended extras; the test toolchain as before.
  NO_RECOMMENDS=()
  [ "$MODE" = run ] && NO_RECOMMENDS=(--no-install-recommends)
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${NO_RECOMMENDS[@]}" \
    "${missing[@]}" >/dev/null
fi

PY=${PYTHON:-python3}
PIP=("$PY" -m pip install -q --disable-pip-version-check)
if [ "$MODE" = test ]; then
  "${PIP[@]}" -r requirements-dev.txt
  echo "setup: building headrace (C++ core, binding, C++ unit tests)"
  "${PIP[@]}" --no-build-isolation --no-deps \
    --config-settings=cmake.define.HEADRACE_BUILD_TESTS=ON .
else
  "${PIP[@]}" -r requirements-run.txt
  echo "setup: building headrace (C++ core, binding)"
  "${PIP[@]}" --no-build-isolation --no-deps \
    --config-settings=cmake.define.HEADRACE_BUILD_TESTS=OFF .
fi
