"""`headrace config show`: every broker setting with its effective value and
source (default, file, environment, flag; flags win), aliases shown under
the setting they set, and an invalid config (unknown key, bad value, bad
file) as one error line with a non-zero exit."""
from __future__ import annotations

from pathlib import Path

from cli_run import headrace, ok, one_error_line

DOCS = Path(__file__).resolve().parent.parent / "docs" / "configuration.md"


def _rows(stdout: str) -> dict[str, tuple[str, str]]:
    """{key: (value, source)} from KEY=VALUE<TAB>(SOURCE) lines."""
    out = {}
    for line in stdout.splitlines():
        setting, _, source = line.partition("\t")
        key, sep, value = setting.partition("=")
        assert sep and source.startswith("(") and source.endswith(")"), line
        assert key not in out, f"{key} listed twice"
        out[key] = (value, source[1:-1])
    return out


def test_show_lists_values_with_their_sources(tmp_path):
    cfg = tmp_path / "b.toml"
    cfg.write_text('"log.retention.ms" = 5\n"num.io.threads" = 2\n')
    r = ok(headrace("config", "show", "--config", str(cfg), "--set", "num.io.threads=3",
                    env={"HEADRACE_NUM_PARTITIONS": "4"}))
    lines = r.stdout.splitlines()
    assert f"log.retention.ms=5\t(file {cfg})" in lines
    assert "num.io.threads=3\t(flag)" in lines
    assert "num.partitions=4\t(environment)" in lines
    rows = _rows(r.stdout)
    # Everything else is listed too, with its built-in default.
    assert rows["log.segment.bytes"] == ("1073741824", "default")
    assert rows["auto.create.topics.enable"] == ("true", "default")
    assert rows["listeners"] == ("PLAINTEXT://127.0.0.1:9092", "default")
    assert rows["group.min.session.timeout.ms"] == ("6000", "default")
    assert rows["headrace.network.backend"] == ("auto", "default")
    assert list(rows) == sorted(rows)


def test_defaults_alone_cover_every_documented_setting():
    rows = _rows(ok(headrace("config", "show")).stdout)
    assert len(rows) >= 35
    assert {source for _, source in rows.values()} == {"default"}
    assert rows["log.dirs"] == ("/tmp/headrace-logs", "default")
    assert rows["log.retention.ms"] == ("604800000", "default")
    documented = DOCS.read_text()
    missing = [key for key in rows if f"`{key}`" not in documented]
    assert not missing, f"settings missing from docs/configuration.md: {missing}"


def test_aliases_are_shown_under_the_setting_they_set(tmp_path):
    r = ok(headrace("config", "show", "--set", "log.retention.hours=2", "--set", "broker.id=7",
                    env={"HEADRACE_LOG_DIR": str(tmp_path)}))
    rows = _rows(r.stdout)
    assert rows["log.retention.ms"] == ("7200000", "flag, as log.retention.hours")
    assert rows["node.id"] == ("7", "flag, as broker.id")
    assert rows["broker.id"] == ("7", "flag")
    assert rows["log.dirs"] == (str(tmp_path), "environment, as log.dir")
    assert "log.retention.hours" not in rows


def test_changed_and_doc_flags():
    r = ok(headrace("config", "show", "--changed", "--doc", "--set", "num.partitions=3"))
    lines = r.stdout.splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith("num.partitions=3\t(flag)\t# default 1: ")
    assert len(lines[0].split(": ", 1)[1]) > 10  # a one-line description


def test_unknown_keys_are_one_warning_line_each_and_left_out():
    """As the broker (and Kafka): a key neither headrace's nor Kafka's is
    ignored with a warning naming it and where it was set."""
    for r, key, source in ((headrace("config", "show", "--set", "no.such.key=1"),
                            "no.such.key", "flag"),
                           (headrace("config", "show", env={"HEADRACE_NO_SUCH_THING": "1"}),
                            "no.such.thing", "environment")):
        assert r.returncode == 0, r.stderr
        warnings = [line for line in r.stderr.splitlines() if line.startswith("headrace: warning")]
        assert len(warnings) == 1 and f"'{key}' ({source})" in warnings[0], r.stderr
        assert "isn't a known config" in warnings[0] and key not in r.stdout


def test_invalid_settings_are_one_line(tmp_path):
    cfg = tmp_path / "bad-value.toml"
    cfg.write_text('"num.partitions" = 0\n')
    one_error_line(headrace("config", "show", "--config", str(cfg)), "num.partitions",
                   str(cfg))
    one_error_line(headrace("config", "show", "--set", "headrace.network.backend=carrier-pigeon"),
                   "headrace.network.backend")
    one_error_line(headrace("config", "show", "--set", "group.max.size=0"), "group.max.size")


def test_bad_config_file_is_one_line(tmp_path):
    one_error_line(headrace("config", "show", "--config", str(tmp_path / "missing.toml")),
                   "not found")
    bad = tmp_path / "bad.toml"
    bad.write_text("this is not toml =\n")
    one_error_line(headrace("config", "show", "--config", str(bad)), "bad.toml")
    one_error_line(headrace("config", "show", "--set", "nokey"), "KEY=VALUE")
