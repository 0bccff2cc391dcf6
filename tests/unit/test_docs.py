"""The documentation stays true: the generated references match what their generator prints, /docs is
grouped and ordered, the decisions index lists every decision, and every relative link resolves."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from docs import generate
from functions.api.openapi_docs import ERRORS, TAGS
from shared import settings
from shared.flow import limits as flow_limits
from shared.tenants.quotas import DEFAULTS, TenantLimits


@pytest.fixture(scope="module")
def served() -> dict:
    return generate.served_document()


# The generated references ------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(generate.REFERENCES))
def test_a_generated_reference_is_what_its_generator_prints(name):
    committed = (generate.REFERENCE / name).read_text()

    # Differs after a change to the routes, their models or the CLI: run `make docs` and commit the result.
    assert committed == generate.REFERENCES[name](), f"docs/reference/{name} is stale: run `make docs`"


# /docs: the served document's sections and order ------------------------------------------------------


def _operations(document: dict) -> list[tuple[str, str, list[str]]]:
    return [
        (method.upper(), path, operation.get("tags", []))
        for path, item in document["paths"].items()
        for method, operation in item.items()
    ]


def test_every_operation_has_one_tag_of_the_reference_sections(served):
    untagged = [f"{method} {path}: {tags}" for method, path, tags in _operations(served) if len(tags) != 1]
    unknown = [f"{method} {path}: {tags[0]}" for method, path, tags in _operations(served) if tags[0] not in TAGS]

    assert untagged == [] and unknown == []


def test_the_sections_come_in_reading_order_each_in_one_run(served):
    assert [tag["name"] for tag in served["tags"]] == list(TAGS)
    runs = [tags[0] for _, _, tags in _operations(served)]
    sections = [tag for index, tag in enumerate(runs) if index == 0 or runs[index - 1] != tag]

    assert sections == [tag for tag in TAGS if tag in runs]  # grouped, in TAGS' order
    assert set(runs) == set(TAGS)  # and no section is empty


def test_within_a_section_create_comes_first_then_list_get_change_and_actions(served):
    schedules = [f"{method} {path}" for method, path, tags in _operations(served) if tags == ["schedules"]]
    jobs = [f"{method} {path}" for method, path, tags in _operations(served) if tags == ["jobs"]]

    assert schedules == [
        "POST /v1/schedules",
        "GET /v1/schedules",
        "GET /v1/schedules/{name}",
        "PATCH /v1/schedules/{name}",
        "DELETE /v1/schedules/{name}",
        "POST /v1/schedules/{name}:pause",
        "POST /v1/schedules/{name}:resume",
        "POST /v1/schedules/{name}:trigger",
        "POST /v1/schedules/{name}:backfill",
    ]
    # Powertools lists routes with a path parameter first; the reference keeps the routers' own order.
    assert jobs[:4] == ["POST /v1/jobs", "GET /v1/jobs", "POST /v1/jobs:batch", "GET /v1/jobs/{job_id}"]


# The decisions index -----------------------------------------------------------------------------------

DOCS = generate.ROOT / "docs"
DECISIONS = DOCS / "decisions"
STATUSES = ("built", "decided", "superseded")
_INDEX_ROW = re.compile(r"^\| \[([\w-]+)\]\(([\w-]+)\.md\) \| (.+) \| (\w+) \|$")


def _decision_pages() -> set[str]:
    return {page.stem for page in DECISIONS.glob("*.md") if page.name != "README.md"}


def _index_rows() -> list[re.Match[str]]:
    lines = (DECISIONS / "README.md").read_text().splitlines()
    rows = [line for line in lines if line.startswith("| [")]
    matched = [_INDEX_ROW.match(row) for row in rows]
    assert None not in matched, [row for row, match in zip(rows, matched, strict=True) if match is None]
    return [match for match in matched if match is not None]


def test_every_decision_page_has_a_line_in_the_index_and_every_line_a_page():
    listed = [row.group(2) for row in _index_rows()]

    assert sorted(_decision_pages() - set(listed)) == [], "pages with no line in docs/decisions/README.md"
    assert sorted(set(listed) - _decision_pages()) == [], "lines in docs/decisions/README.md naming no page"
    assert len(listed) == len(set(listed)), "a page listed twice"


def test_every_index_line_names_its_page_and_a_status():
    for row in _index_rows():
        assert row.group(1) == row.group(2)
        assert row.group(4) in STATUSES, row.group(0)


def test_every_decision_page_opens_with_its_decision():
    for name in sorted(_decision_pages()):
        paragraphs = (DECISIONS / f"{name}.md").read_text().split("\n\n")
        assert paragraphs[0].startswith("# "), name
        assert paragraphs[1].startswith("**Decision.** "), f"docs/decisions/{name}.md"


# The glossary -------------------------------------------------------------------------------------------


def test_the_glossary_is_in_alphabetical_order():
    text = (DOCS / "glossary.md").read_text()
    terms = [match.group(1).rstrip(".") for match in re.finditer(r"^\*\*(.+?)\*\*", text, re.MULTILINE)]

    assert len(terms) > 50
    assert terms == sorted(terms, key=str.casefold)  # word by word: "Job type" before "Jobs function"


# Errors and limits: written by hand, its figures checked against the code --------------------------------

ERRORS_AND_LIMITS = DOCS / "reference" / "errors-and-limits.md"
_UNITS = {"KiB": 1024, "MiB": 1024 * 1024, "minutes": 60, "hours": 3600, "days": 86_400}


def _numbers(cell: str) -> set[float]:
    return {float(number.replace(",", "")) for number in re.findall(r"\d[\d,]*(?:\.\d+)?", cell)}


def _shown(value: float, cell: str) -> bool:
    """Whether a table cell shows `value`, as itself or in a unit the cell names (64 KiB, 7 days)."""
    candidates = {float(value)} | {value / size for unit, size in _UNITS.items() if unit in cell}
    return bool(candidates & _numbers(cell))


def _rows(text: str) -> list[list[str]]:
    return [
        [cell.strip() for cell in line.strip("|").split(" | ")] for line in text.splitlines() if line.startswith("| ")
    ]


def test_every_figure_that_names_its_setting_is_the_settings_value():
    checked = []
    for cells in _rows(ERRORS_AND_LIMITS.read_text()):
        named = re.fullmatch(r"`([A-Z_]+)`", cells[-1])
        if named is None:
            continue
        value = getattr(settings, named.group(1), None)
        if value is None:  # flow control's limits live beside their rules
            value = getattr(flow_limits, named.group(1))
        assert _shown(value, cells[-2]), f"{cells[0]}: {cells[-2]!r} is not {named.group(1)} = {value}"
        checked.append(named.group(1))
    assert len(checked) >= 30


def test_every_tenant_limit_is_listed_with_its_default():
    rows = {cells[0]: cells for cells in _rows(ERRORS_AND_LIMITS.read_text())}
    for name in TenantLimits.names():
        cells = rows.get(f"`{name}`")
        assert cells is not None, f"{name} has no row"
        assert _shown(getattr(DEFAULTS, name), cells[1]), f"{name}: {cells[1]!r} is not {getattr(DEFAULTS, name)}"


def test_every_error_code_the_api_answers_has_a_row():
    text = ERRORS_AND_LIMITS.read_text()
    for status, meaning in ERRORS.items():
        codes = {meaning.split(":")[0], *re.findall(r"\bor ([a-z]+_[a-z_]+):", meaning)}
        for code in codes:
            assert f"| {status} | `{code}` |" in text, f"{status} {code}"


# Links -------------------------------------------------------------------------------------------------

LINKED_FILES = [
    generate.ROOT / "README.md",
    *sorted(DOCS.rglob("*.md")),
    generate.ROOT / "bench" / "README.md",
    generate.ROOT / "client" / "README.md",
    generate.ROOT / "client-ts" / "README.md",
    generate.ROOT / "functions" / "api" / "README.md",
]
_FENCE = re.compile(r"^```.*?^```", re.MULTILINE | re.DOTALL)
_LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def _prose(text: str) -> str:
    """The text without code: fenced blocks, indented blocks and `code spans`, where brackets are not links."""
    text = _FENCE.sub("", text)
    lines = [line for line in text.splitlines() if not line.startswith("    ")]
    return re.sub(r"`[^`\n]*`", "", "\n".join(lines))


def _anchors(path: Path) -> set[str]:
    """A Markdown file's heading anchors, as GitHub makes them."""
    found: set[str] = set()
    for line in _prose(path.read_text().replace("`", "")).splitlines():
        heading = re.match(r"#{1,6} (.+)", line)
        if heading:
            slug = re.sub(r"[^\w\- ]", "", heading.group(1).strip().lower()).replace(" ", "-")
            anchor, count = slug, 1
            while anchor in found:
                anchor, count = f"{slug}-{count}", count + 1
            found.add(anchor)
    return found


def _broken(source: Path) -> list[str]:
    broken = []
    for target in _LINK.findall(_prose(source.read_text())):
        if re.match(r"[a-z]+:", target):  # https:, mailto:
            continue
        path, _, anchor = target.partition("#")
        resolved = (source.parent / path).resolve() if path else source
        if not resolved.exists():
            broken.append(f"{target} (no such file)")
        elif anchor and resolved.suffix == ".md" and anchor not in _anchors(resolved):
            broken.append(f"{target} (no such heading)")
    return [f"{source.relative_to(generate.ROOT)}: {link}" for link in broken]


@pytest.mark.parametrize("source", LINKED_FILES, ids=lambda path: str(path.relative_to(generate.ROOT)))
def test_every_relative_link_resolves(source):
    assert _broken(source) == []


def test_the_link_check_finds_a_broken_link_and_a_missing_heading(tmp_path):
    (tmp_path / "there.md").write_text("# There\n\n## A job's states\n")
    page = tmp_path / "page.md"
    page.write_text(
        "[ok](there.md#a-jobs-states) [gone](missing.md) [no heading](there.md#nowhere) `[code](missing.md)`\n"
    )

    assert [line.split(": ", 1)[1] for line in _broken_in(page, tmp_path)] == [
        "missing.md (no such file)",
        "there.md#nowhere (no such heading)",
    ]


def _broken_in(page: Path, root: Path) -> list[str]:
    original = generate.ROOT
    generate.ROOT = root
    try:
        return _broken(page)
    finally:
        generate.ROOT = original


# Code paths the docs name ----------------------------------------------------------------------------

# A repository path in the text (`shared/store/keys.py`, `tests/unit/`), not a placeholder (`shared/<wing>/`).
_CODE_PATH = re.compile(
    r"(?<![\w./-])((?:shared|functions|infra|cli|client|client-ts|corral_jobs|local|bench|tests|examples|docs)/"
    r"[\w./-]*[\w/])(?![\w<{*])"
)


def _missing_paths(source: Path, root: Path) -> list[str]:
    named = {match.group(1).rstrip(".") for match in _CODE_PATH.finditer(source.read_text())}
    return sorted(path for path in named if not (root / path).exists())


@pytest.mark.parametrize("source", LINKED_FILES, ids=lambda path: str(path.relative_to(generate.ROOT)))
def test_every_code_path_the_docs_name_exists(source):
    """A module moved or renamed takes its docs with it: every path a page names in its text is there."""
    assert _missing_paths(source, generate.ROOT) == []


def test_the_path_check_finds_a_moved_module_and_skips_placeholders(tmp_path):
    (tmp_path / "shared" / "model").mkdir(parents=True)
    page = tmp_path / "page.md"
    page.write_text("`shared/model/` and `shared/model.py` (gone); a new wing goes in `shared/<wing>/`.\n")

    assert _missing_paths(page, tmp_path) == ["shared/model.py"]
