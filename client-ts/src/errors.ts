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

export class Unauthorized extends CorralError {}
export class Forbidden extends CorralError {}
export class InvalidRequest extends CorralError {}
export class NotFound extends CorralError {}
export class Conflict extends CorralError {}
export class RateLimited extends CorralError {}
export class QuotaExceeded extends RateLimited {}
export class Unavailable extends CorralError {}
export class ServerError extends CorralError {}
export class ConnectionFailed extends CorralError {}
export class WaitTimeout extends CorralError {}

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

/** The error for an API answer: its JSON error body where there is one. */
export function fromAnswer(status: number, body: unknown, retryAfter?: number): CorralError {
  const answer = (body && typeof body === "object" ? body : {}) as Record<string, unknown>;
  let kind = BY_STATUS[status] ?? (status >= 500 ? ServerError : InvalidRequest);
  if (status === 429 && answer.error === "quota_exceeded") kind = QuotaExceeded;
  return new kind(String(answer.message ?? `the API answered HTTP ${status}`), {
    status,
    code: String(answer.error ?? `http_${status}`),
    field: typeof answer.field === "string" ? answer.field : undefined,
    fields: Array.isArray(answer.fields) ? (answer.fields as FieldProblem[]) : undefined,
    retryAfter,
  });
}
