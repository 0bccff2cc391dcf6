/**
 * When and how long to wait before trying a request again (as client/retrying.py).
 *
 * Tried again: a connection that never opened, 429 and 503 (the API did nothing); and, for requests safe to
 * repeat (GET, DELETE, and writes that carry an idempotency key), a connection lost after sending and 502/504.
 * Waits are exponential with full jitter, never shorter than the answer's Retry-After.
 */

export interface RetryPolicy {
  retries: number; // tries after the first
  baseSeconds: number;
  capSeconds: number;
  maxRetryAfterSeconds: number; // a longer Retry-After is not waited for: the error is raised
}

export const DEFAULT_RETRY_POLICY: RetryPolicy = { retries: 4, baseSeconds: 0.2, capSeconds: 5, maxRetryAfterSeconds: 60 };

const RETRY_ALWAYS = new Set([429, 503]);
const RETRY_IF_IDEMPOTENT = new Set([502, 504]);

export function retryableStatus(status: number, idempotent: boolean): boolean {
  return RETRY_ALWAYS.has(status) || (idempotent && RETRY_IF_IDEMPOTENT.has(status));
}

/** Seconds before retry number `retry` (1-based). */
export function backoffSeconds(policy: RetryPolicy, retry: number, retryAfter?: number): number {
  const wait = Math.random() * Math.min(policy.capSeconds, policy.baseSeconds * 2 ** (retry - 1));
  return Math.max(wait, retryAfter ?? 0);
}

/** Retry-After as seconds: delta-seconds or an HTTP date. */
export function retryAfterSeconds(value: string | null): number | undefined {
  if (!value) return undefined;
  const seconds = Number(value.trim());
  if (!Number.isNaN(seconds)) return Math.max(0, seconds);
  const when = Date.parse(value);
  return Number.isNaN(when) ? undefined : Math.max(0, (when - Date.now()) / 1000);
}

/** Whether a fetch failure happened before anything was sent (the connection never opened). */
export function neverSent(error: unknown): boolean {
  const cause = (error as { cause?: { code?: string } } | undefined)?.cause;
  return ["ECONNREFUSED", "ENOTFOUND", "EAI_AGAIN", "UND_ERR_CONNECT_TIMEOUT"].includes(cause?.code ?? "");
}
