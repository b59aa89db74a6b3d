"""The import structure of the package: no circles, and the release contract above the primitives.

Every ``import`` and ``from ... import`` of ``src/privrank`` is read from the source (at module
level, inside functions, and under ``TYPE_CHECKING``), each naming the module it loads: a
package's ``__init__``, or the submodule when the name imported is one. Two rules hold:

* no module imports, directly or through others, a module that imports it back;
* the release contract (:mod:`privrank.release` and its draw gate :mod:`privrank.draws`) imports
  nothing from :mod:`privrank.mechanisms`: the primitives check the gate, never the other way.

And no module is longer than one reader holds: at most ``MAX_LINES`` lines (a longer one is split
along its seams).
"""
import ast
from collections import deque
from pathlib import Path

import privrank

SRC = Path(privrank.__file__).parent
RELEASE_CONTRACT = ("privrank.release", "privrank.draws")
MAX_LINES = 650


def module_names(root: Path) -> dict[str, Path]:
    """Dotted name of every module of the package at ``root`` (a package by its ``__init__``)."""
    names = {}
    for path in root.rglob("*.py"):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        names[".".join(parts)] = path
    return names


def import_graph(root: Path) -> dict[str, dict[str, int]]:
    """``graph[a][b]``: the line of the first import of package module ``b`` by module ``a``."""
    modules = module_names(root)
    graph = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        targets = {}
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[:len(package.split(".")) - node.level + 1]
                    source = ".".join(base + ([node.module] if node.module else []))
                else:
                    source = node.module or ""
                loaded = [f"{source}.{a.name}" if f"{source}.{a.name}" in modules else source for a in node.names]
            elif isinstance(node, ast.Import):
                loaded = [a.name for a in node.names]
            else:
                continue
            for target in loaded:
                if target in modules:
                    targets.setdefault(target, node.lineno)
        graph[name] = targets
    return graph


def import_cycles(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """One cycle through each strongly connected component of ``graph`` that has one, as
    ``[a, b, ..., a]``."""
    index, low, stack, on_stack, components = {}, {}, [], set(), []

    def visit(v):  # Tarjan's algorithm; the package's depth is far below the recursion limit
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = set()
            while v not in component:
                w = stack.pop()
                on_stack.discard(w)
                component.add(w)
            if len(component) > 1 or v in graph[v]:
                components.append(component)

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return [_cycle_through(graph, min(c), c) for c in components]


def _cycle_through(graph, start, component) -> list[str]:
    """A shortest path from ``start`` back to itself inside ``component`` (breadth first)."""
    parent, queue = {}, deque([start])
    while queue:
        v = queue.popleft()
        for w in sorted(graph[v]):
            if w == start:
                path = [v]
                while path[-1] != start:
                    path.append(parent[path[-1]])
                return path[::-1] + [start]
            if w in component and w not in parent:
                parent[w] = v
                queue.append(w)
    raise AssertionError("a strongly connected component always has a cycle")


def _describe(graph, cycle) -> str:
    return " -> ".join(f"{a} (line {graph[a][b]})" for a, b in zip(cycle, cycle[1:])) + f" -> {cycle[-1]}"


def test_no_import_cycles():
    graph = import_graph(SRC)
    assert [_describe(graph, c) for c in import_cycles(graph)] == []


def test_the_release_contract_imports_nothing_from_the_mechanisms():
    graph = import_graph(SRC)
    offenders = [f"{m} imports {t} (line {line})" for m in RELEASE_CONTRACT for t, line in graph.get(m, {}).items()
                 if t == "privrank.mechanisms" or t.startswith("privrank.mechanisms.")]
    assert offenders == []


def long_modules(root: Path, limit: int = MAX_LINES) -> dict[str, int]:
    """``{module: lines}`` of every module of the package at ``root`` longer than ``limit`` lines."""
    lengths = {name: len(path.read_text().splitlines()) for name, path in module_names(root).items()}
    return {name: n for name, n in sorted(lengths.items()) if n > limit}


def test_no_module_is_longer_than_one_reader_holds():
    assert long_modules(SRC) == {}


def test_the_length_guard_counts_lines(tmp_path):
    """The broken variant: a module one line past the limit is named, one at the limit is not."""
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "short.py").write_text("x = 1\n" * MAX_LINES)
    (pkg / "long.py").write_text("x = 1\n" * (MAX_LINES + 1))
    assert long_modules(pkg) == {"pkg.long": MAX_LINES + 1}


def test_the_guard_sees_a_cycle_through_a_function_level_import(tmp_path):
    """The broken variant: ``a`` imports ``b`` at module level, ``b`` imports ``a`` inside a function."""
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from .sub.b import g\n")
    (pkg / "sub" / "b.py").write_text("def g():\n    from .. import a\n    return a\n")
    (pkg / "c.py").write_text("from . import a\n")
    graph = import_graph(pkg)
    assert graph["pkg.a"] == {"pkg.sub.b": 1} and graph["pkg.sub.b"] == {"pkg.a": 2}
    assert import_cycles(graph) == [["pkg.a", "pkg.sub.b", "pkg.a"]]
