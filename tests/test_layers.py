"""The package's imports run one way: each module imports only from its own layer or the ones
below it (the order docs/ARCHITECTURE.md states), never in a cycle, and never a private name
from another package.

Imports under ``if TYPE_CHECKING:`` are left out: they are for the type checker, not run.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "python" / "streamfold"

#: Lowest first. A module's layer is the first entry its name starts with.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("_core", "_types", "_errors", "_failures"),
    ("_parts",),
    ("_jsonform", "_frozen_init"),
    ("_events",),
    ("_request",),
    ("_message",),
    ("_providers",),
    ("_engine",),
    ("_writers",),
    ("_io",),
    ("_read",),
    ("_resume",),
    ("_transport",),
    ("_client",),
    ("_relay",),
    ("_cli",),
    ("", "__main__"),  # streamfold/__init__.py: the public names
)


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE).with_suffix("").parts
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _layer(module: str) -> int:
    top = module.split(".", maxsplit=1)[0]
    for i, names in enumerate(LAYERS):
        if top in names:
            return i
    raise AssertionError(f"streamfold.{module} is in no layer of LAYERS: add it")


def _runtime_imports(tree: ast.Module) -> Iterator[ast.ImportFrom | ast.Import]:
    """The imports that run: everything but ``if TYPE_CHECKING:`` blocks."""
    todo: list[ast.AST] = [tree]
    while todo:
        node = todo.pop()
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and ast.unparse(child.test) == "TYPE_CHECKING":
                todo.extend(child.orelse)
                continue
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                yield child
            todo.append(child)


def _edges() -> dict[str, set[tuple[str, tuple[str, ...]]]]:
    """module -> {(imported module, names imported from it)}, inside the package."""
    edges: dict[str, set[tuple[str, tuple[str, ...]]]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        module = _module_name(path)
        package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
        if module == "":
            package = []
        out = edges.setdefault(module, set())
        for node in _runtime_imports(ast.parse(path.read_text("utf-8"))):
            names = tuple(alias.name for alias in node.names)
            if isinstance(node, ast.Import):
                for name in names:
                    if name.startswith("streamfold."):
                        out.add((name.removeprefix("streamfold."), ()))
                continue
            if node.level == 0:
                if node.module and node.module.startswith("streamfold"):
                    target = node.module.removeprefix("streamfold").lstrip(".")
                    out.add((target, names))
                continue
            base = package[: len(package) - node.level + 1]
            target = ".".join([*base, *([node.module] if node.module else [])])
            if node.module is None:  # from . import a, b: submodules, or names of the package
                for name in names:
                    sub = f"{target}.{name}" if target else name
                    where = PACKAGE / Path(*sub.split("."))
                    # A module, a package, or the extension (known by its stub).
                    exists = any(where.with_suffix(s).exists() for s in (".py", ".pyi"))
                    exists = exists or where.is_dir()
                    out.add((sub, ()) if exists else (target, (name,)))
            else:
                out.add((target, names))
    return edges


EDGES = _edges()


def test_every_module_is_in_a_layer() -> None:
    for module in EDGES:
        _layer(module)


@pytest.mark.parametrize("module", sorted(EDGES), ids=lambda m: m or "streamfold")
def test_imports_run_down_the_layers(module: str) -> None:
    own = _layer(module)
    upward = sorted(target for target, _names in EDGES[module] if target and _layer(target) > own)
    assert upward == [], f"streamfold.{module} imports from a higher layer"


def test_no_import_cycle() -> None:
    graph = {m: {t for t, _ in targets if t in EDGES} for m, targets in EDGES.items()}
    state: dict[str, int] = {}  # 1: on the current path, 2: done

    def visit(module: str, path: list[str]) -> None:
        state[module] = 1
        for target in sorted(graph[module]):
            if state.get(target) == 1:
                cycle = [*path[path.index(target) :], target] if target in path else [target]
                raise AssertionError("import cycle: " + " -> ".join(cycle))
            if target not in state:
                visit(target, [*path, target])
        state[module] = 2

    for module in sorted(graph):
        if module not in state:
            visit(module, [module])


def test_no_private_name_crosses_a_package() -> None:
    crossing = []
    for module, targets in EDGES.items():
        home = module.split(".")[0]
        for target, names in targets:
            if target.split(".")[0] == home:
                continue
            crossing += [
                f"{module} <- {target}.{n}"
                for n in names
                # A private module (``from .. import _core``) and a dunder are not private names.
                if n.startswith("_")
                and not n.startswith("__")
                and f"{target}.{n}".strip(".") not in EDGES
                and n != "_core"
            ]
    assert crossing == []


def test_the_checks_see_the_imports() -> None:
    # The checks above would pass on a graph they failed to read.
    assert ("_engine.folder", ("Folder",)) in EDGES["_engine.driver"]
    assert any(target == "_client.stream" for target, _ in EDGES[""])
    assert _layer("_cli.main") > _layer("_engine.pipeline") > _layer("_providers.base")
