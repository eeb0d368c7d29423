"""`headrace config show`: each effective setting with its source (file,
environment, flag; flags win), and a bad config file as one error line."""
from __future__ import annotations

from cli_run import headrace, ok, one_error_line


def test_show_lists_values_with_their_sources(tmp_path):
    cfg = tmp_path / "b.toml"
    cfg.write_text('"log.retention.ms" = 5\n"num.io.threads" = 2\n')
    r = ok(headrace("config", "show", "--config", str(cfg), "--set", "num.io.threads=3",
                    env={"HEADRACE_NUM_PARTITIONS": "4"}))
    lines = r.stdout.splitlines()
    assert f"log.retention.ms=5\t(file {cfg})" in lines
    assert "num.io.threads=3\t(flag)" in lines
    assert "num.partitions=4\t(environment)" in lines


def test_bad_config_file_is_one_line(tmp_path):
    one_error_line(headrace("config", "show", "--config", str(tmp_path / "missing.toml")),
                   "not found")
    bad = tmp_path / "bad.toml"
    bad.write_text("this is not toml =\n")
    one_error_line(headrace("config", "show", "--config", str(bad)), "bad.toml")
    one_error_line(headrace("config", "show", "--set", "nokey"), "KEY=VALUE")
