"""The jobs table's keys: one builder per item kind, and the prefixes they are made of.

Every item's `pk` starts with its kind's prefix, and the `gsi1pk`/`gsi2pk` partitions that list
items of one kind start with theirs (shared/store/table_schema.py). This is the only module that
spells them: code elsewhere asks a builder here for a key, and reads an id out of one with the
matching `*_of` function.
"""

from __future__ import annotations

from typing import Any

# Item keys (`pk`), one per item kind.
JOB = "job#"  # a job's record: status, attempts, lease and attempt token, payload, result, times
TENANT = "tenant#"  # a tenant, with its limit overrides
API_KEY = "apikey#"  # a tenant's API key, by the SHA-256 of the key: its tenant, label, key id, last 4 characters
OPERATOR_KEY = "operatorkey#"  # an operator key, by the SHA-256 of the key
USAGE = "usage#"  # a tenant's quota counters (schedules, far-future jobs)
HOLD = "hold#"  # a far-future job's unit of its tenant's quota, by job id
RUNNING = "running#"  # a tenant's running slots: how many of its jobs run now, and which batches hold them
RATE_WINDOW = "ratewin#"  # the rate limiter's map of API instance -> last second it served the tenant, demand
SCHEDULE = "schedule#"  # a customer schedule's record, by tenant and name
SIGNING_SECRETS = "signing-secrets#"  # a tenant's HTTP signing secrets, versioned
CONFIG = "config#"  # a deployment-wide setting (the job-id signing key)
BATCH = "batch#"  # a batch: its counts, each member's state, its callbacks' flags; and its callbacks' specs
# a durable job's steps: each one's record and (if small) its result (shared/store/durable/journal_items.py)
JOURNAL = "journal#"
STEP_RESULT = "stepresult#"  # one step's result too large for its journal, by job and a nonce of the write that made it
EVENT_CHANNEL = "channel#"  # a tenant's event name: its sequence, hour marks and the match keys its waits use
EVENT_LOG = "eventlog#"  # one event sent on a channel, by its sequence number, kept for waits that register late
WAITS = "waits#"  # the jobs waiting for an event of one name and one match pair, a page of them
TOKEN = "token#"  # a token a durable job created to wait for a person: its job, expiry, state and data

# Index partitions (`gsi1pk`, `gsi2pk`), one per listing.
TENANTS = "tenants"  # gsi1: every tenant, by name
API_KEYS = "apikeys#"  # gsi1: a tenant's API keys, oldest first
OPERATOR_KEYS = "operatorkeys"  # gsi1: every operator key, oldest first
SCHEDULES = "schedules#"  # gsi1: a tenant's schedules, by name
RUNS = "runs#"  # gsi1: the jobs a schedule's firings became, newest first
FAR_FUTURE = "farfuture#"  # gsi1: a tenant's far-future holds, soonest due first
JOB_LISTING = "tenant#"  # gsi2: a tenant's jobs in one of its listing shards, newest first
BATCHES = "batches#"  # gsi2: a tenant's batches, newest first

JOB_ID_SIGNING_KEY = "job-id-signing-key"  # the config item holding the deployment's job-id secret


def item_key(pk: str) -> dict[str, Any]:
    """The low-level `Key` of the item whose `pk` is `pk`."""
    return {"pk": {"S": pk}}


def job_key(job_id: str) -> str:
    return JOB + job_id


def job_id_of(pk: str) -> str:
    """The job id in a job record's `pk`."""
    return pk.removeprefix(JOB)


def jobs_index_partition(tenant: str, shard: int) -> str:
    return f"{JOB_LISTING}{tenant}#{shard:02d}"


def tenant_key(tenant: str) -> str:
    return TENANT + tenant


def api_key_key(digest: str) -> str:
    """An API key's item, by the key's SHA-256 (shared/tenants/api_keys.py `digest`)."""
    return API_KEY + digest


def digest_of_api_key(pk: str) -> str:
    """The key's SHA-256 in an API key item's `pk`."""
    return pk.removeprefix(API_KEY)


def api_keys_partition(tenant: str) -> str:
    return API_KEYS + tenant


def operator_key_key(digest: str) -> str:
    """An operator key's item, by the key's SHA-256."""
    return OPERATOR_KEY + digest


def usage_key(tenant: str) -> str:
    return USAGE + tenant


def hold_key(job_id: str) -> str:
    return HOLD + job_id


def wait_hold_key(job_id: str) -> str:
    """A waiting durable job's unit of its tenant's `max_waiting_jobs` (a job id never starts with `wait#`)."""
    return f"{HOLD}wait#{job_id}"


def job_id_of_hold(pk: str) -> str:
    """The job id in a hold's `pk`."""
    return pk.removeprefix(HOLD)


def far_future_partition(tenant: str) -> str:
    return FAR_FUTURE + tenant


def running_key(tenant: str) -> str:
    return RUNNING + tenant


def concurrency_slots_key(tenant: str, key: str) -> str:
    """A concurrency key's running slots: the tenant's, apart from its own (`#` never occurs in a tenant's name)."""
    return f"{RUNNING}{tenant}#key#{key}"


def rate_window_key(tenant: str) -> str:
    return RATE_WINDOW + tenant


def schedule_key(tenant: str, name: str) -> str:
    return f"{SCHEDULE}{tenant}#{name}"


def schedules_partition(tenant: str) -> str:
    return SCHEDULES + tenant


def runs_partition(tenant: str, schedule: str) -> str:
    return f"{RUNS}{tenant}#{schedule}"


def signing_secrets_key(tenant: str) -> str:
    return SIGNING_SECRETS + tenant


def config_key(name: str) -> str:
    return CONFIG + name


def batch_key(batch_id: str) -> str:
    return BATCH + batch_id


def batch_callbacks_key(batch_id: str) -> str:
    """A batch's callbacks' specs, apart from its counts: every member's outcome writes the counts' item,
    and a write costs the whole item's size (a callback's payload may be 64 KiB)."""
    return f"{BATCH}{batch_id}#callbacks"


def batch_id_of(pk: str) -> str:
    return pk.removeprefix(BATCH)


def batches_partition(tenant: str) -> str:
    return BATCHES + tenant


def journal_key(job_id: str) -> str:
    return JOURNAL + job_id


def step_result_key(job_id: str, nonce: str) -> str:
    return f"{STEP_RESULT}{job_id}#{nonce}"


def event_channel_key(tenant: str, name_digest: str) -> str:
    """A tenant's event name, by a digest of the name (a name may hold any character, `#` too)."""
    return f"{EVENT_CHANNEL}{tenant}#{name_digest}"


def event_log_key(tenant: str, name_digest: str, sequence: int) -> str:
    return f"{EVENT_LOG}{tenant}#{name_digest}#{sequence}"


def waits_key(tenant: str, index_digest: str, page: int) -> str:
    """A page of the waits for one (event name, match pair), by a digest of both."""
    return f"{WAITS}{tenant}#{index_digest}#{page}"


def token_key(token_id: str) -> str:
    return TOKEN + token_id


def token_id_of(pk: str) -> str:
    return pk.removeprefix(TOKEN)


# Flow control's items (docs/decisions/throttle.md, debounce.md, unique-jobs.md, triggers.md) ----------------------
# Every one is per tenant and per customer key or name; a tenant's name never holds `#`, so the key after it can.

THROTTLE = "throttle#"  # a throttle key's start log: its recent turns, counted on a grid
DEBOUNCE = "debounce#"  # a debounce key's group: its arrivals numbered, its latest job, the groups that ended
UNIQUE = "unique#"  # a unique key's lock: the job holding it, until when, whether its enqueue was confirmed sent
TRIGGER = "trigger#"  # an event trigger: its event, match and job (shared/store/flow/trigger_items.py)
EVENT_TRIGGERS = "eventtriggers#"  # the names of a tenant's triggers on one event name, by a digest of the name
TRIGGERS = "triggers#"  # gsi1: a tenant's triggers, by name


def throttle_key(tenant: str, key: str) -> str:
    return f"{THROTTLE}{tenant}#{key}"


def debounce_key(tenant: str, key: str) -> str:
    return f"{DEBOUNCE}{tenant}#{key}"


def unique_key(tenant: str, key: str) -> str:
    return f"{UNIQUE}{tenant}#{key}"


def trigger_key(tenant: str, name: str) -> str:
    return f"{TRIGGER}{tenant}#{name}"


def event_triggers_key(tenant: str, event_digest: str) -> str:
    """The directory of a tenant's triggers on one event name, by a digest of the name (any characters)."""
    return f"{EVENT_TRIGGERS}{tenant}#{event_digest}"


def triggers_partition(tenant: str) -> str:
    return TRIGGERS + tenant
