"""Runs client libraries' OWN test suites against a 3-broker headrace cluster.

    python tests/client_suites/run.py [--suite kafka-python|librdkafka|all]
                                      [--cache DIR] [--brokers N]

Suites (fetched offline-friendly: PyPI and the Debian mirror only):
  kafka-python  the sdist of kafka-python 3.0.12 (pip download --no-binary)
                ships test/integration; its fixtures accept an external
                broker (KAFKA_URI); kafka_python_plugin.py makes that broker
                our cluster, with replication factor 3 for every test topic.
  librdkafka    Debian bookworm's source package (apt-get source librdkafka,
                2.0.2, needs a deb-src entry: scripts/setup.sh
                --client-suites) builds tests/test-runner in-tree; test.conf
                names the cluster's brokers.

Each suite gets a fresh cluster: ZooKeeper + N brokers (default 3, node ids
0..N-1, headrace.EmbeddedCluster) with the broker settings of the suite's own test
cluster (cluster_settings): 4 partitions and replication factor min(3, N)
for auto-created topics, an ACL authorizer open when no ACL applies, and
for kafka-python its short group timeouts.

Writes CACHE/results.json (the last result of each suite, by suite name)
and CACHE/results.md (this run's table: per suite ran, passed, failed,
skipped; each failing test) and prints the table. Exit status 0 when
every suite ran to the end (failing tests included), 1 when one could not be
fetched, built or run.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent

KAFKA_PYTHON_VERSION = "3.0.12"
KAFKA_VERSION_CLAIMED = "3.9.0"  # what the suites are told the broker is

# kafka-python: files left out, with the reason (docs/compatibility.md).
KAFKA_PYTHON_NOT_RUN = {
    "test/integration/test_sasl_integration.py":
        "its fixture starts its own Kafka with a SASL listener and JAAS users",
    "test/integration/test_ssl_integration.py":
        "its fixture starts its own Kafka with a JKS keystore SSL listener",
}
# librdkafka: test-runner flags. -L: no local (mock-cluster, broker-less)
# tests; -K: not the tests the suite marks as having known issues; -E: no
# sockem (socket emulation) tests; -Q: quick mode; -r: JSON report.
LIBRDKAFKA_FLAGS = ["-L", "-K", "-E", "-Q", "-r"]
# librdkafka's tests run Kafka's kafka-topics.sh / kafka-acls.sh from
# $KAFKA_PATH/bin (with --bootstrap-server $BROKERS): kafka_bin/ has both,
# carried out by headrace's CLI (kafka_bin/kafka_tools.py).
KAFKA_SCRIPTS_ENV = {"KAFKA_PATH": str(HERE / "kafka_bin"), "HEADRACE_SUITE_PYTHON": sys.executable}


def cluster_settings(suite: str, brokers: int) -> dict[str, str]:
    """The broker settings of each suite's own test cluster, where headrace
    has the key. kafka-python: its servers/resources kafka.properties
    (auto-created topics with 4 partitions and RF = the fixture's replicas,
    an ACL authorizer open when no ACL applies, session timeouts down to
    1 s, no initial rebalance delay). librdkafka: trivup's broker defaults
    (4 partitions, RF min(3, brokers)) and an authorizer (0081_admin's ACL
    sub-tests expect one: without it CreateAcls answers SECURITY_DISABLED).
    """
    common = {"num.partitions": "4", "default.replication.factor": str(min(3, brokers)),
              "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
              "allow.everyone.if.no.acl.found": "true"}
    if suite == "kafka-python":
        return {**common, "group.min.session.timeout.ms": "1000",
                "group.initial.rebalance.delay.ms": "0"}
    return common


def log(msg: str) -> None:
    print(f"client-suites: {msg}", flush=True)


def run(cmd, **kw) -> subprocess.CompletedProcess:
    log("$ " + " ".join(str(c) for c in cmd))
    return subprocess.run(cmd, check=True, **kw)


# ---------------------------------------------------------------- fetching

def fetch_kafka_python(cache: Path) -> Path:
    src = cache / f"kafka_python-{KAFKA_PYTHON_VERSION}"
    if (src / "test" / "integration").is_dir():
        return src
    cache.mkdir(parents=True, exist_ok=True)
    run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-binary", ":all:",
         f"kafka-python=={KAFKA_PYTHON_VERSION}", "-d", str(cache)])
    with tarfile.open(cache / f"kafka_python-{KAFKA_PYTHON_VERSION}.tar.gz") as tar:
        tar.extractall(cache, filter="data")
    return src


def fetch_librdkafka(cache: Path) -> Path:
    """apt-get source librdkafka, then an in-tree build of tests/test-runner."""
    top = cache / "librdkafka"
    found = sorted(top.glob("librdkafka-*/tests")) if top.is_dir() else []
    if not found:
        top.mkdir(parents=True, exist_ok=True)
        run(["apt-get", "source", "-q", "librdkafka"], cwd=top)
        found = sorted(top.glob("librdkafka-*/tests"))
    tests = found[-1]
    if (tests / "test-runner").exists():
        return tests
    src = tests.parent
    env = dict(os.environ)
    if shutil.which("ccache"):
        env.update(CC="ccache gcc", CXX="ccache g++")
    build_log = top / "build.log"
    log(f"building librdkafka and its test runner (output: {build_log})")
    with open(build_log, "w") as out:
        if not (src / "Makefile.config").exists():
            run(["./configure", "--disable-gssapi"], cwd=src, env=env, stdout=out,
                stderr=subprocess.STDOUT)
        run(["make", "-j2", "libs"], cwd=src, env=env, stdout=out, stderr=subprocess.STDOUT)
        run(["make", "-j2", "-C", "tests", "test-runner"], cwd=src, env=env, stdout=out,
            stderr=subprocess.STDOUT)
    return tests


# ----------------------------------------------------------------- running

def run_kafka_python(src: Path, work: Path, bootstrap: str, replicas: int,
                     timeout_s: int) -> dict:
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    shutil.copytree(src / "test", work / "test")
    (work / "test" / "__init__.py").touch()  # `test` must not resolve to the stdlib's
    shutil.copy(HERE / "kafka_python_service_stub.py", work / "test" / "service.py")
    shutil.copy(HERE / "kafka_python_plugin.py", work / "headrace_kp_plugin.py")
    (work / "kafka-root").mkdir()  # the fixture insists the Kafka install dir exists
    first = bootstrap.split(",")[0]
    env = dict(os.environ, KAFKA_VERSION=KAFKA_VERSION_CLAIMED,
               KAFKA_ROOT=str(work / "kafka-root"), KAFKA_URI=f"PLAINTEXT://{first}",
               HEADRACE_SUITE_BOOTSTRAP=bootstrap, HEADRACE_SUITE_REPLICAS=str(replicas),
               PYTHONPATH=str(work))
    junit = work / "junit.xml"
    cmd = [sys.executable, "-m", "pytest", "-p", "headrace_kp_plugin", "-q", "-p", "no:cacheprovider",
           "--timeout=120", "-o", "log_level=WARNING", "-o", "addopts=", f"--junitxml={junit}",
           "test/integration"]
    for path in KAFKA_PYTHON_NOT_RUN:
        cmd.append(f"--ignore={path}")
    log("kafka-python: " + " ".join(cmd[1:]))
    with open(work / "pytest.log", "w") as out:
        subprocess.run(cmd, cwd=work, env=env, stdout=out, stderr=subprocess.STDOUT,
                       timeout=timeout_s)
    result = {"suite": f"kafka-python {KAFKA_PYTHON_VERSION} (test/integration)",
              "ran": 0, "passed": 0, "failed": 0, "skipped": 0, "failures": [],
              "not_run": [f"{p}: {why}" for p, why in KAFKA_PYTHON_NOT_RUN.items()],
              "log": str(work / "pytest.log")}
    for tc in ET.parse(junit).iter("testcase"):
        name = f"{tc.get('classname', '').rsplit('.', 1)[-1]}::{tc.get('name')}"
        outcome = [c for c in tc if c.tag in ("failure", "error", "skipped")]
        if outcome and outcome[0].tag == "skipped":
            result["skipped"] += 1
            continue
        result["ran"] += 1
        if outcome:
            result["failed"] += 1
            message = (outcome[0].get("message") or "").splitlines()
            result["failures"].append({"test": name, "message": message[0][:300] if message else ""})
        else:
            result["passed"] += 1
    return result


def run_librdkafka(tests: Path, bootstrap: str, timeout_s: int, parallel: int) -> dict:
    conf = tests / "test.conf"
    conf.write_text(f"bootstrap.servers={bootstrap}\ntest.topic.random=true\n")
    for old in tests.glob("test_report_*.json"):
        old.unlink()
    env = dict(os.environ, TEST_KAFKA_VERSION=KAFKA_VERSION_CLAIMED, RDKAFKA_TEST_CONF=str(conf),
               **KAFKA_SCRIPTS_ENV, BROKERS=bootstrap)
    env.pop("TESTS", None)
    cmd = ["./test-runner", *LIBRDKAFKA_FLAGS, f"-p{parallel}"]
    log("librdkafka: " + " ".join(cmd) + f" (in {tests})")
    result = {"suite": f"librdkafka {tests.parent.name.split('-', 1)[1]} (tests/, test-runner)",
              "ran": 0, "passed": 0, "failed": 0, "skipped": 0, "failures": [],
              "not_run": ["local (mock cluster) tests, sockem tests and tests flagged "
                          "with known issues: -L -K -E"],
              "log": str(tests / "test-runner.log")}
    with open(tests / "test-runner.log", "w") as out:
        try:
            subprocess.run(cmd, cwd=tests, env=env, stdout=out, stderr=subprocess.STDOUT,
                           timeout=timeout_s)
        except subprocess.TimeoutExpired:
            result["timed_out"] = timeout_s
    reports = sorted(tests.glob("test_report_*.json"))
    if not reports:
        raise RuntimeError(f"librdkafka: no test report (see {tests / 'test-runner.log'})")
    report = json.loads(reports[-1].read_text())
    reasons = _librdkafka_failure_reasons(tests / "test-runner.log")
    for name, t in sorted(report.get("tests", {}).items()):
        if name == "<MAIN>":
            continue
        state = t.get("state")
        if state == "SKIPPED":
            result["skipped"] += 1
            continue
        result["ran"] += 1
        if state == "PASSED":
            result["passed"] += 1
        else:
            result["failed"] += 1
            result["failures"].append({"test": name, "message": reasons.get(name, state)[:300]})
    return result


def _librdkafka_failure_reasons(log_path: Path) -> dict[str, str]:
    """The reason column of test-runner's summary table, by test name; for a
    row other output interleaved with, the line after the test's first
    '### Test "NAME" failed at WHERE ###' line."""
    ansi = re.compile(r"\x1b\[[0-9;]*m")
    failed_at = re.compile(r'^### Test "([^" (]+)[^"]*" failed at ([^ ]+)')
    reasons, fallback = {}, {}
    lines = [ansi.sub("", line) for line in log_path.read_text(errors="replace").splitlines()]
    for i, line in enumerate(lines):
        cols = [c.strip() for c in line.split("|")]
        if len(cols) >= 5 and cols[2] == "FAILED" and cols[4]:
            reasons[cols[1]] = cols[4]
        m = failed_at.match(line)
        if m and m.group(1) not in fallback and i + 1 < len(lines):
            fallback[m.group(1)] = f"{m.group(2)} {lines[i + 1].strip()}"
    return {**fallback, **reasons}


# 0081_admin stops at its first failing sub-test; when it fails, the
# sub-tests after do_test_AlterConfigs (which failed on a Kerberos broker key
# until headrace accepted the sasl.kerberos.* keys) are run one at a time
# (SUBTESTS matches one name) and counted as a row of their own.
LIBRDKAFKA_0081_LATER_SUBTESTS = [
    "DescribeConfigs", "DeleteRecords", "ListConsumerGroups", "DescribeConsumerGroups",
    "DeleteGroups", "DeleteConsumerGroupOffsets", "AlterConsumerGroupOffsets",
    "ListConsumerGroupOffsets"]


def run_librdkafka_0081_subtests(tests: Path, timeout_s: int) -> dict:
    """Each of LIBRDKAFKA_0081_LATER_SUBTESTS alone (test.conf as written by
    run_librdkafka)."""
    result = {"suite": "librdkafka 0081_admin, sub-tests after do_test_AlterConfigs (one by one)",
              "ran": 0, "passed": 0, "failed": 0, "skipped": 0, "failures": [], "not_run": [],
              "log": str(tests / "test-runner-0081.log")}
    env = dict(os.environ, TEST_KAFKA_VERSION=KAFKA_VERSION_CLAIMED,
               RDKAFKA_TEST_CONF=str(tests / "test.conf"), TESTS="0081")
    with open(tests / "test-runner-0081.log", "w") as out:
        for sub in LIBRDKAFKA_0081_LATER_SUBTESTS:
            for old in tests.glob("test_report_*.json"):
                old.unlink()
            try:
                subprocess.run(["./test-runner", *LIBRDKAFKA_FLAGS], cwd=tests, stdout=out,
                               stderr=subprocess.STDOUT, env=dict(env, SUBTESTS=sub),
                               timeout=timeout_s)
                reports = sorted(tests.glob("test_report_*.json"))
                state = (json.loads(reports[-1].read_text())["tests"]["0081_admin"]["state"]
                         if reports else "NO REPORT")
            except subprocess.TimeoutExpired:
                state = f"TIMED OUT after {timeout_s} s"
            result["ran"] += 1
            if state == "PASSED":
                result["passed"] += 1
            else:
                result["failed"] += 1
                result["failures"].append({"test": f"0081_admin {sub}", "message": state})
    return result


# ----------------------------------------------------------------- report

def table(results: list[dict]) -> str:
    lines = ["| suite | ran | passed | failed | skipped |", "|---|---|---|---|---|"]
    for r in results:
        lines.append(f"| {r['suite']} | {r['ran']} | {r['passed']} | {r['failed']} | {r['skipped']} |")
    for r in results:
        if r["failures"]:
            lines.append("")
            lines.append(f"Failing in {r['suite']}:")
            lines.extend(f"- {f['test']}: {f['message']}" for f in r["failures"])
    return "\n".join(lines) + "\n"


def _start_cluster(cluster_class, brokers: int, settings: dict):
    """A started cluster, node ids from 0 (a single Kafka's broker.id=0: the
    suites assume it, e.g. kafka-python's test_create_partitions assigns
    new partitions to broker 0); a start that fails (a free port taken by
    another process before the broker bound it) is retried twice."""
    from headrace.errors import HeadraceError

    for attempt in range(3):
        cluster = cluster_class(brokers=brokers, settings=settings, first_node_id=0)
        try:
            return cluster.start()
        except HeadraceError as e:
            cluster.stop_all()
            if attempt == 2:
                raise
            log(f"cluster start failed, retrying: {str(e).splitlines()[0]}")
    raise AssertionError("unreachable")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--suite", choices=["kafka-python", "librdkafka", "all"], default="all")
    ap.add_argument("--cache", type=Path, default=REPO / "build" / "client-suites",
                    help="where suites are fetched, built and run (default build/client-suites)")
    ap.add_argument("--brokers", type=int, default=3)
    ap.add_argument("--parallel", type=int, default=4, help="librdkafka tests run at once")
    ap.add_argument("--timeout", type=int, default=900, help="seconds per suite")
    ap.add_argument("--fetch-only", action="store_true")
    args = ap.parse_args(argv)
    cache = args.cache.resolve()
    want = ["kafka-python", "librdkafka"] if args.suite == "all" else [args.suite]

    sources = {}
    try:
        if "kafka-python" in want:
            sources["kafka-python"] = fetch_kafka_python(cache)
        if "librdkafka" in want:
            sources["librdkafka"] = fetch_librdkafka(cache)
    except (subprocess.CalledProcessError, OSError) as e:
        log(f"cannot fetch or build a suite: {e}")
        return 1
    if args.fetch_only:
        return 0

    from headrace import EmbeddedCluster

    results: dict[str, dict] = {}  # results.json key -> result, in run order
    for suite in want:  # a fresh cluster per suite: one suite's topics never meet the other's
        settings = cluster_settings(suite, args.brokers)
        started = time.monotonic()
        cluster = _start_cluster(EmbeddedCluster, args.brokers, settings)
        try:
            log(f"{suite}: cluster {cluster.bootstrap_servers} ({settings})")
            if suite == "kafka-python":
                r = run_kafka_python(sources[suite], cache / "kafka-python-run",
                                     cluster.bootstrap_servers, min(3, args.brokers), args.timeout)
            else:
                r = run_librdkafka(sources[suite], cluster.bootstrap_servers, args.timeout,
                                   args.parallel)
                if any(f["test"] == "0081_admin" for f in r["failures"]):
                    results["librdkafka-0081"] = run_librdkafka_0081_subtests(sources[suite], 300)
        finally:
            cluster.stop_all()
        r["seconds"] = round(time.monotonic() - started)
        r["brokers"] = args.brokers
        results = {suite: r, **results}
        log(f"{suite}: ran {r['ran']}, passed {r['passed']}, failed {r['failed']}, "
            f"skipped {r['skipped']} in {r['seconds']} s")
    # results.json keeps the last result of every suite (keyed by suite), so
    # suites can be run one at a time; results.md is this run's.
    path = cache / "results.json"
    recorded = json.loads(path.read_text()) if path.exists() else {}
    if not isinstance(recorded, dict):
        recorded = {}
    recorded.update(results)
    if "librdkafka" in want and "librdkafka-0081" not in results:
        recorded.pop("librdkafka-0081", None)  # 0081_admin passed whole: no sub-test row
    path.write_text(json.dumps(recorded, indent=2, sort_keys=True) + "\n")
    text = table(sorted(results.values(), key=lambda r: r["suite"]))
    (cache / "results.md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
