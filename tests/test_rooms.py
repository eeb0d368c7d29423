"""The C++ rooms: includes and CMake links go the way cpp/rooms.toml allows,
the check catches a wrong-way include, a wrong-way link and a circle, docs/rooms.md is what the script generates
now, and docs/architecture.md names only paths that exist and every room."""
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "check_includes.py"
sys.path.insert(0, str(SCRIPT.parent))
import check_includes  # noqa: E402


def run_check(root: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), "--root", str(root), *args],
                          capture_output=True, text=True, timeout=120)


def copy_tree(tmp_path: Path) -> Path:
    """cpp/ and docs/ of this repository under tmp_path (sources only)."""
    shutil.copytree(ROOT / "cpp", tmp_path / "cpp",
                    ignore=shutil.ignore_patterns("testdata", "schemas", "*.json"))
    (tmp_path / "docs").mkdir()
    return tmp_path


def test_every_include_goes_the_way_the_rooms_allow():
    r = run_check(ROOT)
    assert r.returncode == 0, r.stderr
    assert "all allowed" in r.stdout


def test_check_fails_on_a_wrong_way_include(tmp_path):
    root = copy_tree(tmp_path)
    flusher = root / "cpp" / "broker" / "partition" / "flusher.cc"
    flusher.write_text('#include "broker/api/handler.h"\n' + flusher.read_text())
    r = run_check(root)
    assert r.returncode == 1
    assert ('cpp/broker/partition/flusher.cc: #include "broker/api/handler.h": '
            "room broker/partition may not use room broker/api") in r.stderr


def test_check_fails_on_a_wrong_way_link(tmp_path):
    """The CMake targets follow the rooms: the transaction coordinator's
    library may not link the group coordinator's (they are siblings)."""
    root = copy_tree(tmp_path)
    lists = root / "cpp" / "broker" / "coordinator" / "txn" / "CMakeLists.txt"
    text = lists.read_text()
    assert "PUBLIC headrace_coordinator_base" in text
    lists.write_text(text.replace("PUBLIC headrace_coordinator_base",
                                  "PUBLIC headrace_group headrace_coordinator_base"))
    r = run_check(root)
    assert r.returncode == 1
    assert ("cpp/broker/coordinator/txn/CMakeLists.txt: headrace_txn links headrace_group: "
            "room broker/coordinator/txn may not use room broker/coordinator/group") in r.stderr


def test_check_fails_on_a_file_in_no_room_and_an_include_of_no_room(tmp_path):
    root = copy_tree(tmp_path)
    (root / "cpp" / "stray.cc").write_text('#include "nowhere/x.h"\n')
    r = run_check(root)
    assert r.returncode == 1
    assert "cpp/stray.cc: in no room" in r.stderr
    (root / "cpp" / "stray.cc").unlink()
    (root / "cpp" / "log" / "odd.cc").write_text('#include "nowhere/x.h"\n')
    r = run_check(root)
    assert r.returncode == 1
    assert 'cpp/log/odd.cc: #include "nowhere/x.h" names no room' in r.stderr


def test_check_fails_on_a_circle_in_the_rules(tmp_path):
    root = copy_tree(tmp_path)
    rules = root / "cpp" / "rooms.toml"
    text = rules.read_text()
    # common (the bottom) may now use broker/server (the top): a circle.
    text = text.replace('[rooms.common]\nholds = "utilities below everything: file I/O seam, '
                        'logging, metrics, threads, UUIDs"\nuses = ["include"]',
                        '[rooms.common]\nholds = "x"\nuses = ["include", "broker/server"]')
    assert '"broker/server"]' in text
    rules.write_text(text)
    r = run_check(root)
    assert r.returncode == 1
    assert "circle in the rules: " in r.stderr
    assert "broker/server" in r.stderr


def test_find_cycle_reports_an_include_circle():
    assert check_includes.find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert check_includes.find_cycle({"a": {"b"}, "b": {"c"}, "c": set()}) is None


def test_committed_room_graph_is_what_the_script_generates():
    s = check_includes.scan(ROOT / "cpp", ROOT / "cpp" / "rooms.toml")
    assert not s.problems
    committed = (ROOT / "docs" / "rooms.md").read_text()
    assert committed == check_includes.render_graph(s), (
        "docs/rooms.md is stale: run scripts/check_includes.py --write-graph")


TOP_DIRS = "cpp|python|cython|docs|scripts|tests|bench|integrations|cmake"


def architecture_text() -> str:
    return (ROOT / "docs" / "architecture.md").read_text()


def architecture_paths() -> set[str]:
    """Repository paths docs/architecture.md names, in backticks or as bare
    words (cpp/broker/partition/, docs/cluster.md, ...)."""
    pattern = rf"(?<![\w./-])((?:{TOP_DIRS})/[\w./-]*[\w/])"
    return {m.rstrip("/") for m in re.findall(pattern, architecture_text())}


def architecture_short_names() -> set[str]:
    """Backticked file and directory names without their top directory
    (`api/produce.cc`, `partition.h`): each must name something in cpp/,
    cpp/broker/ or python/headrace/ (bare file names: anywhere there)."""
    names = set()
    for span in re.findall(r"`([^`\n]+)`", architecture_text()):
        if re.fullmatch(rf"(?:{TOP_DIRS})/.*", span) or span.startswith(".."):
            continue  # full paths: architecture_paths; ../ is outside the repository
        if re.fullmatch(r"[\w./-]+\.(?:h|cc|py|md|toml)|[\w-]+(?:/[\w-]+)*/", span):
            names.add(span)
    return names


def test_architecture_names_only_paths_that_exist():
    paths = architecture_paths()
    assert len(paths) > 30
    missing = sorted(n for n in paths if not (ROOT / n).exists())
    assert not missing, f"docs/architecture.md names paths that do not exist: {missing}"
    bases = [ROOT / "cpp", ROOT / "cpp" / "broker", ROOT / "python" / "headrace", ROOT]
    files = {p.name for top in ("cpp", "python", "docs") for p in (ROOT / top).rglob("*")}
    missing = []
    for name in sorted(architecture_short_names()):
        if "/" in name.rstrip("/"):
            found = any((b / name).exists() for b in bases)
        elif name.endswith("/"):
            found = any((b / name).is_dir() for b in bases)
        else:
            found = name in files
        if not found:
            missing.append(name)
    assert not missing, f"docs/architecture.md names files that do not exist: {missing}"


def test_architecture_names_every_cpp_room():
    rooms, _ = check_includes.load_rules(ROOT / "cpp" / "rooms.toml")
    paths = architecture_paths()
    unnamed = sorted(r.name for r in rooms.values() if f"cpp/{r.dir}" not in paths)
    assert not unnamed, f"docs/architecture.md does not name the rooms {unnamed}"
