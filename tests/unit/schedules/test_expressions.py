"""Schedule expressions as EventBridge Scheduler accepts them (AWS cron is not Unix cron)."""

import pytest

from shared.schedules.expressions import InvalidExpression, parse, timezone


@pytest.mark.parametrize(
    "expression",
    [
        "cron(0 0 * * ? *)",
        "cron(15 10 ? * 6L 2026-2030)",
        "cron(0 18 ? * MON-FRI *)",
        "cron(0/5 8-17 ? * MON-FRI *)",
        "cron(0 9 ? * 2#1 *)",
        "cron(0 0 L * ? *)",
        "cron(0 0 LW * ? *)",
        "cron(0 0 15W * ? *)",
        "cron(0 0 ? * L *)",
        "cron(0 0 ? * 1-7 *)",
        "cron(0 0 1,15 JAN-MAR ? *)",
        "rate(1 minute)",
        "rate(5 minutes)",
        "rate(2 hours)",
        "rate(1 day)",
        "at(2026-12-31T23:59:00)",
    ],
)
def test_expressions_scheduler_accepts_are_accepted(expression):
    assert parse(expression).text == expression


@pytest.mark.parametrize(
    ("expression", "says"),
    [
        ("cron(0 0 * * *)", "has 5 fields"),  # Unix cron
        ("cron(0 0 * * * *)", "exactly one of day-of-month"),
        ("cron(0 0 ? * ? *)", "exactly one of day-of-month"),
        ("cron(60 0 * * ? *)", "minutes '60'"),
        ("cron(0 24 * * ? *)", "hours '24'"),
        ("cron(0 0 32 * ? *)", "day-of-month '32'"),
        ("cron(0 0 * 13 ? *)", "month '13'"),
        ("cron(0 0 ? * 0 *)", "day-of-week '0'"),  # AWS counts 1 = SUN .. 7 = SAT
        ("cron(0 0 ? * 8 *)", "day-of-week '8'"),
        ("cron(0 0 1W,15 * ? *)", "day-of-month"),
        ("cron(0 ? * * ? *)", "'?' is allowed only"),
        ("rate(1 minutes)", "'minute'"),
        ("rate(2 hour)", "'hours'"),
        ("rate(0 minutes)", "positive"),
        ("rate(30 seconds)", "minute[s]"),
        ("at(2026-12-31 23:59)", "yyyy-mm-ddThh:mm:ss"),
        ("0 0 * * ? *", "not a schedule expression"),
    ],
)
def test_a_bad_expression_says_what_is_wrong(expression, says):
    with pytest.raises(InvalidExpression) as refused:
        parse(expression)
    assert says in str(refused.value)


def test_timezones_are_iana_names():
    assert str(timezone("Europe/Paris")) == "Europe/Paris"
    with pytest.raises(InvalidExpression, match="IANA"):
        timezone("CEST+2")
