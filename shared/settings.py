"""Every resource name and tuning knob, in one place.

The CDK stack reads these to build resources; the values a deployment sets per function travel
in `shared/environment.py` (`FunctionEnv`), so a name or a timeout is written exactly once.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

STACK_NAME = "corral"
# A stage (`-c corral:stage=prod`) puts `corral-<stage>-` in front of every physical name, so two
# stages deploy side by side in one account and Region. No stage keeps the names below, which an
# existing stack was deployed with: renaming the table, the schedule group or the scheduler role
# would replace them (and with them every job record and customer schedule). At most 6 characters:
# the DAX cluster's name (`corral-<stage>-status`) may be 20. A stage's name is public: DAX's TLS
# certificate carries the cluster's name, and certificates are logged in public Certificate
# Transparency logs, so never name a stage after a customer. See docs/decisions/stages.md.
STAGE_PATTERN = re.compile(r"[a-z][a-z0-9]{0,5}")


@dataclass(frozen=True)
class ResourceNames:
    """Every physical name of one deployment, from its stage ("" = the unstaged names)."""

    stage: str = ""

    def __post_init__(self) -> None:
        if self.stage and not STAGE_PATTERN.fullmatch(self.stage):
            raise ValueError(
                f"stage {self.stage!r}: 1-6 lowercase letters and digits, starting with a letter "
                "(the DAX cluster's name, corral-<stage>-status, may be 20 characters)"
            )

    @property
    def stack(self) -> str:
        return f"{STACK_NAME}-{self.stage}" if self.stage else STACK_NAME

    @property
    def prefix(self) -> str:
        """What every physical name of the deployment begins with."""
        return f"{self.stack}-"

    @property
    def queue(self) -> str:
        return f"{self.prefix}jobs"

    @property
    def dlq(self) -> str:
        return f"{self.prefix}jobs-dlq"

    @property
    def backstop(self) -> str:
        """Where SQS moves a jobs-queue message after its receive budget (and Scheduler a firing it could
        not deliver): the worker records each one's job `dead` and buries the message in the DLQ."""
        return f"{self.prefix}jobs-backstop"

    @property
    def table(self) -> str:
        return f"{self.prefix}jobs"

    @property
    def api(self) -> str:
        return f"{self.prefix}api"

    @property
    def api_function(self) -> str:
        return f"{self.prefix}api"

    @property
    def worker_function(self) -> str:
        return f"{self.prefix}worker"

    @property
    def jobs_function(self) -> str:
        """The jobs function: runs the customer's job types for the worker, behind a fence
        (docs/decisions/customer-code-fence.md). One hyphen only, whatever the stage: the worker's role
        denies invoking `corral-*-*` (every stage's functions, and the names CloudFormation gives the
        functions it names) and allows this one by its ARN (infra/lambda_targets.py)."""
        return f"{STACK_NAME}-{self.stage}jobcode"

    @property
    def dax_cluster(self) -> str:
        return f"{self.prefix}status"

    @property
    def alarm_topic(self) -> str:
        return f"{self.prefix}alarms"

    @property
    def dashboard(self) -> str:
        """Dashboards are global to the account: a stage's also carries its Region (infra adds it)."""
        return f"{self.prefix}operations"

    @property
    def schedule_group(self) -> str:
        return self.stack

    @property
    def scheduler_role(self) -> str:
        """IAM role names are global to the account: a stage's role also carries its Region (infra adds it)."""
        return f"{self.prefix}scheduler"

    def alarm(self, name: str) -> str:
        return self.prefix + name

    def account_wide(self, name: str, region: str) -> str:
        """A name that must be unique in the whole account (IAM roles, CloudWatch dashboards): a stage's
        carries its Region, so the same stage deploys in two Regions. Unstaged, the name as it is, which
        an existing stack was deployed with (an unstaged stack is one Region per account)."""
        return f"{name}-{region}" if self.stage else name


def names(stage: str = "") -> ResourceNames:
    return ResourceNames(stage)


# The unstaged names (physical names, so tools and tests find them without lookups).
_UNSTAGED = names()
QUEUE_NAME = _UNSTAGED.queue
DLQ_NAME = _UNSTAGED.dlq
BACKSTOP_NAME = _UNSTAGED.backstop
TABLE_NAME = _UNSTAGED.table
SCHEDULE_GROUP = _UNSTAGED.schedule_group
API_NAME = _UNSTAGED.api
API_FUNCTION = _UNSTAGED.api_function
WORKER_FUNCTION = _UNSTAGED.worker_function
JOBS_FUNCTION = _UNSTAGED.jobs_function

# Worker and queue tuning. See docs/decisions/production-stack.md "Queue" and "Worker scaling".
WORKER_BATCH_SIZE = 10
WORKER_BATCHING_WINDOW_SECONDS = 0  # latency first: enqueue-to-run p99 is an SLO
# The worker's concurrent batches in the emulator (profile local), split into the priority lanes' ESM
# MaximumConcurrency (shared/flow/priority.py `split`: 2 high, 8 default, 2 low). Each concurrent batch is a
# Python subprocess there; on a 2-core machine 50 of them time out on cold start and stalled the emulator
# under `make bench` (47 % executed), 8 executed 100 % (docs/decisions/local-stack.md): the default lane keeps
# those 8, and the two small lanes run only while they have jobs (docs/decisions/priorities.md).
WORKER_MAX_CONCURRENCY = 12
# ESM provisioned mode on AWS (profile aws); see docs/decisions/production-stack.md "Worker scaling".
# Each SQS event poller drives up to 10 concurrent invokes; the minimum keeps the 3x midnight
# herd's worth of pollers warm. The maximum is what a stage's Lambda concurrency leaves the worker
# once the API's reservation is taken (infra/capacity.py; docs/decisions/capacity.md).
INVOKES_PER_POLLER = 10
# The backstop's event source (infra/workers.py): the least MaximumConcurrency an SQS event source takes;
# nothing is meant to arrive there. Counted in the worker's most executions (infra/capacity.py).
BACKSTOP_MAX_CONCURRENCY = 2
WORKER_MIN_POLLERS = 21
# Throttled receives count toward maxReceiveCount; the app counts attempts itself and
# moves dead jobs to the DLQ, so this is only a backstop for messages that never reach
# our code (a worker that dies before claiming): high enough that a herd cannot DLQ
# unrun jobs. The aws profile's receive budget (Profile.receive_budget).
MAX_RECEIVE_COUNT = 100
# A job waiting its turn (its tenant's running cap, its concurrency key) is sent again as a fresh message
# once its message has been received this many times, well before the budget: a wait never spends it,
# and the receives between leave room for a failed send and for hand-backs of other kinds.
# See docs/decisions/waiting-keeps-its-place.md.
WAIT_RESEND_AT_RECEIVE = 90
# The lowest budget a deployment may set (`-c corral:receive_budget`, Profile.with_receive_budget): the
# end-to-end suite's, so a job waits past it in a couple of minutes.
MIN_RECEIVE_BUDGET = 5
# A delivery handed back without running (the store is down, too little of the invocation is left)
# comes back after HAND_BACK_UNIT_SECONDS * 2^((receives - 1) / HAND_BACK_DOUBLING_RECEIVES),
# at most the queue's visibility timeout (FunctionEnv.hand_back_max_seconds, set per profile): the
# receive budget then lasts hours of outage, not minutes. See docs/decisions/hand-backs.md.
HAND_BACK_UNIT_SECONDS = 1.0
HAND_BACK_DOUBLING_RECEIVES = 4
MESSAGE_RETENTION_DAYS = 14
FINISHED_JOB_TTL_DAYS = 30  # > retention, so a record outlives any message for its job

# HTTP API default stage throttling (requests/s). Below the Regional account quota (10,000 rps,
# 5,000 burst, shared by every HTTP API of the account and Region): a flood of requests stops here
# before it takes the whole account's quota, and 8,000/s still carries the 6,000 enqueues/s SLO with
# a third to spare. See docs/decisions/capacity.md.
API_THROTTLE_RATE_PER_SECOND = 8_000
API_THROTTLE_BURST = 4_000
# Lambda concurrency (profile aws). The Region's account quota is 1,000 by default, and Lambda
# refuses a reservation that leaves less than 100 of it unreserved; the same 100 is what functions
# outside corral's plan (a tenant's Lambda targets, other stages' unreserved functions, CDK's
# deploy-time handlers) keep. A stage may take the rest: API + worker + jobs function <= 900
# (`-c corral:concurrency` gives a stage less: infra/capacity.py, docs/decisions/capacity.md).
ACCOUNT_CONCURRENCY = 1_000
LAMBDA_UNRESERVED_MINIMUM = 100
STAGE_CONCURRENCY = ACCOUNT_CONCURRENCY - LAMBDA_UNRESERVED_MINIMUM
# Concurrency reserved for the API function: what a flood of jobs can never take from it. The herd
# needs ~360 (18,000 requests/s x ~20 ms); 400 leaves a margin.
API_RESERVED_CONCURRENCY = 400
# The worker's most, without a customer's jobs package: what the stage's concurrency leaves it after the
# API and the backstop's event source ((900 - 400 - 2) / 10 = 49 pollers, 490 invokes; the herd needs
# ~205). With a package the jobs function takes a reservation of its own out of the same 498 (infra/capacity.py).
WORKER_MAX_POLLERS = (STAGE_CONCURRENCY - API_RESERVED_CONCURRENCY - BACKSTOP_MAX_CONCURRENCY) // INVOKES_PER_POLLER
# DynamoDB warm throughput (profile aws): what a new on-demand table serves from its first second.
# `make capacity` (bench/models/capacity.py): the 3x herd is 18,000 jobs/s, two writes each (claim,
# outcome), 36,000 writes/s; a new on-demand table starts near 4,000/s. Each index takes every job
# record write too (gsi1: a schedule's runs, gsi2: the listing), so each gets the same figure.
TABLE_WARM_WRITES_PER_SECOND = 36_000
TABLE_WARM_READS_PER_SECOND = 12_000  # the on-demand default: status polls are read through DAX

# DAX status cache (profile aws): three nodes, one per AZ the VPC spans and a spare, for failover.
DAX_CLUSTER_NAME = _UNSTAGED.dax_cluster  # at most 20 characters
DAX_NODE_TYPE = "dax.r5.large"
DAX_NODES = 3

# Alarms and metrics: each alarm, its threshold and why, in docs/decisions/alarms.md.
METRICS_NAMESPACE = "corral"
ALARM_TOPIC_NAME = _UNSTAGED.alarm_topic
ALARM_WORKER_ERRORS_PER_5_MIN = 1  # handler failures report per item: an Error is a crash or a timeout
ALARM_WORKER_THROTTLES_PER_5_MIN = 1  # each throttled receive also counts toward maxReceiveCount
ALARM_API_5XX_RATE = 0.05  # of requests answered 5xx over 5 minutes (the metric's Average is the rate)
ALARM_API_P99_LATENCY_MS = 1_000  # an AWS call answers in 1 s + 3 s at worst; p99 over 1 s is calls failing
ALARM_TABLE_THROTTLES_PER_MINUTE = 1  # each minute for 5 minutes: sustained, not one burst the SDK retried
ALARM_TABLE_SYSTEM_ERRORS_PER_5_MIN = 1
ALARM_DAX_FAULTS_PER_5_MIN = 1  # FaultRequestCount: DAX's own failures (ErrorRequestCount counts lost claims)
ALARM_SCHEDULER_ERRORS_PER_5_MIN = 1  # the queue refused a firing (Scheduler retries it)
# Lambda's ClaimedAccountConcurrency (reservations + unreserved in use) at this share of the account's
# quota: what is left for unreserved functions (the worker among them) is nearly gone.
ALARM_ACCOUNT_CONCURRENCY_SHARE = 0.95
ALARM_NAT_PORT_ALLOCATION_ERRORS_PER_5_MIN = 1  # a NAT gateway could not open a connection: HTTP jobs fail
# Packets a NAT gateway dropped, each 5 minutes for 15 minutes. AWS suggests 0.01 % of its packets,
# which needs metric math; a plain count is the emulator-friendly rule (docs/decisions/alarms.md).
ALARM_NAT_DROPPED_PACKETS_PER_5_MIN = 100
ALARM_STORE_HAND_BACKS_PER_5_MIN = 100  # 10 minutes of them: a store outage, not a blip
# Messages waiting for a worker, the least of each minute for 5 minutes: workers are not draining the
# queue. At the 6,000 jobs/s SLO a healthy queue holds ~1,600 visible (p99 wait 260 ms); the herd
# backs up ~18,000 for ~11 s (make capacity), which a 1-minute minimum does not see.
ALARM_BACKLOG_MESSAGES = 10_000
# The dead letters that page: messages dead for a platform reason (unreadable, unverifiable, a job whose
# message reached the backstop with no outcome recorded, a firing Scheduler could not deliver). A
# tenant's job that used its attempts is the tenant's metric, not a page.
ALARM_PLATFORM_DEAD_LETTERS_PER_5_MIN = 1

# Job limits.
DEFAULT_MAX_ATTEMPTS = 3
MAX_MAX_ATTEMPTS = 25
MAX_PAYLOAD_BYTES = 64 * 1024  # serialised payload; an SQS message holds 256 KiB
MAX_PAYLOAD_DEPTH = 32  # nested arrays/objects in a payload; 0 for a scalar. See docs/decisions/input-limits.md
MAX_BATCH_JOBS = 100  # POST /v1/jobs:batch
# Batches (POST /v1/batches): jobs counted as one, with callbacks. See docs/decisions/batches.md.
MAX_BATCH_SIZE = 1_000
MAX_BATCH_DESCRIPTION_CHARS = 256
BATCH_LIST_DEFAULT_LIMIT = 20
BATCH_LIST_MAX_LIMIT = 100
# Concurrency keys: at most `limit` of a tenant's jobs with one key run at once. See docs/decisions/concurrency-keys.md.
MAX_CONCURRENCY_KEY_CHARS = 128
MAX_CONCURRENCY_LIMIT = 1_000
# A job over its key's limit waits in its batch for a slot a batch-mate frees, or one freed elsewhere, this
# long at most: half the margin its message's cover and its batch's slots outlast its timeout
# (shared/worker/run/cover.py MARGIN_SECONDS), so a job started late still ends inside both.
KEY_WAIT_IN_BATCH_SECONDS = 5.0
# While it waits there, its batch looks for a slot freed elsewhere this often (one consistent read each).
KEY_SLOT_POLL_SECONDS = 0.25
# Then it is handed back: it comes back after this, doubling like any hand-back, so a long backlog of one
# key spends the queue's receive budget over hours, not minutes (docs/decisions/hand-backs.md).
KEY_WAIT_HAND_BACK_UNIT_SECONDS = 1.0
# Any request body. Lambda refuses an invoke over 6 MB (6,291,456 bytes) before our code runs, and the
# body travels inside the event JSON (escaped, or base64 for non-text content types: +33 %).
MAX_REQUEST_BODY_BYTES = 4 * 1024 * 1024
MAX_SLEEP_SECONDS = 60  # the `sleep` job type; a worker timeout may still stop it earlier
MAX_SQS_DELAY_SECONDS = 15 * 60
# Job timeouts. See docs/decisions/timeouts.md.
DEFAULT_JOB_TIMEOUT_SECONDS = 30
MAX_JOB_TIMEOUT_SECONDS = 900  # Lambda's longest invocation, and so the longest timeout_seconds a job may ask for
JOB_START_RESERVE_SECONDS = 1  # a job starts only with its timeout plus this left of the invocation (to record it)
QUEUE_VISIBILITY_MARGIN_SECONDS = 25
RETRY_BACKOFF_BASE_SECONDS = 2
# A result is stored in the job's item beside its payload (<= 64 KiB) and error: DynamoDB items hold 400 KB.
MAX_RESULT_BYTES = 256 * 1024  # serialised; a bigger result fails the job at once, without retries
RETRY_BACKOFF_CAP_SECONDS = 15 * 60  # SQS ChangeMessageVisibility caps at 12 h; we cap lower

# Schedules (EventBridge Scheduler). See docs/decisions/schedules.md and docs/decisions/the-herd.md.
SCHEDULER_ROLE_NAME = _UNSTAGED.scheduler_role  # the role Scheduler assumes to send to the job queue
SCHEDULE_NAME_MAX_LENGTH = 47  # Scheduler's 64, less a 16-character tenant prefix and a dash
SCHEDULE_RUNS_SHOWN = 20  # GET /v1/schedules/{name}: this many recent runs
SCHEDULE_FIRINGS_SHOWN = 5  # GET /v1/schedules/{name}: this many next firings (null when not computable)
MAX_FLEXIBLE_WINDOW_MINUTES = 1440  # Scheduler's limit
BACKFILL_MAX_RUNS = 1_000  # POST /v1/schedules/{name}:backfill: runs per request (Temporal's backfill bound)
SCHEDULE_TEXT_MAX_LENGTH = 512  # a schedule's description (Scheduler's Description limit) and a pause's note
SCHEDULE_START_GRACE_SECONDS = 5 * 60  # Scheduler rejects a StartDate earlier than 5 minutes ago
MAX_RUN_AT_DAYS = 365  # how far ahead a delayed job may be due
# A firing Scheduler cannot deliver is retried this long, then goes to the DLQ: never dropped silently.
SCHEDULER_RETRY_ATTEMPTS = 185  # Scheduler's maximum
SCHEDULER_MAX_EVENT_AGE_SECONDS = 86_400  # Scheduler's maximum
# A schedule record left `creating` or `deleting` this long belongs to a request that is over (the API
# function's timeout is 10 s): the next create, delete or get of that name finishes deleting it.
SCHEDULE_CHANGE_LEASE_SECONDS = 60
# A delete finding the schedule `creating` re-reads it this many times, this far apart, before a 409.
SCHEDULE_DELETE_WAITS = 8
SCHEDULE_DELETE_WAIT_SECONDS = 0.25

# A sleep or a wait's timeout due within this rides SQS's delay; a later one a one-time Scheduler schedule, as a
# far-future job does (docs/decisions/far-future.md). The local profile lowers it (FunctionEnv) to test that path.
WAKE_SCHEDULER_THRESHOLD_SECONDS = MAX_SQS_DELAY_SECONDS

# API-key cache in each API instance: a revoked key keeps working this long at most. One GetItem
# per key per API instance per minute is negligible; the local profile uses its own, shorter bound.
API_KEY_CACHE_SECONDS = 60

# The API function's AWS calls must end before it has to answer (its timeout, infra/api.py): an
# attempt starts only if connect + read timeouts fit in the time left less this margin.
# See docs/decisions/input-limits.md "Every AWS call ends before the API answers".
API_AWS_CONNECT_TIMEOUT_SECONDS = 1
API_AWS_READ_TIMEOUT_SECONDS = 3
API_ANSWER_MARGIN_SECONDS = 0.5

# Per-tenant limits (defaults; an operator overrides them per tenant: shared/tenants/quotas.py).
# See docs/decisions/quotas.md and docs/decisions/rate-limits.md. Quotas count what a tenant holds; the rate limits
# bound how fast it may enqueue (jobs, so one :batch request of 100 counts 100).
TENANT_MAX_SCHEDULES = 1_000
TENANT_MAX_FAR_FUTURE_JOBS = 10_000  # delayed jobs due beyond SQS's 15-minute delay, not yet run
# Durable jobs waiting beyond SQS's 15-minute delay (a long sleep, an event or token with a long timeout, a
# child job): each holds a unit while it waits (docs/decisions/durable-jobs.md "Limits").
TENANT_MAX_WAITING_JOBS = 10_000
# Recurring firings a tenant's schedules may make, per minute, at their busiest hour (a schedule weighs
# the most firings it makes in an hour / 60: rate(1 minute) 1, a daily cron 1/60). 100 a tenant: ~600
# tenants at their whole budget take Scheduler's default 1,000 invocations/s (docs/decisions/quotas.md).
TENANT_MAX_FIRINGS_PER_MINUTE = 100
# Event triggers a tenant may hold (docs/decisions/triggers.md): an event reads its name's triggers in BatchGetItems
# of 100, so an event name holding all of them costs one.
TENANT_MAX_TRIGGERS = 100
TENANT_ENQUEUE_RATE_PER_SECOND = 1_000.0
TENANT_ENQUEUE_BURST = 5_000
# How many of a tenant's jobs may run at once, fleet-wide (0: no cap). Half the embedded stack's default lane
# (its 8 batches of WORKER_BATCH_SIZE: WORKER_MAX_CONCURRENCY split into lanes), so one tenant's slow jobs leave
# the other half to everyone else. See docs/decisions/running-cap.md.
TENANT_MAX_RUNNING = 40
# A job over its tenant's running cap comes back after this, doubling like any hand-back: about when a batch of
# short jobs has ended. 3 s doubled the capped tenant's own wait and changed nothing for the others
# (docs/decisions/running-cap.md "Figures"); the doubling keeps a waiting backlog's receives few.
OVER_CAP_HAND_BACK_UNIT_SECONDS = 1.0
TENANT_LIMITS_CACHE_SECONDS = 60  # an API instance re-reads a tenant's overrides at most this often
# Scheduler's SqsParameters.MessageGroupId is documented for FIFO targets only (EventBridge rules
# accepted it on standard queues only from late 2025): off until verified on the account
# (FunctionEnv.scheduler_sets_message_group takes this default). See docs/decisions/rate-limits.md "Fair queues".
SCHEDULER_SETS_MESSAGE_GROUP = False

# Seeing, cancelling and retrying jobs (GET /v1/jobs, POST /v1/jobs:retry, GET /v1/stats).
# See docs/decisions/listing-and-stats.md and docs/decisions/cancel-and-retry.md.
# A tenant's jobs are spread over this many listing-index partitions (each takes <= 1,000 writes/s,
# a job costs ~2: claim and outcome), so one tenant may run ~8,000 jobs/s. Only ever raise it:
# lowering it would hide the jobs written to the partitions dropped.
JOBS_INDEX_SHARDS = 16
LIST_DEFAULT_LIMIT = 50
LIST_MAX_LIMIT = 100
LIST_READ_BUDGET = 1_000  # index entries one request reads at most (filters apply after reading)
BULK_RETRY_MAX = 100  # dead jobs one POST /v1/jobs:retry starts over
STATS_DEFAULT_WINDOW_SECONDS = 3_600
STATS_MAX_WINDOW_SECONDS = 7 * 86_400
STATS_MAX_RECORDS = 5_000  # records one GET /v1/stats reads at most; beyond it the figures are a sample
# Reads that scan a tenant's index (GET /v1/stats, a filtered GET /v1/jobs: up to 5,000 and 1,000 entries)
# are metered per tenant and API instance, so a loop of them cannot throttle the index every tenant
# shares; a dashboard polling every few seconds stays far below. Stats are answered from a short cache.
HEAVY_READS_PER_SECOND = 5
HEAVY_READS_BURST = 20
STATS_CACHE_SECONDS = 5
# A status poll that the status cache answers "no record" for a job in the queue longer than this reads
# the table itself, at most this often per job and API instance: DAX can keep a stale miss for its whole
# TTL (5 min) after a worker's write (docs/decisions/status-cache-staleness.md).
STATUS_MISS_RECHECK_SECONDS = 5

# HTTP jobs (shared/targets/http.py). See docs/decisions/http-jobs.md.
HTTP_DEFAULT_TIMEOUT_SECONDS = 30  # an http job's timeout unless it gives its own (timeout_seconds, up to 900)
HTTP_CONNECT_TIMEOUT_SECONDS = 5
HTTP_RESULT_BODY_MAX_BYTES = 64 * 1024  # the response body kept as the result; beyond it, truncated: true
HTTP_ERROR_BODY_BYTES = 500  # how much of a failed answer's body the error quotes
HTTP_RETRY_AFTER_CAP_SECONDS = RETRY_BACKOFF_CAP_SECONDS  # a Retry-After longer than this waits this long
HTTP_URL_MAX_LENGTH = 2048
SIGNING_SECRET_GRACE_SECONDS = 24 * 3600  # a rotated-out secret stays valid this long
SIGNING_SECRETS_MAX = 5  # valid secrets kept per set, unbound or a destination's (so at most 5 signatures per request)
SIGNING_SECRET_DESTINATIONS_MAX = 20  # destinations with secrets of their own, per tenant (the item stays small)
SIGNING_SECRETS_CACHE_SECONDS = 60  # a worker signs with a tenant's secrets read at most this long ago
# A secret written now is known to every worker this long after: their cache time, and 5 s for the API's
# and the workers' clocks to differ (its `signs_from`, docs/decisions/standard-webhooks.md).
SIGNING_SECRET_KNOWN_AFTER_SECONDS = SIGNING_SECRETS_CACHE_SECONDS + 5
