/**
 * When and how long to wait before sending a request again (as client/retrying.py, stricter where noted).
 *
 * A call safe to repeat (GET, DELETE, cancel, pause, and writes that carry an idempotency key) is sent
 * again after 429 and 503 (the API did nothing), 502 and 504 (a gateway gave up; the function may have
 * run), and a connection lost or timed out. A call not safe to repeat (retrying a job, creating a
 * schedule: POSTs without a key) is sent again only when its connection never opened, so nothing reached
 * the API; the Python SDK also repeats those after 429 and 503, which a gateway in front of the API can
 * answer after the function ran. Waits are exponential with full jitter, never shorter than Retry-After.
 */

export interface RetryPolicy {
  retries: number; // tries after the first
  baseSeconds: number;
  capSeconds: number;
  maxRetryAfterSeconds: number; // a longer Retry-After is not waited for: the error is raised
}

export const DEFAULT_RETRY_POLICY: RetryPolicy = { retries: 4, baseSeconds: 0.2, capSeconds: 5, maxRetryAfterSeconds: 60 };

const RETRYABLE_STATUSES = new Set([429, 502, 503, 504]);

export function retryableStatus(status: number, idempotent: boolean): boolean {
  return idempotent && RETRYABLE_STATUSES.has(status);
}

/** Whether a request that got no answer may be sent again. */
export function retryableFailure(error: unknown, idempotent: boolean): boolean {
  return idempotent || neverSent(error);
}

/** Seconds before retry number `retry` (1-based). */
export function backoffSeconds(policy: RetryPolicy, retry: number, retryAfter?: number): number {
  const wait = Math.random() * Math.min(policy.capSeconds, policy.baseSeconds * 2 ** (retry - 1));
  return Math.max(wait, retryAfter ?? 0);
}

/** Retry-After as seconds: delta-seconds or an HTTP date. */
export function retryAfterSeconds(value: string | null): number | undefined {
  if (!value?.trim()) return undefined;
  const seconds = Number(value.trim());
  if (!Number.isNaN(seconds)) return Math.max(0, seconds);
  const when = Date.parse(value);
  return Number.isNaN(when) ? undefined : Math.max(0, (when - Date.now()) / 1000);
}

const NOT_CONNECTED = new Set(["ECONNREFUSED", "ENOTFOUND", "EAI_AGAIN", "UND_ERR_CONNECT_TIMEOUT"]);

interface FetchFailure {
  cause?: { code?: string; errors?: Array<{ code?: string }> };
}

/**
 * Whether a fetch failure happened before anything was sent (the connection never opened), as Node's fetch
 * tells in its `cause` (for every address tried, when there were several). A browser does not tell: there,
 * only calls safe to repeat are sent again after a failure.
 */
export function neverSent(error: unknown): boolean {
  const cause = (error as FetchFailure | undefined)?.cause;
  const codes = [cause?.code, ...(cause?.errors ?? []).map((each) => each.code)].filter(Boolean);
  return codes.length > 0 && codes.every((code) => NOT_CONNECTED.has(code ?? ""));
}
