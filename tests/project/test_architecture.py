"""The import graph of memcli has no cycle, and no module or function outgrows a reader.

Imports are read from the source with `ast`, at module level and inside functions alike
(a lazy import is still a dependency), and those under `if TYPE_CHECKING:` too: a module
that names a type of the module using it is tied to it as much as one that imports it.
Two graphs are checked, of packages (memcli.ops, memcli.consolidate, memcli.text, ...)
and of modules. Sizes: a module holds at most MAX_MODULE_LINES lines, a function (or
method) at most MAX_FUNCTION_LINES.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

import memcli

PACKAGE = Path(memcli.__file__).parent


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES: dict[str, Path] = {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}
MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 60


def _type_checking_nodes(tree: ast.Module) -> set[int]:
    inside: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            inside.update(id(child) for child in ast.walk(node))
    return inside


def _known(name: str) -> str | None:
    """The memcli module a dotted name lives in (its longest prefix that is a module)."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def _imported(module: str, node: ast.AST) -> Iterator[str]:
    """The memcli modules one import statement imports."""
    if isinstance(node, ast.Import):
        names = [alias.name for alias in node.names]
    elif isinstance(node, ast.ImportFrom):
        base = node.module or ""
        if node.level:  # relative: from the importing module's package, `level - 1` up
            is_package = MODULES[module].name == "__init__.py"
            package = module if is_package else module.rpartition(".")[0]
            for _ in range(node.level - 1):
                package = package.rpartition(".")[0]
            base = f"{package}.{base}" if base else package
        # `from memcli import dates` imports the module memcli.dates.
        names = [f"{base}.{alias.name}" for alias in node.names]
    else:
        return
    for name in names:
        if name == "memcli" or name.startswith("memcli."):
            found = _known(name)
            if found is not None and found != module:
                yield found


def import_graph(*, type_checking: bool) -> dict[str, set[str]]:
    """Module -> the memcli modules it imports."""
    graph: dict[str, set[str]] = {}
    for module, path in MODULES.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        skip = set() if type_checking else _type_checking_nodes(tree)
        graph[module] = {
            target
            for node in ast.walk(tree)
            if id(node) not in skip
            for target in _imported(module, node)
        }
    return graph


def package_of(module: str) -> str:
    """memcli.consolidate.facts -> memcli.consolidate; memcli.text -> memcli.text."""
    return ".".join(module.split(".")[:2])


def package_graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for module, targets in import_graph(type_checking=True).items():
        edges = graph.setdefault(package_of(module), set())
        edges.update(package_of(t) for t in targets if package_of(t) != package_of(module))
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one member (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_cycle_between_packages() -> None:
    assert cycles(package_graph()) == []


def test_no_cycle_between_modules() -> None:
    assert cycles(import_graph(type_checking=True)) == []


BACKENDS = ("memcli.store.sqlite", "memcli.store.pg")


def _backend(module: str) -> str | None:
    return next((b for b in BACKENDS if module == b or module.startswith(f"{b}.")), None)


def test_the_store_backends_stand_side_by_side_on_the_core() -> None:
    """Neither backend imports the other, and the neutral core of memcli.store imports
    neither (but for `open_store`, in the package itself, which picks one)."""
    crossings = set()
    for module, targets in import_graph(type_checking=True).items():
        if not module.startswith("memcli.store.") or module == "memcli.store":
            continue
        for target in targets:
            if _backend(target) not in (None, _backend(module)):
                crossings.add((module, target))
    assert crossings == set()


def test_the_top_level_holds_few_modules() -> None:
    """Loose modules go where their users are: memcli/ keeps at most 12 beside its packages."""
    loose = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert len(loose) <= 12, loose


def test_no_module_is_too_long() -> None:
    lengths = {
        name: len(path.read_text(encoding="utf-8").splitlines()) for name, path in MODULES.items()
    }
    assert {name: n for name, n in lengths.items() if n > MAX_MODULE_LINES} == {}


def function_lengths(path: Path) -> dict[str, int]:
    """Lines of every function and method of a module (decorators left out), by name."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {
        f"{node.name}:{node.lineno}": (node.end_lineno or node.lineno) - node.lineno + 1
        for node in ast.walk(tree)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
    }


def test_no_function_is_too_long() -> None:
    long = {
        f"{name}.{func}": n
        for name, path in MODULES.items()
        for func, n in function_lengths(path).items()
        if n > MAX_FUNCTION_LINES
    }
    assert long == {}


def test_the_size_reader_counts_a_function_to_its_last_line(tmp_path: Path) -> None:
    source = tmp_path / "m.py"
    lines = ["@decorated", "def f():", "    x = 1", "", "    return x", "", "", "class C:"]
    source.write_text("\n".join([*lines, "    def g(self):", "        pass", ""]))
    assert function_lengths(source) == {"f:2": 4, "g:9": 2}


def test_the_graph_reader_sees_imports_everywhere() -> None:
    graph = import_graph(type_checking=True)
    runtime = import_graph(type_checking=False)
    # function-level (memcli.memory.Memory.consolidate imports memcli.ops.consolidate lazily)
    assert "memcli.ops.consolidate" in runtime["memcli.memory"]
    # `from memcli import dates` is an import of memcli.dates, not of the package
    assert "memcli.dates" in runtime["memcli.readers.jsonl"]
    # type-only imports are in one graph and not the other
    assert "memcli.ops.base" in graph["memcli.ops.ingest"]
    assert "memcli.ops.base" not in runtime["memcli.ops.ingest"]


@pytest.mark.parametrize(
    ("graph", "expected"),
    [
        ({"a": {"b"}, "b": {"c"}, "c": set()}, []),
        ({"a": {"b"}, "b": {"a"}}, [["a", "b"]]),
        ({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}, [["a", "b", "c"]]),
    ],
)
def test_cycles_are_found(graph: dict[str, set[str]], expected: list[list[str]]) -> None:
    assert cycles(graph) == expected
