"""Job ids short enough for a terminal, as git shortens commit ids: `corral list` shows the shortest
prefix (at least MIN_PREFIX characters) that no other listed id starts with, and `get`, `wait`,
`cancel` and `retry` take any prefix that names one job among the tenant's newest RESOLVE_SCAN jobs.

A job id is 41 characters, `j<kind>` and 39 of base32; a timed id's first characters are its enqueue
time, so ids minted close together share a head of ~8: MIN_PREFIX keeps every shown prefix past it.
"""

from __future__ import annotations

from collections.abc import Iterable

from cli.common import CliError, Exit
from client import Corral, JobPage

FULL_ID_LENGTH = 41  # shared/ids.py: "j" + kind + base32 of 24 bytes
MIN_PREFIX = 12
RESOLVE_SCAN = 1_000  # newest jobs a prefix is looked for among: 10 pages of the listing


def shortest_unique_prefixes(ids: Iterable[str], minimum: int = MIN_PREFIX) -> dict[str, str]:
    """Each id's shortest prefix of at least `minimum` characters that no other of `ids` starts with
    (the whole id if it is shorter, or if another id starts with it)."""
    ordered = sorted(set(ids))
    shortest: dict[str, str] = {}
    for index, job_id in enumerate(ordered):
        neighbours = ordered[max(0, index - 1) : index] + ordered[index + 1 : index + 2]
        shared = max((_common_length(job_id, other) for other in neighbours), default=0)
        shortest[job_id] = job_id[: max(minimum, shared + 1)]
    return shortest


def _common_length(one: str, other: str) -> int:
    length = 0
    for left, right in zip(one, other, strict=False):
        if left != right:
            break
        length += 1
    return length


def resolve(api: Corral, given: str) -> str:
    """The full id of the one job whose id starts with `given` (a full id is returned as it is)."""
    if len(given) >= FULL_ID_LENGTH or not given:
        return given
    matches = _matches(api.pages(page_size=100), given, RESOLVE_SCAN)
    if len(matches) == 1:
        return matches[0]
    if not matches:
        raise CliError(
            f"no job id starts with {given!r} among this tenant's newest {RESOLVE_SCAN} jobs; give the whole id "
            "(`corral list --wide` shows them)",
            Exit.NOT_FOUND,
            "not_found",
        )
    shown = ", ".join(matches[:5]) + (f" and {len(matches) - 5} more" if len(matches) > 5 else "")
    raise CliError(
        f"{given!r} is the start of {len(matches)} job ids: {shown}; give more of it", Exit.USAGE, "ambiguous"
    )


def _matches(pages: Iterable[JobPage], given: str, scan: int) -> list[str]:
    found: list[str] = []
    seen = 0
    for page in pages:
        found += [job["id"] for job in page.jobs if job["id"].startswith(given)]
        seen += len(page.jobs)
        if seen >= scan:
            break
    return found
