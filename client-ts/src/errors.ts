/** The SDK's errors, as the Python SDK's (client/errors.py): one class per kind of answer. */

export interface FieldProblem {
  field: string;
  message: string;
}

/** Base of every SDK error. `status` is undefined when no HTTP answer came (connection errors, waits). */
export class CorralError extends Error {
  readonly status: number | undefined;
  readonly code: string;
  readonly field: string | undefined;
  readonly fields: FieldProblem[];
  readonly retryAfter: number | undefined; // seconds, from Retry-After

  constructor(
    message: string,
    options: { status?: number; code?: string; field?: string; fields?: FieldProblem[]; retryAfter?: number } = {},
  ) {
    const where = options.field ? ` (field ${options.field})` : "";
    const answered = options.status !== undefined ? `${options.status} ` : "";
    super(`${answered}${options.code ?? "error"}: ${message}${where}`);
    this.name = new.target.name;
    this.status = options.status;
    this.code = options.code ?? "error";
    this.field = options.field;
    this.fields = options.fields ?? [];
    this.retryAfter = options.retryAfter;
  }
}

/** 401: missing, unknown or revoked API key. */
export class Unauthorized extends CorralError {}
/**
 * 403: the request alone is larger than a quota of the tenant's (`forbidden`), or the key's scope does not
 * open the route (`PermissionDenied`). A retry never helps.
 */
export class Forbidden extends CorralError {}
/**
 * 403 `insufficient_scope`: this API key's scope (`scope`: read, enqueue) does not open the route; a key of
 * one of `neededScopes` does. Mint one with `corral keys create TENANT --scope ...`.
 */
export class PermissionDenied extends Forbidden {
  scope: string | undefined;
  neededScopes: string[] = [];
}
/** 400/413/415/422: the request was refused as it is; `field` names what is wrong. */
export class InvalidRequest extends CorralError {}
/** 404: no such job, schedule or batch for this tenant (another tenant's id answers the same). */
export class NotFound extends CorralError {}
/** 409: the state does not allow it (cancel a running job, retry a queued one, a schedule name taken...). */
export class Conflict extends CorralError {}
/** 429, after the SDK's own retries. */
export class RateLimited extends CorralError {}
/** 429 `quota_exceeded`: the tenant holds its whole quota. Not retried: it passes once the tenant holds less. */
export class QuotaExceeded extends RateLimited {}
/** 503 or a 5xx gateway answer, after the SDK's own retries; nothing was accepted. */
export class Unavailable extends CorralError {}
/** 500: a bug on the server's side. */
export class ServerError extends CorralError {}
/** No HTTP answer (refused, dropped, timed out), after the SDK's own retries. */
export class ConnectionFailed extends CorralError {}

/** `wait` gave up before the job (or batch) reached a wanted status; `job` is its last view (the batch's, for a batch). */
export class WaitTimeout extends CorralError {
  readonly job: unknown;

  constructor(message: string, job: unknown) {
    super(message, { code: "wait_timeout" });
    this.job = job;
  }
}

const BY_STATUS: Record<number, typeof CorralError> = {
  400: InvalidRequest,
  401: Unauthorized,
  403: Forbidden,
  404: NotFound,
  409: Conflict,
  413: InvalidRequest,
  415: InvalidRequest,
  422: InvalidRequest,
  429: RateLimited,
  500: ServerError,
  502: Unavailable,
  503: Unavailable,
  504: Unavailable,
};

/**
 * The error for an API answer: its JSON error body where there is one. A validation answer names its
 * fields in `fields` only; when it names one, that one is `field` too.
 */
export function fromAnswer(status: number, body: unknown, retryAfter?: number): CorralError {
  const answer = (body && typeof body === "object" ? body : {}) as Record<string, unknown>;
  let kind = BY_STATUS[status] ?? (status >= 500 ? ServerError : InvalidRequest);
  if (status === 429 && answer.error === "quota_exceeded") kind = QuotaExceeded;
  if (status === 403 && answer.error === "insufficient_scope") kind = PermissionDenied;
  const fields = Array.isArray(answer.fields) ? (answer.fields as FieldProblem[]) : [];
  const field = typeof answer.field === "string" ? answer.field : fields.length === 1 ? fields[0]?.field : undefined;
  const error = new kind(String(answer.message ?? `the API answered HTTP ${status}`), {
    status,
    code: String(answer.error ?? `http_${status}`),
    field,
    fields,
    retryAfter,
  });
  if (error instanceof PermissionDenied) {
    error.scope = typeof answer.scope === "string" ? answer.scope : undefined;
    error.neededScopes = Array.isArray(answer.needed_scopes) ? answer.needed_scopes.map(String) : [];
  }
  return error;
}
