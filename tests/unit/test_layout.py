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
    # `durable` is a folder: durable jobs' model, replay, matching and tokens, which know no AWS (the jobs
    # function imports them on its cold start); their items are the store's (shared/store/journal_items.py).
    frozenset({"settings", "ids", "cursors", "refresh", "errors", "environment", "model", "durable"}),
    frozenset({"aws"}),
    frozenset({"store"}),
    frozenset({"tenants"}),
    frozenset({"jobs"}),
    # `waits`: what resumes a waiting durable job (an event, a token's completion), for the API and the worker.
    frozenset({"targets", "schedules", "waits"}),
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


# Values, not adapters: what a delivery is and what handling it decided import no AWS client and no
# store, so the worker's steps hand them to one another and the completer alone turns them into calls.
VALUE_MODULES = ("shared.worker.delivery", "shared.worker.verdicts")
ADAPTERS = ("shared.aws", "shared.store")


def test_the_worker_s_value_modules_reach_no_adapter():
    graph = _graph()
    reached: dict[str, set[str]] = {}
    for module in VALUE_MODULES:
        seen: set[str] = set()
        waiting = [module]
        while waiting:
            for imported in graph[waiting.pop()] - seen:
                seen.add(imported)
                waiting.append(imported)
        reached[module] = {name for name in seen if name.startswith(ADAPTERS)}
    assert reached == {module: set() for module in VALUE_MODULES}


# The job code's own vocabulary (corral_jobs re-exports it) and two control-flow signals, not errors.
_OUTSIDE_THE_ROOT = {
    "JobFailed",  # a job's own failure, raised by customer code
    "JobDead",
    "JobTimedOut",
    "InvalidPayload",  # raised by a customer's validate hook
    "_Expired",  # BaseException on purpose: the job's own `except Exception` must not catch its timeout
    "DeadlineExceeded",  # a botocore error: answered like every other AWS failure
    "DurableError",  # what JobContext's durable methods raise into a job's code (corral_jobs re-exports them)
    "EndsTheJob",
    "Suspended",  # BaseException on purpose: a durable run's stop, which the job's `except Exception` must not catch
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


# One owner for the table ---------------------------------------------------------------------------

ROOT = SHARED.parent
STORE = SHARED / "store"
# The product's code: what ships in a function bundle or the operator CLI, and what deploys it.
PRODUCT = ("shared", "functions", "cli", "infra", "client", "corral_jobs", "app.py")
# DynamoDB's item operations, in boto3's low-level names (a resource's Table has the same ones).
TABLE_OPERATIONS = frozenset(
    {
        "put_item",
        "update_item",
        "delete_item",
        "get_item",
        "query",
        "scan",
        "batch_write_item",
        "batch_get_item",
        "transact_write_items",
        "transact_get_items",
        "execute_statement",
        "batch_execute_statement",
        "execute_transaction",
    }
)
# What pynamodb adds to a Model and its instances (get, query, scan, count and delete are also Model
# class methods: any call on a store Model class counts, see below).
MODEL_METHODS = frozenset({"save", "refresh", "batch_get", "batch_write", "serialize", "deserialize", "from_raw_data"})
# Every key prefix of the jobs table (shared/store/keys.py).
KEY_PREFIXES = (
    "job#",
    "tenant#",
    "usage#",
    "hold#",
    "farfuture#",
    "ratewin#",
    "running#",
    "schedule#",
    "schedules#",
    "runs#",
    "apikey#",
    "apikeys#",
    "operatorkey#",
    "config#",
    "signing-secrets#",
    "batch#",
    "batches#",
    "journal#",
    "stepresult#",
    "channel#",
    "eventlog#",
    "waits#",
    "token#",
)


def _product_files() -> list[Path]:
    found: list[Path] = []
    for name in PRODUCT:
        path = ROOT / name
        found += [path] if path.suffix == ".py" else sorted(path.rglob("*.py"))
    return [path for path in found if STORE not in path.parents]


def _store_models() -> set[str]:
    """The names of the pynamodb Models the store defines."""
    return {
        node.name
        for path in STORE.rglob("*.py")
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.ClassDef)
        and any(isinstance(base, ast.Name) and base.id == "Model" for base in node.bases)
    }


def _leftmost_name(node: ast.expr) -> str | None:
    while isinstance(node, ast.Attribute | ast.Call):
        node = node.value if isinstance(node, ast.Attribute) else node.func
    return node.id if isinstance(node, ast.Name) else None


def _where(path: Path, node: ast.AST) -> str:
    return f"{path.relative_to(ROOT)}:{getattr(node, 'lineno', 0)}"


def test_only_the_store_reads_or_writes_the_table():
    models = _store_models()
    found = []
    for path in _product_files():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import | ast.ImportFrom):
                names = [node.module or ""] if isinstance(node, ast.ImportFrom) else [a.name for a in node.names]
                found += [f"{_where(path, node)} imports {name}" for name in names if name.split(".")[0] == "pynamodb"]
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
                continue
            method = node.func.attr
            if method in TABLE_OPERATIONS or method in MODEL_METHODS or _leftmost_name(node.func) in models:
                found.append(f"{_where(path, node)} calls {ast.unparse(node.func)}")
    assert found == []


def test_no_module_outside_the_store_spells_a_key_prefix():
    found = [
        f"{_where(path, node)} {node.value[:40]!r}"
        for path in _product_files()
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.startswith(KEY_PREFIXES)
    ]
    assert found == []


def test_the_keys_module_defines_every_key_prefix():
    from shared.store import keys

    defined = {value for name, value in vars(keys).items() if name.isupper() and str(value).endswith("#")}
    assert defined == set(KEY_PREFIXES)
