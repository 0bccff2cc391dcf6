"""The shape of `shared/`: concepts in folders on layers, no import circles, nothing importing upward.

A module may import its own folder and any folder on a lower layer, never one above it: the
base modules know no AWS, the store knows no tenants' rules, the worker is imported by nothing.
"""

from __future__ import annotations

import ast
from pathlib import Path

SHARED = Path(__file__).resolve().parents[2] / "shared"

# Lowest first. Folders on one layer do not import each other.
LAYERS: tuple[frozenset[str], ...] = (
    frozenset({"settings", "ids", "cursors", "refresh", "errors", "environment", "model"}),
    frozenset({"aws"}),
    frozenset({"store"}),
    frozenset({"tenants"}),
    frozenset({"jobs"}),
    frozenset({"targets", "schedules"}),
    frozenset({"worker"}),
    frozenset({"operations"}),
)
TOP_LEVEL_MODULES_AT_MOST = 10


def _modules() -> dict[str, Path]:
    return {
        ".".join(path.relative_to(SHARED.parent).with_suffix("").parts).removesuffix(".__init__"): path
        for path in SHARED.rglob("*.py")
    }


def _imports(module: str, path: Path, known: set[str]) -> set[str]:
    """The project modules `module` imports, at any depth of its code (function-level imports too)."""
    found: set[str] = set()
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(
                    package.split(".")[: len(package.split(".")) - node.level + 1] + ([base] if base else [])
                )
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return {name for name in found if name in known and name != module and name != "shared"}


def _part(module: str) -> str:
    return module.split(".")[1]


def _layer(module: str) -> int:
    part = _part(module)
    return next(index for index, names in enumerate(LAYERS) if part in names)


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    return {name: _imports(name, path, set(modules)) for name, path in modules.items()}


def test_every_module_sits_on_a_layer():
    unplaced = sorted(
        name for name in _modules() if name != "shared" and not any(_part(name) in layer for layer in LAYERS)
    )
    assert unplaced == []


def test_nothing_imports_a_higher_layer_or_a_folder_beside_it():
    wrong = sorted(
        f"{module} -> {imported}"
        for module, imports in _graph().items()
        if module != "shared"
        for imported in imports
        if _layer(imported) > _layer(module)
        or (_layer(imported) == _layer(module) and _part(imported) != _part(module) and _layer(module) > 0)
    )
    assert wrong == []


def test_there_is_no_import_circle():
    graph = _graph()
    circles: list[list[str]] = []
    state: dict[str, int] = {}

    def visit(module: str, path: list[str]) -> None:
        state[module] = 1
        for imported in sorted(graph[module]):
            if state.get(imported) == 1:
                circles.append([*path[path.index(imported) :], imported])
            elif imported not in state:
                visit(imported, [*path, imported])
        state[module] = 2

    for module in sorted(graph):
        if module not in state:
            visit(module, [module])
    assert circles == []


def test_the_top_of_shared_holds_only_the_base_modules():
    top = sorted(path.stem for path in SHARED.glob("*.py") if path.stem != "__init__")
    assert len(top) <= TOP_LEVEL_MODULES_AT_MOST, top
    assert set(top) <= LAYERS[0]


# The job code's own vocabulary (corral_jobs re-exports it) and two control-flow signals, not errors.
_OUTSIDE_THE_ROOT = {
    "JobFailed",  # a job's own failure, raised by customer code
    "JobDead",
    "JobTimedOut",
    "InvalidPayload",  # raised by a customer's validate hook
    "_Expired",  # BaseException on purpose: the job's own `except Exception` must not catch its timeout
    "DeadlineExceeded",  # a botocore error: answered like every other AWS failure
}


def test_every_error_shared_raises_hangs_from_one_root():
    from shared.errors import CorralError

    classes = []
    for module, path in _modules().items():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef) and any(
                isinstance(base, (ast.Name, ast.Attribute))
                and (getattr(base, "id", None) or getattr(base, "attr", "")).endswith(("Error", "Exception"))
                for base in node.bases
            ):
                classes.append((module, node.name))
    assert classes, "the scan found no exception classes"
    import importlib

    outside = sorted(
        f"{module}.{name}"
        for module, name in classes
        if name not in _OUTSIDE_THE_ROOT and not issubclass(getattr(importlib.import_module(module), name), CorralError)
    )
    assert outside == []
