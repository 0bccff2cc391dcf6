"""Which Lambda functions a `lambda` job may invoke, and for which tenants: the stack's allow-list
(`corral:lambda_targets`).

Each entry is `<function pattern>=<tenants>`:

    reports-*=acme|globex   acme's and globex's jobs may invoke the functions named reports-...
    etl=*                   every tenant's jobs may invoke etl (`*` says so explicitly)

The tenant part is required: an entry without one is refused (the synth fails), so no function is
shared by every tenant unless the operator writes `=*`. Several entries may name one pattern; a
tenant is allowed a function if any entry matching it names the tenant (or `*`).

A pattern is a function name (`report-builder`, `billing-*`), meaning a function in the stack's own
account and Region, or a function ARN (`arn:aws:lambda:eu-west-1:123456789012:function:etl-*`).
`*` and `?` are the only wildcards, with IAM's meaning, so the worker's IAM policy
(infra/lambda_targets.py) grants the same functions this check allows, for all tenants together.
A target may carry a qualifier (`name:alias`, `name:3`); the unqualified name is what must match.

Corral's own functions are never targets. Every function of the stack is named `corral-...`: the
API, the worker and the jobs function, which runs customers' job code for the worker
(settings.API_FUNCTION, settings.WORKER_FUNCTION, settings.JOBS_FUNCTION) by name, the ones
CloudFormation names itself `<stack name>-<logical id>-<suffix>`. Invoking the worker with a forged SQS event would
run a job as any tenant, so a pattern that could match a name beginning `corral-` (`*`, `corral-*`,
`c*`, in any account) is refused, a target named so is refused before any pattern is looked at, and
IAM denies the worker those functions (infra/lambda_targets.py).
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass
from functools import cache

from shared import environment, settings
from shared.errors import CorralError
from shared.targets import grants

EVERY_TENANT = grants.EVERY_TENANT
# The names of the stack's own functions begin with this (case aside: checked case-insensitively).
OWN_FUNCTION_PREFIX = f"{settings.STACK_NAME}-"
assert settings.API_FUNCTION.startswith(OWN_FUNCTION_PREFIX)
assert settings.WORKER_FUNCTION.startswith(OWN_FUNCTION_PREFIX)
assert settings.JOBS_FUNCTION.startswith(OWN_FUNCTION_PREFIX)  # no tenant's target may name it

_NAME = re.compile(r"[A-Za-z0-9_*?-]{1,64}")
_ARN = re.compile(r"arn:[a-z*?-]+:lambda:[a-z0-9*?-]+:[0-9*?]+:function:[A-Za-z0-9_*?-]{1,64}")
# What a job may name: a function name or a full ARN, either with a qualifier. Partial ARNs
# (`123456789012:function:name`), which Lambda also accepts, are refused: their first segment alone
# could match a pattern.
_QUALIFIER = r"(?::[A-Za-z0-9$_-]{1,128})?"
_TARGET = re.compile(
    rf"(?:[A-Za-z0-9_-]{{1,64}}|arn:aws[a-z-]*:lambda:[a-z0-9-]+:[0-9]{{12}}:function:[A-Za-z0-9_-]{{1,64}}){_QUALIFIER}"
)


class BadPattern(CorralError, ValueError):
    """An allow-list entry that names no function, no tenants, or one of the stack's own functions."""


@dataclass(frozen=True)
class Entry:
    """One allow-list entry: the functions `pattern` matches, for `tenants` (or every tenant)."""

    pattern: str
    tenants: frozenset[str]  # {EVERY_TENANT} for every tenant

    def __str__(self) -> str:
        return f"{self.pattern}={'|'.join(sorted(self.tenants))}"

    def allows(self, function: str, tenant: str) -> bool:
        """Whether `function` (unqualified) matches this entry's pattern, for `tenant`."""
        if self.pattern.startswith("arn:") != function.startswith("arn:"):
            return False
        if not grants.allows(self.tenants, tenant):
            return False
        return fnmatch.fnmatchcase(function, self.pattern)


def parse_entry(text: str) -> Entry:
    """`pattern=tenant|tenant` or `pattern=*` as an Entry; BadPattern says what is wrong."""
    pattern, tenant_part = grants.split(text)
    pattern = check_pattern(pattern)
    try:
        tenants = grants.tenants(pattern, tenant_part, for_what="whose jobs may invoke it")
    except ValueError as error:
        raise BadPattern(f"lambda target {text.strip()!r}: {error}") from None
    return Entry(pattern, tenants)


def check_pattern(pattern: str) -> str:
    """The pattern, if it names functions and can never name one of the stack's own."""
    if not (_NAME.fullmatch(pattern) or _ARN.fullmatch(pattern)):
        raise BadPattern(
            f"lambda target {pattern!r}: give a function name or an unqualified function ARN, with * and ? as wildcards"
        )
    name_part = pattern.rsplit(":function:", 1)[-1]
    if _may_begin_with(name_part.lower(), OWN_FUNCTION_PREFIX.lower()):
        raise BadPattern(
            f"lambda target {pattern!r} could match corral's own functions (names beginning "
            f"{OWN_FUNCTION_PREFIX!r}, such as {settings.WORKER_FUNCTION}), which no job may invoke; "
            "name your functions more narrowly"
        )
    return pattern


def _may_begin_with(pattern: str, prefix: str) -> bool:
    """Whether some name the glob `pattern` matches begins with `prefix`.

    Runs the glob over `prefix` as a set of positions in the pattern (a `*` matches any run of
    characters, a `?` any one); if any position survives, the rest of the pattern can match some
    ending, since every glob matches some string."""

    def past_stars(positions: set[int]) -> set[int]:
        reached = set(positions)
        for position in positions:
            while position < len(pattern) and pattern[position] == "*":
                position += 1
                reached.add(position)
        return reached

    positions = past_stars({0})
    for character in prefix:
        following = set()
        for position in positions:
            if position == len(pattern):
                continue
            if pattern[position] == "*":
                following.add(position)
            elif pattern[position] in ("?", character):
                following.add(position + 1)
        positions = past_stars(following)
        if not positions:
            return False
    return True


def entries() -> tuple[Entry, ...]:
    """This stack's allow-list (the functions' environment, written at synth, where every entry was
    checked). An entry that does not parse allows nothing: the check fails closed."""
    return _parsed(environment.current().lambda_targets)


@cache
def _parsed(texts: tuple[str, ...]) -> tuple[Entry, ...]:
    parsed = []
    for text in texts:
        try:
            parsed.append(parse_entry(text))
        except BadPattern:
            continue
    return tuple(parsed)


def is_target(target: str) -> bool:
    """Whether `target` is a function name or full function ARN, either with an optional qualifier."""
    return bool(_TARGET.fullmatch(target))


def unqualified(target: str) -> str:
    """`name`, `name:alias`, `arn:...:function:name[:alias]` -> the name or the ARN without its qualifier."""
    if target.startswith("arn:"):
        return ":".join(target.split(":")[:7])
    return target.split(":", 1)[0]


def is_own_function(target: str) -> bool:
    """Whether `target` names a function of the stack (any account: another corral stack's are no better)."""
    name = unqualified(target).rsplit(":function:", 1)[-1]
    return name.lower().startswith(OWN_FUNCTION_PREFIX.lower())


def is_allowed(target: str, tenant: str, allow_list: tuple[Entry, ...]) -> bool:
    """Whether `tenant`'s jobs may invoke `target`: a well-formed target, not one of the stack's own
    functions, matched by an entry naming this tenant (or every tenant)."""
    if not is_target(target) or is_own_function(target):
        return False
    function = unqualified(target)
    return any(entry.allows(function, tenant) for entry in allow_list)
