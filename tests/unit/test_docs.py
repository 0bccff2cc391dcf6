"""The documentation stays true: the generated references match what their generator prints, /docs is
grouped and ordered, the decisions index lists every decision, and every relative link resolves."""

from __future__ import annotations

import pytest

from docs import generate
from functions.api.openapi_docs import TAGS


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
