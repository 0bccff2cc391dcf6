"""Operator commands, with AWS credentials rather than an API key: tenants, keys, the DLQ, the queue.

They work against AWS, a LocalStack or the embedded stack (cli/target.py says which is chosen).
"""

from __future__ import annotations

import dataclasses
from typing import Annotated

import typer

from cli import render, target
from cli.common import CliError, Exit, JsonFlag
from shared import settings
from shared.errors import InvalidRequest
from shared.operations import dead_letters, queue_health
from shared.tenants import operators, quotas, scopes, tenants
from shared.tenants.scopes import Scope

PANEL = "Operator (AWS credentials)"

tenants_app = typer.Typer(no_args_is_help=True)
keys_app = typer.Typer(no_args_is_help=True)
operators_app = typer.Typer(no_args_is_help=True)
dlq_app = typer.Typer(no_args_is_help=True)


def register(app: typer.Typer) -> None:
    app.add_typer(tenants_app, name="tenants", help="Create and list tenants.", rich_help_panel=PANEL)
    app.add_typer(keys_app, name="keys", help="Mint, list and revoke API keys.", rich_help_panel=PANEL)
    app.add_typer(operators_app, name="operators", help="Mint, list and revoke operator keys.", rich_help_panel=PANEL)
    app.add_typer(dlq_app, name="dlq", help="The dead-letter queue: list, redrive.", rich_help_panel=PANEL)
    app.command("queue", rich_help_panel=PANEL)(queue)


def _connect(*, queues: bool = False) -> target.Aws:
    aws = target.aws_target()
    target.use_aws(aws, queues=queues)
    return aws


def _operator_error(error: tenants.TenantError) -> CliError:
    return CliError(str(error), Exit.INVALID, "invalid_request")


TenantArgument = Annotated[str, typer.Argument(help="The tenant's name.")]


@tenants_app.command("create")
def create_tenant(name: TenantArgument, as_json: JsonFlag = False) -> None:
    """Create a tenant (then `corral keys create <tenant>`)."""
    _connect()
    try:
        tenant = tenants.create_tenant(name)
    except tenants.TenantError as error:
        raise _operator_error(error) from error
    if as_json:
        render.emit_json({"name": tenant.name, "created_at": tenant.created_at})
    else:
        render.out.print(f"created tenant {tenant.name}")


@tenants_app.command("list")
def list_tenants(as_json: JsonFlag = False) -> None:
    """Every tenant, with its number of keys."""
    _connect()
    found = [(tenant, len(tenants.list_keys(tenant.name))) for tenant in tenants.list_tenants()]
    if as_json:
        render.emit_json({"tenants": [{"name": t.name, "created_at": t.created_at, "keys": n} for t, n in found]})
        return
    render.table(None, ["tenant", "created", "keys"], [[t.name, t.created_at[:19], n] for t, n in found])


# Which usage counter each quota limit bounds (the rate limits bound no count).
_QUOTA_OF = {quota.limit_name: quota for quota in quotas.QUOTAS}


def _shown_usage(name: str, usage: dict[str, int]) -> float | int | None:
    """What the tenant holds against the limit `name`, in the limit's units (the firings budget: per minute)."""
    quota = _QUOTA_OF.get(name)
    if quota is None:
        return None
    held = usage[quota.counter]
    return held if quota.scale == 1 else round(held / quota.scale, 3)


def _parse_settings(assignments: list[str]) -> dict[str, float | int | None]:
    changes: dict[str, float | int | None] = {}
    for assignment in assignments:
        name, equals, value = assignment.partition("=")
        if not equals or not name.strip():
            raise CliError(f"--set takes NAME=NUMBER, not {assignment!r}", Exit.USAGE, "invalid_request")
        try:
            number = float(value)
        except ValueError as error:
            raise CliError(f"--set {name}: {value!r} is not a number", Exit.USAGE, "invalid_request") from error
        name = name.strip()
        changes[name] = int(number) if number.is_integer() and name != "enqueue_rate_per_second" else number
    return changes


@tenants_app.command("limits")
def tenant_limits(
    tenant: TenantArgument,
    set_: Annotated[
        list[str] | None, typer.Option("--set", help="NAME=NUMBER: override a limit for this tenant (repeatable).")
    ] = None,
    clear: Annotated[list[str] | None, typer.Option("--clear", help="NAME: back to the default (repeatable).")] = None,
    recount: Annotated[
        bool,
        typer.Option(
            "--recount",
            help="Recount usage from the tenant's schedules, far-future jobs and triggers (drops lost firings' holds).",
        ),
    ] = False,
    as_json: JsonFlag = False,
) -> None:
    """A tenant's limits in force (default or overridden) and its usage; --set/--clear change them."""
    _connect()
    if tenants.get_tenant(tenant) is None:
        raise CliError(f"no tenant {tenant!r}", Exit.NOT_FOUND, "not_found")
    changes = _parse_settings(set_ or []) | {name: None for name in clear or []}
    if changes:
        try:
            quotas.set_limits(tenant, **changes)
        except ValueError as error:
            raise CliError(str(error), Exit.INVALID, "invalid_request") from error
    recounted = None
    if recount:
        from shared.operations.recount import recount as recount_usage

        recounted = recount_usage(tenant, prune=True)
    overrides = quotas.overrides_of(tenant)
    in_force = dataclasses.replace(quotas.DEFAULTS, **overrides)
    usage = quotas.usage(tenant)
    if as_json:
        document: dict[str, object] = {
            "tenant": tenant,
            "limits": dataclasses.asdict(in_force),
            "overridden": sorted(overrides),
            "defaults": dataclasses.asdict(quotas.DEFAULTS),
            "usage": usage,
        }
        if recounted is not None:
            document["recount"] = {
                "before": recounted.before,
                "after": recounted.after,
                "pruned": recounted.pruned,
                "schedules_repaired": recounted.schedules_repaired,
            }
        render.emit_json(document)
        return
    rows = [
        [
            name,
            f"{getattr(in_force, name)}" + (" (set)" if name in overrides else ""),
            getattr(quotas.DEFAULTS, name),
            _shown_usage(name, usage),
        ]
        for name in quotas.TenantLimits.names()
    ]
    render.table(
        f"limits of {tenant}",
        ["limit", "in force", "default", "usage"],
        rows,
        caption=f"API instances apply a change within {settings.TENANT_LIMITS_CACHE_SECONDS} s",
    )
    if recounted is not None:
        render.err.print(
            f"recounted: {recounted.before} -> {recounted.after}; pruned {len(recounted.pruned)} stale hold(s); "
            f"removed {len(recounted.schedules_repaired)} half-created or unrecorded schedule(s)"
        )


@keys_app.command("create")
def create_key(
    tenant: TenantArgument,
    label: Annotated[str, typer.Option(help="What the key is for (shown in listings).")] = "",
    scope: Annotated[
        Scope,
        typer.Option(
            help="What the key may do: read (see jobs, batches, schedules, stats), enqueue (add jobs and batches,"
            " read nothing), full (everything)."
        ),
    ] = scopes.DEFAULT,
    new_tenant: Annotated[bool, typer.Option(help="Create the tenant if it does not exist.")] = False,
    as_json: JsonFlag = False,
) -> None:
    """Mint an API key for a tenant. The key is printed once: only its hash is stored."""
    _connect()
    try:
        if tenants.get_tenant(tenant) is None and not new_tenant:
            raise CliError(
                f"no tenant {tenant!r}: create it with `corral tenants create {tenant}` (or pass --new-tenant)",
                Exit.NOT_FOUND,
                "not_found",
            )
        key = tenants.create_key(tenant, label=label, scope=scope)
    except tenants.TenantError as error:
        raise _operator_error(error) from error
    from shared.tenants import api_keys

    if as_json:
        render.emit_json(
            {"tenant": tenant, "key": key, "key_id": api_keys.key_id(key), "label": label, "scope": scope.value}
        )
        return
    render.out.print(key, highlight=False)
    render.err.print(
        f"[dim]{scope.value} key {api_keys.key_id(key)} for tenant {tenant}: store it now, it is not shown again[/]"
    )


@keys_app.command("list")
def list_keys(tenant: TenantArgument, as_json: JsonFlag = False) -> None:
    """A tenant's keys: id, scope, label, created, last 4 characters (never the key)."""
    _connect()
    found = tenants.list_keys(tenant)
    if as_json:
        render.emit_json({"tenant": tenant, "keys": [vars(k) for k in found]})
        return
    render.table(
        f"keys of {tenant}",
        ["key id", "scope", "label", "created", "ends with"],
        [[k.key_id, k.scope, k.label, k.created_at[:19], "…" + k.last4] for k in found],
    )


@keys_app.command("revoke")
def revoke_key(
    key: Annotated[str, typer.Argument(help="The key itself, or its key id (then --tenant).")],
    tenant: Annotated[str | None, typer.Option(help="The key's tenant (needed with a key id).")] = None,
    as_json: JsonFlag = False,
) -> None:
    """Revoke a key; it stops working within the API's key cache time. The tenant's schedules keep running."""
    _connect()
    try:
        revoked = tenants.revoke_key(key, tenant=tenant)
    except tenants.TenantError as error:
        raise CliError(str(error), Exit.NOT_FOUND, "not_found") from error
    bound = target.api_key_cache_seconds()
    schedules = tenants.schedule_count(revoked.tenant) if revoked.keys_left == 0 else None
    if as_json:
        render.emit_json(
            {
                "key_id": revoked.key_id,
                "tenant": revoked.tenant,
                "keys_left": revoked.keys_left,
                "effective_within_seconds": bound,
                "schedules_still_firing": schedules,
            }
        )
        return
    render.out.print(f"revoked key {revoked.key_id} of {revoked.tenant}: it stops working within {bound} s")
    if revoked.keys_left == 0:
        render.err.print(
            f"[yellow]{revoked.tenant} has no key left; its {schedules} schedule(s) keep firing "
            "(delete them with the API, or mint a new key)[/]"
        )


@dlq_app.command("list")
def dlq_list(
    tenant: Annotated[str | None, typer.Option(help="Only this tenant's messages.")] = None,
    limit: Annotated[int, typer.Option(min=1, max=10_000, help="Look at this many messages at most.")] = 100,
    as_json: JsonFlag = False,
) -> None:
    """Count the DLQ's messages and show them (tenant, job, reason). Looking leaves them in place."""
    _connect(queues=True)
    total = dead_letters.count()
    letters = dead_letters.inspect(tenant=tenant, limit=limit)
    if as_json:
        render.emit_json({"count": total, "messages": [letter.public() for letter in letters]})
        return
    rows = [
        [letter.tenant, letter.job_id, letter.job_type, render.when(letter.sent_at), letter.reason[:80]]
        for letter in letters
    ]
    render.table(
        f"DLQ: {total} message(s)" + (f", {len(letters)} of {tenant}" if tenant else ""),
        ["tenant", "job id", "type", "dead-lettered", "reason"],
        rows,
    )


@dlq_app.command("redrive")
def dlq_redrive(
    tenant: Annotated[str | None, typer.Option(help="Only this tenant's jobs.")] = None,
    all_tenants: Annotated[bool, typer.Option("--all", help="Every tenant's jobs.")] = False,
    limit: Annotated[int, typer.Option(min=1, max=100_000, help="Receive this many messages at most.")] = 1000,
    as_json: JsonFlag = False,
) -> None:
    """Run the DLQ's jobs again: each dead job is reset (fresh attempts, same id), sent, then removed from the DLQ."""
    if (tenant is None) == (not all_tenants):
        raise CliError("say whose jobs: --tenant NAME, or --all", Exit.USAGE)
    _connect(queues=True)
    with render.err.status("redriving", spinner="dots") as spinner:
        if as_json or not render.err.is_terminal:
            spinner.stop()
        report = dead_letters.redrive(tenant=tenant, limit=limit)
    if as_json:
        render.emit_json(
            {
                "redriven": report.redriven,
                "stale": report.stale,
                "left": report.left,
                "other_tenants": report.other_tenants,
            }
        )
    else:
        counts = f"redriven {len(report.redriven)}, stale (no longer dead, removed) {len(report.stale)}"
        render.out.print(f"{counts}, left {len(report.left)}")
        if report.left:
            render.table(
                "left in the DLQ", ["message id", "why"], [[e["message_id"], e["reason"]] for e in report.left]
            )
    if report.left:
        raise typer.Exit(Exit.PARTIAL)


def queue(as_json: JsonFlag = False) -> None:
    """Queue health: depth, in flight, delayed, oldest message age; the jobs queue and its DLQ."""
    aws = _connect(queues=True)
    found = queue_health.both()
    if as_json:
        render.emit_json({"where": aws.where, "queues": [q.public() for q in found]})
        return
    rows = [
        [
            q.name,
            q.depth,
            q.in_flight,
            q.delayed,
            "n/a" if q.oldest_age_seconds is None else f"{q.oldest_age_seconds:.0f} s",
        ]
        for q in found
    ]
    render.table(f"queues ({aws.where})", ["queue", "depth", "in flight", "delayed", "oldest age"], rows)


@operators_app.command("create")
def create_operator_key(
    label: Annotated[str, typer.Option(help="Who or what holds it (shown in listings).")] = "",
    expires_in_days: Annotated[
        float | None, typer.Option(help="The key stops working after this many days (default: until revoked).")
    ] = None,
    as_json: JsonFlag = False,
) -> None:
    """Mint an operator key (co_...): it opens the /operator routes and the dashboard's operator view."""
    _connect()
    from shared.tenants import api_keys

    try:
        key = operators.create_key(label, expires_in_days=expires_in_days)
    except InvalidRequest as error:
        raise CliError(f"--{error.field.replace('_', '-')}: {error.message}", Exit.USAGE, "invalid_request") from error
    if as_json:
        render.emit_json({"key": key, "key_id": api_keys.key_id(key), "label": label})
        return
    render.out.print(key, highlight=False)
    render.err.print(f"[dim]operator key id {api_keys.key_id(key)}: store it now, it is not shown again[/]")


@operators_app.command("list")
def list_operator_keys(as_json: JsonFlag = False) -> None:
    """Every operator key: id, label, created, expiry (never the key)."""
    _connect()
    found = operators.list_keys()
    render.emit(
        {"operator_keys": [dataclasses.asdict(k) for k in found]},
        as_json,
        lambda: render.table(
            "operator keys",
            ["key id", "label", "created", "expires"],
            [[k.key_id, k.label, k.created_at[:19], (k.expires_at or "never")[:19]] for k in found],
        ),
    )


@operators_app.command("revoke")
def revoke_operator_key(
    key_id: Annotated[str, typer.Argument(help="The operator key's id (`corral operators list`).")],
    as_json: JsonFlag = False,
) -> None:
    """Revoke an operator key; it stops working within the API's key cache time."""
    _connect()
    if not operators.revoke(key_id):
        raise CliError(f"no operator key with id {key_id!r} (`corral operators list`)", Exit.NOT_FOUND, "not_found")
    bound = target.api_key_cache_seconds()
    render.emit(
        {"key_id": key_id, "revoked": True, "effective_within_seconds": bound},
        as_json,
        lambda: render.out.print(f"revoked operator key {key_id}; it stops working within {bound} s"),
    )
