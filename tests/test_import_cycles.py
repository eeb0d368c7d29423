"""No import circles between the modules of the headrace package.

The check reads the sources with :mod:`ast` (nothing is imported): every
``import`` / ``from ... import`` of a headrace module, at module level *or*
inside a function (a function-level import only postpones a circle, it does
not remove it); imports under ``if TYPE_CHECKING:`` are left out (they never
run). The package is python/headrace plus the integrations the wheel installs
into it (integrations/spark/headrace_spark -> headrace.spark, likewise storm).
Compiled modules (headrace._core) import no Python module, so they are leaves.

A circle is a strongly connected component of more than one module in that
graph; the failure message names each one as a path a -> b -> ... -> a.
"""
from __future__ import annotations

import ast
import os
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
COMPILED = frozenset({"headrace._core"})


def package_roots(repo: Path = ROOT) -> dict[str, Path]:
    """Dotted package name -> the directory holding its sources."""
    roots = {"headrace": repo / "python" / "headrace"}
    for d in sorted((repo / "integrations").glob("*/headrace_*")):
        roots["headrace." + d.name[len("headrace_"):]] = d
    return roots


def find_modules(roots: dict[str, Path]) -> dict[str, tuple[Path, bool]]:
    """Dotted module name -> (source file, is a package's __init__)."""
    modules: dict[str, tuple[Path, bool]] = {}
    for package, top in roots.items():
        # os.walk does not descend into symlinked directories: a developer's
        # link of an integration into python/headrace is not read twice.
        for dirpath, dirnames, filenames in os.walk(top):
            dirnames[:] = [d for d in dirnames if d != "__pycache__"]
            rel = Path(dirpath).relative_to(top).parts
            for name in filenames:
                if not name.endswith(".py"):
                    continue
                stem = name[:-3]
                is_init = stem == "__init__"
                parts = (package, *rel) if is_init else (package, *rel, stem)
                modules[".".join(parts)] = (Path(dirpath) / name, is_init)
    return modules


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or \
        (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _import_nodes(tree: ast.AST):
    """Every Import/ImportFrom node, skipping ``if TYPE_CHECKING:`` bodies."""
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
            continue
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            stack.extend(node.orelse)
            continue
        stack.extend(ast.iter_child_nodes(node))


def imports_of(module: str, source: str, is_init: bool, known: set[str]) -> set[str]:
    """The known modules ``module``'s source imports."""
    package = module if is_init else module.rpartition(".")[0]
    out: set[str] = set()

    def add(name: str) -> None:
        # The longest known prefix: "headrace.cluster.zk_layout.X" -> the module.
        while name and name not in known:
            name = name.rpartition(".")[0]
        if name and name != module:
            out.add(name)

    for node in _import_nodes(ast.parse(source)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                add(alias.name)
            continue
        if node.level:
            base = package.split(".")
            base = base[:len(base) - (node.level - 1)]
            base = ".".join(base + ([node.module] if node.module else []))
        else:
            base = node.module or ""
        for alias in node.names:
            # `from headrace import logs` imports the module headrace.logs;
            # `from headrace.settings import gather`, the module headrace.settings.
            sub = f"{base}.{alias.name}"
            add(sub if sub in known else base)
    return out


def import_graph(roots: dict[str, Path]) -> dict[str, set[str]]:
    modules = find_modules(roots)
    known = set(modules) | set(COMPILED)
    graph = {name: imports_of(name, path.read_text(encoding="utf-8"), is_init, known)
             for name, (path, is_init) in modules.items()}
    for name in COMPILED:
        graph.setdefault(name, set())
    return graph


def strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's algorithm, iteratively; components of more than one module."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        top = stack.pop()
                        on_stack.discard(top)
                        component.append(top)
                        if top == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return found


def _path_within(graph: dict[str, set[str]], component: list[str]) -> list[str]:
    """One circle through the component's first module, as a -> ... -> a."""
    members, start = set(component), component[0]
    parents: dict[str, str] = {}
    frontier = [start]
    while frontier:
        nxt = []
        for node in frontier:
            for child in sorted(graph[node] & members):
                if child == start:
                    path = [node]
                    while path[-1] != start:
                        path.append(parents[path[-1]])
                    return list(reversed(path)) + [start]
                if child not in parents:
                    parents[child] = node
                    nxt.append(child)
        frontier = nxt
    return component


def circles(roots: dict[str, Path]) -> list[str]:
    graph = import_graph(roots)
    return [" -> ".join(_path_within(graph, c)) for c in strongly_connected(graph)]


# -- the tests -------------------------------------------------------------------
def test_headrace_has_no_import_circles():
    roots = package_roots()
    assert (roots["headrace"] / "__init__.py").exists()
    found = circles(roots)
    assert not found, "import circles (break them by moving the shared piece down):\n" + \
        "\n".join(found)


def _write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))


def test_the_check_finds_a_deliberate_circle(tmp_path):
    # a -> b at module level, b -> a inside a function; c only imports a.
    _write(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/a.py": "from pkg.b import helper\n",
        "pkg/b.py": "def helper():\n    from pkg import a\n    return a\n",
        "pkg/c.py": "import pkg.a\n",
    })
    assert circles({"pkg": tmp_path / "pkg"}) == ["pkg.a -> pkg.b -> pkg.a"]


def test_the_check_finds_a_circle_through_relative_imports_and_subpackages(tmp_path):
    _write(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/cli/__init__.py": "",
        "pkg/cli/main.py": "from .completion import add\n",
        "pkg/cli/completion.py": "from ..lib import x\n",
        "pkg/lib.py": "from pkg.cli.main import build\n",
    })
    assert circles({"pkg": tmp_path / "pkg"}) == [
        "pkg.cli.completion -> pkg.lib -> pkg.cli.main -> pkg.cli.completion"]


def test_type_checking_imports_and_one_way_imports_are_no_circle(tmp_path):
    _write(tmp_path, {
        "pkg/__init__.py": "from pkg.a import A\n",
        "pkg/a.py": """\
            from typing import TYPE_CHECKING
            from pkg import low
            if TYPE_CHECKING:
                from pkg.b import B
            A = 1
            """,
        "pkg/b.py": "from pkg.a import A\nB = A\n",
        "pkg/low.py": "import os\n",
    })
    assert circles({"pkg": tmp_path / "pkg"}) == []
