"""Schedule expressions, validated as EventBridge Scheduler accepts them.

`at(yyyy-mm-ddThh:mm:ss)`, `rate(n minute[s]|hour[s]|day[s])` and AWS cron:
`cron(minutes hours day-of-month month day-of-week year)`. AWS cron is not Unix
cron: six fields, a year, `?` in exactly one of the day fields, `L`, `W`, `#`,
and day-of-week counts 1 = SUN .. 7 = SAT. Each field is checked by croniter
(a maintained parser) after a thin translation to its 7-field dialect; the
error names the field that is wrong.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from shared.aws.eventbridge import AT_FORMAT
from shared.errors import CorralError

CRON_FIELDS = ("minutes", "hours", "day-of-month", "month", "day-of-week", "year")
# croniter's 7-field order: minute hour day-of-month month day-of-week second year.
_CRONITER_POSITION = {"minutes": 0, "hours": 1, "day-of-month": 2, "month": 3, "day-of-week": 4, "year": 6}
_CRONITER_TEMPLATE = ("0", "0", "*", "*", "*", "0", "*")
_RATE = re.compile(r"^(\d+) (minute|minutes|hour|hours|day|days)$")


class InvalidExpression(CorralError, ValueError):
    """`message` says what is wrong, naming the cron field where there is one."""


@dataclass(frozen=True)
class Expression:
    text: str
    kind: str  # "at" | "rate" | "cron"
    at: datetime | None = None  # at(): the wall-clock time, naive (read in the schedule's timezone)


def parse(text: str) -> Expression:
    match = re.fullmatch(r"(at|rate|cron)\((.*)\)", text.strip())
    if not match:
        raise InvalidExpression(
            f"{text!r} is not a schedule expression; use at(yyyy-mm-ddThh:mm:ss), rate(5 minutes) "
            "or cron(minutes hours day-of-month month day-of-week year)"
        )
    kind, body = match.groups()
    if kind == "at":
        return Expression(text=text.strip(), kind=kind, at=_parse_at(body))
    if kind == "rate":
        _check_rate(body)
    else:
        _check_cron(body)
    return Expression(text=text.strip(), kind=kind)


def timezone(name: str) -> ZoneInfo:
    """An IANA time zone, as Scheduler's ScheduleExpressionTimezone takes it."""
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError) as error:
        raise InvalidExpression(f"{name!r} is not an IANA time zone name, e.g. Europe/Paris or UTC") from error


def _parse_at(body: str) -> datetime:
    try:
        return datetime.strptime(body, AT_FORMAT)
    except ValueError as error:
        message = f"at({body}): the time must be yyyy-mm-ddThh:mm:ss, e.g. at(2026-12-31T23:59:00)"
        raise InvalidExpression(message) from error


def _check_rate(body: str) -> None:
    match = _RATE.fullmatch(body)
    if not match:
        raise InvalidExpression(f"rate({body}): must be rate(<positive integer> minute[s]|hour[s]|day[s])")
    value, unit = int(match.group(1)), match.group(2)
    if value < 1:
        raise InvalidExpression(f"rate({body}): the value must be a positive integer")
    if (value == 1) != (not unit.endswith("s")):
        wanted = unit.rstrip("s") if value == 1 else unit.rstrip("s") + "s"
        raise InvalidExpression(f"rate({body}): use the unit {wanted!r} with the value {value}")


def _check_cron(body: str) -> None:
    # Imported here: every enqueue imports this module (for at()), and croniter (~25 ms) would
    # otherwise be on each API cold start although only creating a cron schedule needs it.
    from croniter import croniter

    fields = body.split()
    if len(fields) != len(CRON_FIELDS):
        raise InvalidExpression(
            f"cron({body}) has {len(fields)} fields; AWS cron has 6: {' '.join(CRON_FIELDS)} "
            "(e.g. cron(0 0 * * ? *) for every midnight)"
        )
    named = dict(zip(CRON_FIELDS, fields, strict=True))
    day_of_month, day_of_week = named["day-of-month"], named["day-of-week"]
    if (day_of_month == "?") == (day_of_week == "?"):
        raise InvalidExpression(
            f"cron({body}): exactly one of day-of-month ({day_of_month}) and day-of-week ({day_of_week}) must be '?'"
        )
    for name, value in named.items():
        if "?" in value and (name not in ("day-of-month", "day-of-week") or value != "?"):
            raise InvalidExpression(f"cron({body}): {name} {value!r}: '?' is allowed only alone, in a day field")
        translated = _translate(name, value)
        candidate = list(_CRONITER_TEMPLATE)
        candidate[_CRONITER_POSITION[name]] = translated
        if not croniter.is_valid(" ".join(candidate)):
            raise InvalidExpression(f"cron({body}): {name} {value!r} is not valid{_hint(name)}")


def _translate(name: str, value: str) -> str:
    """One AWS cron field in croniter's dialect (only syntax is checked, so LW may stand in as L)."""
    if value == "?":
        return "*"
    if name == "day-of-month":
        return "L" if value.upper() == "LW" else value
    if name != "day-of-week":
        return value
    parts = []
    for part in value.upper().split(","):
        if part == "L":  # bare L: the last day of the week, Saturday
            parts.append("6")
            continue
        # AWS numbers days 1 (SUN) .. 7 (SAT); croniter 0 .. 6. Not the k of n#k, not a step.
        part = re.sub(r"(?<![#/\d])(\d+)", _aws_day_to_croniter, part)
        # AWS "5L" (last Thursday) is croniter's "L4".
        part = re.sub(r"^(\w+)L$", r"L\1", part)
        parts.append(part)
    return ",".join(parts)


def _aws_day_to_croniter(match: re.Match[str]) -> str:
    day = int(match.group(1))
    return str(day - 1) if 1 <= day <= 7 else "x"  # "x": out of range, croniter rejects it


def _hint(name: str) -> str:
    return {
        "minutes": " (0-59 , - * /)",
        "hours": " (0-23 , - * /)",
        "day-of-month": " (1-31 , - * ? / L W)",
        "month": " (1-12 or JAN-DEC , - * /)",
        "day-of-week": " (1-7 or SUN-SAT, 1 = SUN , - * ? L #)",
        "year": " (1970-2099 , - * /)",
    }[name]


_RATE_UNIT_SECONDS = {"minute": 60, "hour": 3_600, "day": 86_400}


def next_firings(
    text: str,
    timezone_name: str,
    *,
    after: datetime,
    anchor: datetime,
    count: int = 5,
    start: datetime | None = None,
    end: datetime | None = None,
) -> list[datetime] | None:
    """The next `count` firings after `after` (aware, UTC), as EventBridge Scheduler would fire them.

    `anchor`: when a rate() schedule started counting (its start, else its creation). None when
    the expression uses a construct croniter cannot step through (e.g. `W`, nearest weekday);
    such a schedule still fires, only its forecast is unknown.
    """
    expression = parse(text)
    zone = timezone(timezone_name)
    lower = max(after, start) if start else after
    if expression.kind == "at":
        assert expression.at is not None
        when = expression.at.replace(tzinfo=zone).astimezone(after.tzinfo)
        found = [when] if when > lower else []
    elif expression.kind == "rate":
        found = _rate_firings(text, anchor=start or anchor, after=lower, count=count)
    else:
        found = _cron_firings(text, zone, after=lower, count=count, end=end)
        if found is None:
            return None
    return [when for when in found if end is None or when <= end][:count]


def _rate_firings(text: str, *, anchor: datetime, after: datetime, count: int) -> list[datetime]:
    value, unit = text.strip()[len("rate(") : -1].split()
    period = timedelta(seconds=int(value) * _RATE_UNIT_SECONDS[unit.rstrip("s")])
    elapsed = max(0, math.floor((after - anchor) / period) + 1)
    return [anchor + period * (elapsed + step) for step in range(count)]


def _cron_firings(
    text: str, zone: ZoneInfo, *, after: datetime, count: int, end: datetime | None
) -> list[datetime] | None:
    from croniter import CroniterBadDateError, CroniterError, croniter

    fields = dict(zip(CRON_FIELDS, text.strip()[len("cron(") : -1].split(), strict=True))
    if any("W" in value.upper() for value in fields.values()):
        return None
    candidate = list(_CRONITER_TEMPLATE)
    for name, value in fields.items():
        candidate[_CRONITER_POSITION[name]] = _translate(name, value)
    try:
        steps = croniter(" ".join(candidate), after.astimezone(zone))
        found = []
        for _ in range(count):
            try:
                when = steps.get_next(datetime).astimezone(after.tzinfo)
            except CroniterBadDateError:  # no more firings (e.g. its year field has passed)
                break
            if end is not None and when > end:
                break
            found.append(when)
    except (CroniterError, ValueError, KeyError):
        return None
    return found


def firings_between(
    text: str, timezone_name: str, *, anchor: datetime, start: datetime, end: datetime, limit: int
) -> list[datetime] | None:
    """The firing times of the expression from `start` (included) to `end` (excluded), aware, in UTC: at most
    `limit` + 1, so a caller can tell a window holding more than `limit`. None when the expression uses a
    construct croniter cannot step through (`W`).

    Unlike `next_firings`, a rate() is counted backwards from its `anchor` too: a backfill may ask for the
    occurrences of a window before the schedule existed, as if it had."""
    expression = parse(text)
    zone = timezone(timezone_name)
    if expression.kind == "at":
        assert expression.at is not None
        when = expression.at.replace(tzinfo=zone).astimezone(UTC)
        return [when] if start <= when < end else []
    if expression.kind == "rate":
        value, unit = text.strip()[len("rate(") : -1].split()
        period = timedelta(seconds=int(value) * _RATE_UNIT_SECONDS[unit.rstrip("s")])
        first = math.ceil((start - anchor) / period)
        found = []
        while len(found) <= limit and (when := anchor + period * (first + len(found))) < end:
            found.append(when.astimezone(UTC))
        return found
    # A cron's occurrences from just before `start`, so one due exactly at `start` is included.
    steps = _cron_firings(
        text, zone, after=start - timedelta(seconds=1), count=limit + 1, end=end - timedelta(microseconds=1)
    )
    return None if steps is None else [when.astimezone(UTC) for when in steps]


def firings_per_hour(text: str) -> int:
    """The most firings the expression makes in any one hour: its weight in the tenant's firings budget.

    A recurring schedule's busiest hour, whatever its day fields: rate(1 minute) 60, rate(7 minutes) 9,
    rate(1 hour) or longer 1; a cron, the minutes its minutes field names (cron(0/5 * * * ? *) 12, a daily
    cron 1). A one-time at() is 0: the budget bounds recurring firings. The expression is valid (`parse`).
    """
    expression = parse(text)
    if expression.kind == "at":
        return 0
    if expression.kind == "rate":
        value, unit = text.strip()[len("rate(") : -1].split()
        seconds = int(value) * _RATE_UNIT_SECONDS[unit.rstrip("s")]
        return math.ceil(3_600 / seconds) if seconds < 3_600 else 1
    from croniter import croniter

    minutes = text.strip()[len("cron(") : -1].split()[0]
    expanded = croniter.expand(f"{minutes} * * * *")[0][0]
    return 60 if expanded == ["*"] else len(expanded)
