"""The hir package has no import cycle: the graph of which module imports which, read from
the source with ast, is acyclic. Every import counts: at module level, inside functions
(a deferred import still ties the two modules together) and under ``if TYPE_CHECKING:``
(an annotation-only import is still a dependency); only ``if __name__ == "__main__":``
blocks are left out (a script's own run, not the module's). An edge goes to the module the
import names (``from hir.a import b``: ``hir.a.b`` when that is a module, else ``hir.a``),
not to the packages above it, whose ``__init__`` re-exports would otherwise make every
package a cycle.
"""

import ast
import os
import textwrap

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# The package's folders (pyproject.toml's package-dir); python/hir/dialect and
# python/hir/passes are symlinks to the first two and are skipped there.
PACKAGE_DIRS = {"hir.dialect": "dialect", "hir.passes": "passes", "hir": os.path.join("python", "hir")}


def find_modules(package_dirs: dict[str, str]) -> dict[str, str]:
    """``{module name: file}`` of every ``.py`` file under the packages' folders."""
    modules = {}
    for package, folder in package_dirs.items():
        nested = {name.rpartition(".")[2] for name in package_dirs if name.startswith(package + ".")}
        for dirpath, dirnames, filenames in os.walk(folder):
            dirnames[:] = sorted(d for d in dirnames if d != "__pycache__" and not (dirpath == folder and d in nested))
            for filename in filenames:
                if filename.endswith(".py"):
                    parts = os.path.relpath(os.path.join(dirpath, filename[:-3]), folder).split(os.sep)
                    if parts[-1] == "__init__":
                        parts = parts[:-1]
                    modules[".".join([package, *parts])] = os.path.join(dirpath, filename)
    return modules


def _is_main_block(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and "__main__" in ast.unparse(node.test)


def imported_modules(name: str, path: str, modules: dict[str, str]) -> dict[str, int]:
    """``{module of ``modules``: line}`` of each import in module ``name`` (file ``path``)."""
    with open(path) as f:
        tree = ast.parse(f.read(), path)
    package = name if path.endswith("__init__.py") else name.rpartition(".")[0]
    found: dict[str, int] = {}

    def add(target: str, line: int) -> None:
        while target and target not in modules:
            target = target.rpartition(".")[0]
        if target and target != name:
            found.setdefault(target, line)

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if _is_main_block(child):
                continue
            if isinstance(child, ast.Import):
                for alias in child.names:
                    add(alias.name, child.lineno)
            elif isinstance(child, ast.ImportFrom):
                base = child.module or ""
                if child.level:
                    anchor = package.split(".")[: len(package.split(".")) - (child.level - 1)]
                    base = ".".join(anchor + ([base] if base else []))
                for alias in child.names:
                    full = f"{base}.{alias.name}"
                    add(full if full in modules else base, child.lineno)
            visit(child)

    visit(tree)
    return found


def import_graph(package_dirs: dict[str, str]) -> dict[str, dict[str, int]]:
    modules = find_modules(package_dirs)
    return {name: imported_modules(name, path, modules) for name, path in modules.items()}


def find_cycles(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """One cycle (a list of modules, the first repeated at the end) per strongly connected
    component of more than one module, found by depth-first search."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components = []

    def connect(v: str) -> None:  # Tarjan's algorithm
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, {}):
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                components.append(set(component))

    for v in sorted(graph):
        if v not in index:
            connect(v)
    return [_cycle_in(component, graph) for component in components]


def _cycle_in(component: set[str], graph: dict[str, dict[str, int]]) -> list[str]:
    """A shortest cycle through the component's first module (by name), for the message."""
    start = min(component)
    paths = {start: [start]}
    frontier = [start]
    while frontier:
        following = []
        for v in frontier:
            for w in sorted(graph[v]):
                if w == start:
                    return paths[v] + [start]
                if w in component and w not in paths:
                    paths[w] = paths[v] + [w]
                    following.append(w)
        frontier = following
    raise AssertionError(f"no cycle through {start}")


def describe(cycle: list[str], graph: dict[str, dict[str, int]]) -> str:
    return " -> ".join(f"{a} (line {graph[a][b]})" for a, b in zip(cycle, cycle[1:])) + f" -> {cycle[-1]}"


def test_the_hir_package_has_no_import_cycle(monkeypatch):
    monkeypatch.chdir(ROOT)
    graph = import_graph(PACKAGE_DIRS)
    assert len(graph) > 100 and "hir.passes.shard.state" in graph and "hir.frontend.saving" in graph
    assert "hir.dialect.locations" in graph["hir.dialect.placement_checks"]  # edges are read
    cycles = find_cycles(graph)
    assert not cycles, "import cycles:\n" + "\n".join(describe(c, graph) for c in cycles)


def _write(folder, files: dict[str, str]) -> None:
    for relative, text in files.items():
        path = folder / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))


def test_a_planted_cycle_is_found(tmp_path):
    """Cycles through a function-level import, a TYPE_CHECKING import and a relative one
    are each found; a ``__main__`` block's import and a package's re-export are not edges."""
    _write(
        tmp_path / "pkg",
        {
            "__init__.py": "from pkg.a import f\n",
            "a.py": "from pkg import b\ndef f():\n    return b\n",
            "b.py": "def g():\n    from pkg.a import f\n    return f\n",
            "c.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.d import D\n",
            "d.py": "from .c import TYPE_CHECKING\nclass D: ...\n",
            "e.py": "if __name__ == '__main__':\n    import pkg.a\n",
            "sub/__init__.py": "",
            "sub/x.py": "from ..e import __name__ as e\n",
        },
    )
    graph = import_graph({"pkg": str(tmp_path / "pkg")})
    assert graph["pkg.sub.x"] == {"pkg.e": 1} and graph["pkg.e"] == {}
    cycles = find_cycles(graph)
    assert sorted(cycles) == [["pkg.a", "pkg.b", "pkg.a"], ["pkg.c", "pkg.d", "pkg.c"]]
    assert describe(cycles[0], graph) == "pkg.a (line 1) -> pkg.b (line 2) -> pkg.a"
