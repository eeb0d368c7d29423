"""The clients' own test suites against a 3-broker cluster
(tests/client_suites/run.py; docs/compatibility.md, "Client suites").

Slow (about 1 minute for kafka-python, 5 for librdkafka, plus a first fetch
and build of librdkafka's test runner): run with
`pytest -m slow tests/test_client_suites.py`. Needs
`scripts/setup.sh --client-suites` (the deb-src entry for librdkafka's
source). Each result row must pass at least as many tests as recorded in
tests/client_suites/expected.json ({results.json key: {"suite": the --suite
that produces it, "passed": floor}}); a figure that rises is recorded there.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
EXPECTED = json.loads((HERE / "client_suites" / "expected.json").read_text())


@pytest.mark.slow
@pytest.mark.parametrize("suite", sorted({e["suite"] for e in EXPECTED.values()}))
def test_client_suite_pass_count(suite):
    cache = HERE.parent / "build" / "client-suites"
    proc = subprocess.run([sys.executable, str(HERE / "client_suites" / "run.py"),
                           "--suite", suite, "--cache", str(cache)],
                          capture_output=True, text=True, timeout=3600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    results = json.loads((cache / "results.json").read_text())
    for key, expected in EXPECTED.items():
        if expected["suite"] != suite:
            continue
        result = results[key]
        assert result["passed"] >= expected["passed"], (
            f"{key}: {result['passed']} passed, recorded {expected['passed']}; failing: "
            + "; ".join(f"{f['test']}: {f['message']}" for f in result["failures"]))
