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
    # The base modules, the model, and two pure wings: durable jobs' (replay, the step record's states,
    # matching, tokens) and flow control's (its specs and rules). The pure wings know no AWS and no store:
    # the message and the enqueue carry their specs, and the store's items apply their rules.
    frozenset(
        {"settings", "profiles", "ids", "cursors", "refresh", "errors", "environment", "model", "durable", "flow"}
    ),
    frozenset({"aws"}),
    frozenset({"store"}),
    frozenset({"tenants"}),
    frozenset({"jobs"}),
    # Each apart: running a job's code (the worker and the jobs function alike), HTTP and Lambda targets,
    # schedules, what a job's end sets off (batches, callbacks), and what resumes a waiting durable job (an
    # event, a token's completion: `waits`).
    frozenset({"execution", "targets", "schedules", "batches", "waits"}),
    # The worker, and cancel and retry (a retry reopens a batch's member; the worker never cancels).
    frozenset({"worker", "control"}),
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
    # flow control's (shared/store/flow/throttle_items.py, debounce_items.py, unique_locks.py, trigger_items.py)
    "throttle#",
    "debounce#",
    "unique#",
    "trigger#",
    "eventtriggers#",
    "triggers#",
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


# Sizes: a module holds one concept, a folder one wing's handful ----------------------------------------

MODULE_LINES_AT_MOST = 450
FOLDER_MODULES_AT_MOST = 12
# Generated modules: written by a program, never read or edited by hand, so their length is the data's.
GENERATED = {
    "functions/api/job_schemas.py": "the enqueue models' validation schemas (python -m functions.api.jobs)",
}
# Product modules allowed over the limit for now, each with its reason; a TODO names the branch splitting it.
LONG_MODULES: dict[str, str] = {}


def _lines(path: Path) -> int:
    return len(path.read_text().splitlines())


def test_no_product_module_is_over_450_lines():
    long = sorted(
        f"{path.relative_to(ROOT)}: {_lines(path)} lines"
        for name in PRODUCT
        for path in ([ROOT / name] if name.endswith(".py") else sorted((ROOT / name).rglob("*.py")))
        if _lines(path) > MODULE_LINES_AT_MOST and str(path.relative_to(ROOT)) not in LONG_MODULES | GENERATED
    )
    assert long == []
    assert all((ROOT / name).exists() for name in GENERATED)


def test_every_long_module_allowed_is_still_long():
    """An allowance goes with its reason: once the module is split, the test asks to remove it."""
    split = sorted(
        name for name in LONG_MODULES if not (ROOT / name).exists() or _lines(ROOT / name) <= MODULE_LINES_AT_MOST
    )
    assert split == []


def _folder_sizes() -> dict[str, int]:
    """Each folder under shared/ (its sub-folders apart) and how many modules it holds."""
    return {
        "/".join(folder.relative_to(SHARED).parts): sum(1 for path in folder.glob("*.py") if path.name != "__init__.py")
        for folder in SHARED.rglob("*")
        if folder.is_dir() and folder.name != "__pycache__"
    }


def test_no_folder_of_shared_holds_more_than_12_modules():
    sizes = _folder_sizes()
    big = sorted(
        f"shared/{folder}: {count} modules" for folder, count in sizes.items() if count > FOLDER_MODULES_AT_MOST
    )
    assert big == []


# Names kept for wings being built: their code lives in their folder, nowhere else under shared/.
RESERVED_WINGS = {
    "durable": "durable jobs: steps replayed from a journal, sleeps, waits for events and tokens",
    "flow": "flow control: throttles, debounce, unique jobs, priorities, triggers",
}


def _named_after(path: Path, wing: str) -> bool:
    name = path.name.removesuffix(".py")
    return name == wing or name.startswith(f"{wing}_")


def test_the_names_of_wings_being_built_are_only_their_folders():
    """`shared/durable/` and `shared/flow/` hold durable jobs' and flow control's code: no module or folder
    elsewhere under shared/ is named after them (`shared/worker/durable.py`, `shared/jobs/flow_keys.py`,
    `shared/flow.py`), and each has its place on a layer. The one other home is the wing's item family in
    the store (`shared/store/flow/`), since the store alone touches the table."""
    homes = {wing: (SHARED / wing, SHARED / "store" / wing) for wing in RESERVED_WINGS}
    misplaced = sorted(
        str(path.relative_to(ROOT))
        for path in SHARED.rglob("*")
        for wing in RESERVED_WINGS
        if _named_after(path, wing) and not any(path == home or home in path.parents for home in homes[wing])
    )
    assert misplaced == []
    assert all(any(wing in layer for layer in LAYERS) for wing in RESERVED_WINGS)


def test_the_wing_names_check_finds_a_misplaced_module(tmp_path):
    assert _named_after(tmp_path / "durable_steps.py", "durable")
    assert _named_after(tmp_path / "flow", "flow")
    assert not _named_after(tmp_path / "workflow.py", "flow")
    assert not _named_after(tmp_path / "flows.py", "flow")


# What the worker loads ----------------------------------------------------------------------------------


def _closure(entry: str) -> set[str]:
    """Every project module `entry` reaches through its imports (function-level imports too)."""
    modules = {
        ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__"): path
        for package in ("shared", "functions", "corral_jobs")
        for path in (ROOT / package).rglob("*.py")
    }
    reached, todo = set(), [entry]
    while todo:
        module = todo.pop()
        if module not in reached:
            reached.add(module)
            todo += _imports(module, modules[module], set(modules))
    return reached


def test_the_worker_loads_neither_enqueue_nor_the_rate_limit_and_scheduler_only_for_wake_timers():
    """A job's end sets off its batch's count and its callbacks (shared/batches/members.py, callbacks.py):
    those send with the queue alone, so the worker never imports the API's enqueue checks or its rate
    limit. EventBridge Scheduler's client it reaches through one module only: a waiting durable job's wake
    timer beyond SQS's delay (shared/worker/run/wake_timer.py)."""
    reached = _closure("functions.worker.handler")
    assert {"shared.batches.follow_ups", "shared.batches.callbacks"} <= reached  # the scan follows the worker's path
    assert reached & {"shared.jobs.enqueue", "shared.tenants.rate_limit"} == set()
    modules = _modules()
    through = sorted(
        name
        for name in reached
        if name in modules and "shared.aws.eventbridge" in _imports(name, modules[name], set(modules))
    )
    assert through == ["shared.worker.run.wake_timer"]
