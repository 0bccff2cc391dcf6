"""Job commands over the API: enqueue (one, or bulk from a file), get, list, wait, cancel, retry, stats."""

from __future__ import annotations

import json
import sys
import time
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from cli import render, short_ids
from cli.common import CliError, Exit, JsonFlag, corral
from cli.flow import (
    DebounceOption,
    ThrottleOption,
    UniqueOption,
    flow_options,
)
from client import FINISHED, Corral, EnqueueOutcome, Job

Priority = StrEnum("Priority", ["high", "default", "low"])  # --priority's choices: a job's lane
PayloadOption = Annotated[
    str | None, typer.Option("--payload", "-p", help="The job's payload: JSON, or @file to read JSON from a file.")
]


def register(app: typer.Typer) -> None:
    for command in (enqueue, get, list_jobs, watch, wait, cancel, retry, stats):
        app.command(name=command.__name__.removesuffix("_jobs"), rich_help_panel="Jobs (API)")(command)


def parse_payload(raw: str | None, option: str = "--payload") -> Any:
    """`raw` (JSON, or @file) as the value it holds; a clear error naming `option` (or the file) if it is not JSON."""
    if raw is None:
        return None
    source = option
    if raw.startswith("@"):
        path = Path(raw[1:])
        try:
            raw = path.read_text()
        except OSError as error:
            raise CliError(f"{option}: cannot read {path}: {error.strerror}", Exit.USAGE, "bad_payload") from error
        source = str(path)
    try:
        return json.loads(raw)
    except ValueError as error:
        raise CliError(f"{source} is not valid JSON: {error}", Exit.USAGE, "bad_payload") from error


def read_jobs(path: Path, default_type: str | None) -> list[dict[str, Any]]:
    """Jobs from JSON Lines (one job body per line) or a JSON array; '-' reads stdin."""
    try:
        text = sys.stdin.read() if str(path) == "-" else path.read_text()
    except OSError as error:
        raise CliError(f"cannot read {path}: {error.strerror}", Exit.USAGE, "bad_file") from error
    stripped = text.lstrip()
    if stripped.startswith("["):
        try:
            items = json.loads(stripped)
        except ValueError as error:
            raise CliError(f"{path} is not a valid JSON array: {error}", Exit.USAGE, "bad_file") from error
        numbered = list(enumerate(items, start=1))
    else:
        numbered = []
        for number, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                numbered.append((number, json.loads(line)))
            except ValueError as error:
                raise CliError(f"{path}, line {number}: not JSON ({error})", Exit.USAGE, "bad_file") from error
    jobs = []
    for number, item in numbered:
        if not isinstance(item, dict):
            raise CliError(f'{path}, item {number}: a job is a JSON object like {{"type": ...}}', Exit.USAGE)
        if default_type and "type" not in item:
            item["type"] = default_type
        jobs.append(item)
    if not jobs:
        raise CliError(f"{path} holds no jobs", Exit.USAGE, "bad_file")
    return jobs


def _bulk(api: Corral, jobs: list[dict[str, Any]], as_json: bool) -> None:
    with Progress(
        TextColumn("enqueueing"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=render.err,
        transient=True,
        disable=as_json or not render.err.is_terminal,
    ) as progress:
        task = progress.add_task("enqueue", total=len(jobs))
        outcomes = api.enqueue_many(jobs, on_chunk=lambda n: progress.advance(task, n))
    refused = [outcome for outcome in outcomes if not outcome.ok]
    if as_json:
        render.emit_json(
            {
                "accepted": len(outcomes) - len(refused),
                "rejected": len(refused),
                "results": [_outcome_json(outcome) for outcome in outcomes],
            }
        )
    else:
        render.out.print(f"[green]{len(outcomes) - len(refused)} accepted[/], [red]{len(refused)} refused[/]")
        if refused:
            render.table(
                "refused (first 20)",
                ["#", "error", "field", "message"],
                [[o.index, o.error.code, o.error.field, o.error.message] for o in refused[:20] if o.error],
            )
    if refused:
        raise typer.Exit(Exit.PARTIAL if len(refused) < len(outcomes) else Exit.INVALID)


def _outcome_json(outcome: EnqueueOutcome) -> dict[str, Any]:
    error = outcome.error
    if error is None:
        return {"index": outcome.index, "id": outcome.id, "status": "queued"}
    return {
        "index": outcome.index,
        "status": "rejected",
        "error": error.code,
        "message": error.message,
        "field": error.field,
    }


def _wait_with_spinner(api: Corral, job_id: str, timeout: float, statuses: tuple[str, ...], as_json: bool) -> Job:
    deadline = time.monotonic() + timeout
    interval = 0.2
    with render.err.status(f"waiting for {job_id}", spinner="dots") as spinner:
        if as_json or not render.err.is_terminal:
            spinner.stop()
        while True:
            job = api.get(job_id)
            if job["status"] in statuses:
                return job
            if time.monotonic() >= deadline:
                raise CliError(
                    f"job {job_id} still {job['status']} after {timeout:g}s (not waiting longer)",
                    Exit.TIMEOUT,
                    "wait_timeout",
                )
            spinner.update(f"waiting for {job_id}: {render.status(job['status'])} (attempt {job.get('attempts', 0)})")
            time.sleep(min(interval, max(0.0, deadline - time.monotonic())))
            interval = min(interval * 1.5, 2.0)


def _show_finished(job: Job, as_json: bool) -> None:
    render.emit(job, as_json, lambda: render.job_view(dict(job)))
    if job["status"] in ("dead", "cancelled"):
        raise typer.Exit(Exit.JOB_FAILED)


def enqueue(
    job_type: Annotated[
        str | None, typer.Argument(help="The job type, e.g. echo (with --from-file: the default)")
    ] = None,
    payload: PayloadOption = None,
    delay: Annotated[int | None, typer.Option("--delay", help="Run it this many seconds from now.")] = None,
    run_at: Annotated[str | None, typer.Option(help="Run it at this time (ISO 8601).")] = None,
    max_attempts: Annotated[int | None, typer.Option(help="Attempts before it is dead (1-25, default 3).")] = None,
    idempotency_key: Annotated[str | None, typer.Option(help="The same key enqueues the same job once.")] = None,
    on_success: Annotated[
        str | None, typer.Option(help="A job body (JSON or @file) enqueued once it succeeded; its payload gets parent.")
    ] = None,
    on_failure: Annotated[
        str | None, typer.Option(help="A job body (JSON or @file) enqueued once it is dead; its payload gets parent.")
    ] = None,
    concurrency_key: Annotated[
        str | None, typer.Option(help="With --concurrency-limit: at most that many jobs with this key run at once.")
    ] = None,
    concurrency_limit: Annotated[
        int | None, typer.Option(min=1, max=1000, help="How many jobs with --concurrency-key run at once (1-1000).")
    ] = None,
    unique: UniqueOption = None,
    throttle: ThrottleOption = None,
    debounce: DebounceOption = None,
    priority: Annotated[Priority | None, typer.Option(help="Its lane (default: its type's).")] = None,
    wait_: Annotated[bool, typer.Option("--wait", help="Wait for it to finish and show it.")] = False,
    timeout: Annotated[float, typer.Option(help="With --wait: give up after this many seconds.")] = 60,
    from_file: Annotated[
        Path | None, typer.Option(help="Bulk: a JSON Lines file (or JSON array) of job bodies; '-' for stdin.")
    ] = None,
    as_json: JsonFlag = False,
) -> None:
    """Enqueue a job (or many with --from-file); prints its id."""
    api = corral()
    if from_file is not None:
        if payload is not None or wait_:
            raise CliError("--from-file takes the payloads from the file; --payload/--wait do not apply", Exit.USAGE)
        _bulk(api, read_jobs(from_file, job_type), as_json)
        return
    if not job_type:
        raise CliError("give a job type (e.g. `corral enqueue echo --payload '{\"a\": 1}'`) or --from-file", Exit.USAGE)
    if (concurrency_key is None) != (concurrency_limit is None):
        raise CliError("give --concurrency-key and --concurrency-limit together", Exit.USAGE)
    options = {
        "delay_seconds": delay,
        "run_at": run_at,
        "max_attempts": max_attempts,
        "idempotency_key": idempotency_key,
        "concurrency": {"key": concurrency_key, "limit": concurrency_limit} if concurrency_key else None,
        "on_success": parse_payload(on_success),
        "on_failure": parse_payload(on_failure),
        **flow_options(unique=unique, throttle=throttle, debounce=debounce),
        "priority": priority and priority.value,
    }
    given = {k: v for k, v in options.items() if v is not None}
    accepted = api.enqueue_job({"type": job_type, "payload": parse_payload(payload), **given})
    job_id = accepted["id"]
    if wait_:
        _show_finished(_wait_with_spinner(api, job_id, timeout, FINISHED, as_json), as_json)
        return
    shown = job_id if accepted["status"] != "duplicate" else f"{job_id} (duplicate: it holds the unique key)"
    render.emit({"id": job_id, "status": accepted["status"]}, as_json, lambda: render.out.print(shown))


JobIdArgument = Annotated[str, typer.Argument(help="The job's id, or its start as `corral list` shows it.")]


def get(job_id: JobIdArgument, as_json: JsonFlag = False) -> None:
    """Show a job: status, attempts, result or error, payload."""
    api = corral()
    job = api.get(short_ids.resolve(api, job_id))
    render.emit(job, as_json, lambda: render.job_view(dict(job)))


StatusOption = Annotated[
    str | None, typer.Option(help="queued, running, waiting, succeeded, failed, dead, cancelled or skipped.")
]
TypeOption = Annotated[str | None, typer.Option("--type", help="Only jobs of this type.")]


def list_jobs(
    status: StatusOption = None,
    job_type: TypeOption = None,
    schedule: Annotated[str | None, typer.Option(help="Only runs of this schedule.")] = None,
    since: Annotated[str | None, typer.Option(help="Enqueued at or after (ISO 8601).")] = None,
    until: Annotated[str | None, typer.Option(help="Enqueued at or before (ISO 8601).")] = None,
    limit: Annotated[int, typer.Option(min=1, max=10_000, help="Show at most this many (newest first).")] = 20,
    wide: Annotated[bool, typer.Option("--wide", "-w", help="Whole ids, the error column, full times.")] = False,
    as_json: JsonFlag = False,
) -> None:
    """List this tenant's jobs, newest first: one line each, ids shortened to a unique start (as git does)
    that get, wait, cancel and retry accept; --wide shows them whole."""
    api = corral()
    jobs: list[Job] = []
    next_cursor, note = None, ""
    filters = {"status": status, "type": job_type, "schedule": schedule, "since": since, "until": until}
    for page in api.pages(page_size=min(limit, 100), **filters):
        note, next_cursor = page.note, page.next_cursor
        jobs += page.jobs[: limit - len(jobs)]
        if len(jobs) >= limit:
            break
    if as_json:
        render.emit_json({"jobs": jobs, "next_cursor": next_cursor, "note": note})
        return
    more = " (more: raise --limit)" if next_cursor else ""
    if wide:
        rows = [[job["id"], *_job_cells(job, render.when), (job.get("error") or "")[:60]] for job in jobs]
        render.table(None, ["id", *_JOB_COLUMNS, "error"], rows, caption=note + more)
        return
    # Fits 80 columns: short ids, short times, no error column; a cell too long is cut, never wrapped.
    shown = short_ids.shortest_unique_prefixes(job["id"] for job in jobs)
    rows = [[shown[job["id"]], *_job_cells(job, render.short_when)] for job in jobs]
    render.lines(["id", *_JOB_COLUMNS], rows)
    # The listing's note in a line that fits (--wide prints it whole): queued jobs are not listed yet.
    render.err.print(f"[dim]jobs not yet picked up are not listed{'; more: raise --limit' if more else ''}[/]")


_JOB_COLUMNS = ["type", "status", "tries", "enqueued", "finished"]


def _job_cells(job: Job, when: Any) -> list[Any]:
    return [
        job.get("type"),
        render.status(job.get("status")),
        f"{job.get('attempts', 0)}/{job.get('max_attempts') or '-'}",
        when(job.get("enqueued_at")),
        when(job.get("finished_at")),
    ]


def _watched_state(job: Job) -> tuple[Any, ...]:
    """What `watch` prints a line for when it changes."""
    return (job.get("status"), job.get("attempts"))


def watch(
    status: StatusOption = None,
    job_type: TypeOption = None,
    interval: Annotated[float, typer.Option(min=1.0, max=60.0, help="Seconds between looks.")] = 2.0,
    limit: Annotated[int, typer.Option(min=1, max=100, help="The newest jobs watched each look.")] = 50,
    as_json: JsonFlag = False,
) -> None:
    """Stream job changes as they happen (like `kubectl get -w`): a line for each job that appears or
    changes status among the newest --limit; Ctrl-C ends it. With --json, one JSON object per line."""
    api = corral()
    last: dict[str, tuple[Any, ...]] = {}
    filters = {"status": status, "type": job_type}
    while True:
        page = next(iter(api.pages(page_size=limit, **filters)))
        for job in reversed(page.jobs):  # oldest first: changes print in the order they happened
            state = _watched_state(job)
            if last.get(job["id"]) == state:
                continue
            last[job["id"]] = state
            if as_json:
                sys.stdout.write(json.dumps(job, default=str) + "\n")
                sys.stdout.flush()
            else:
                cells = [job["id"][: short_ids.MIN_PREFIX + 4], *_job_cells(job, render.short_when)]
                render.out.print("  ".join(str(cell) for cell in cells), highlight=False)
        if len(last) > 10 * limit:  # jobs long past the newest --limit: forget them
            last = {job["id"]: _watched_state(job) for job in page.jobs}
        time.sleep(interval)


def wait(
    job_id: JobIdArgument,
    timeout: Annotated[float, typer.Option(help="Give up after this many seconds (exit 8).")] = 60,
    status: Annotated[
        list[str] | None, typer.Option("--for", help="Wait for this status (repeatable); default: any finished one.")
    ] = None,
    as_json: JsonFlag = False,
) -> None:
    """Wait for a job to finish (exit 0 succeeded, 1 dead or cancelled, 8 timed out)."""
    wanted = tuple(status) if status else FINISHED
    api = corral()
    _show_finished(_wait_with_spinner(api, short_ids.resolve(api, job_id), timeout, wanted, as_json), as_json)


def cancel(job_id: JobIdArgument, as_json: JsonFlag = False) -> None:
    """Cancel a job that has not started (queued, delayed or waiting to retry); a running one answers exit 4."""
    api = corral()
    job = api.cancel(short_ids.resolve(api, job_id))
    render.emit(job, as_json, lambda: render.out.print(f"{job['id']} {render.status(job['status'])}"))


def retry(
    job_id: Annotated[str | None, typer.Argument(help="A dead or cancelled job's id (or its start).")] = None,
    dead: Annotated[bool, typer.Option("--dead", help="Retry this tenant's dead jobs (filters below).")] = False,
    job_type: Annotated[str | None, typer.Option("--type", help="With --dead: only this type.")] = None,
    since: Annotated[str | None, typer.Option(help="With --dead: only jobs enqueued since (ISO 8601).")] = None,
    max_jobs: Annotated[int, typer.Option("--max", min=1, help="With --dead: at most this many in all.")] = 1000,
    as_json: JsonFlag = False,
) -> None:
    """Run a dead or cancelled job again (fresh attempts, same id), or with --dead many of them."""
    api = corral()
    if (job_id is None) == (not dead):
        raise CliError("give a job id, or --dead for this tenant's dead jobs (not both)", Exit.USAGE)
    if job_id is not None:
        answer = api.retry(short_ids.resolve(api, job_id))
        if as_json:
            render.emit_json(answer)
        else:
            render.out.print(f"{answer['id']} {render.status(answer['status'])}")
        return
    ids: list[str] = []
    more = True
    with render.err.status("retrying dead jobs", spinner="dots") as spinner:
        if as_json or not render.err.is_terminal:
            spinner.stop()
        for _ in range(1000):  # bounded: each call retries up to the API's per-request bound
            answer = api.retry_dead(type=job_type, since=since, limit=min(100, max_jobs - len(ids)))
            ids += answer["ids"]
            more = answer["more"]
            spinner.update(f"retrying dead jobs: {len(ids)} so far")
            if not more or not answer["ids"] or len(ids) >= max_jobs:
                break
    if as_json:
        render.emit_json({"retried": len(ids), "ids": ids, "more": more})
    else:
        render.out.print(f"retried {len(ids)} dead job(s)" + (" (more remain: run it again)" if more else ""))


def stats(
    window: Annotated[int | None, typer.Option("--window", help="Counts over the last N seconds.")] = None,
    as_json: JsonFlag = False,
) -> None:
    """This tenant's counts by status, throughput per minute and enqueue-to-run percentiles."""
    answer = corral().stats(window)
    if as_json:
        render.emit_json(answer)
        return
    counts = answer.get("counts", {})
    render.table(
        f"jobs by status, last {answer.get('window_seconds')} s",
        ["status", "jobs"],
        [[render.status(name), count] for name, count in counts.items()],
    )
    latency = answer.get("enqueue_to_run_ms", {})
    render.out.print(
        f"enqueue-to-run: p50 {latency.get('p50')} ms, p99 {latency.get('p99')} ms over {latency.get('count')} jobs"
    )
    minutes = answer.get("per_minute", [])[-10:]
    if minutes:
        columns = ["minute", "enqueued", "succeeded", "failed", "dead"]
        render.table("last minutes", columns, [[m.get(c) for c in columns] for m in minutes])
    render.out.print(f"[dim]source: {answer.get('source')}[/]")
