// The dashboard's only door to data: the same JSON API anyone calls, with the key as a bearer token.
// The key lives in this tab's sessionStorage only: never in a URL, a cookie or a log line.

const KEY_NAME = "corral.key";
// The page is served at <base>/dashboard; the API lives at <base>/v1 (the base may carry a path prefix).
export const apiBase = location.pathname.replace(/\/dashboard\/?$/, "");

export const session = {
  key: () => sessionStorage.getItem(KEY_NAME),
  save: (key) => sessionStorage.setItem(KEY_NAME, key),
  clear: () => sessionStorage.removeItem(KEY_NAME),
  isOperator: () => (sessionStorage.getItem(KEY_NAME) || "").startsWith("co_"),
};

export class ApiError extends Error {
  constructor(status, code, message, field) {
    super(message);
    this.status = status;
    this.code = code;
    this.field = field;
  }
}

let unauthorizedHandler = () => {};
export function onUnauthorized(handler) {
  unauthorizedHandler = handler;
}

export async function api(method, path, body, key = session.key()) {
  const headers = { Authorization: `Bearer ${key}`, Accept: "application/json" };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  let response;
  try {
    response = await fetch(apiBase + path, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      cache: "no-store",
      credentials: "omit",
    });
  } catch {
    throw new ApiError(0, "network", "Cannot reach the corral API. Check that the stack is running (make up) and reload.");
  }
  let data = null;
  try {
    data = await response.json();
  } catch {
    data = null;
  }
  if (!response.ok) {
    const error = new ApiError(
      response.status,
      data?.error || "http_" + response.status,
      data?.error === "insufficient_scope" ? scopeMessage(data) : data?.message || `The API answered ${response.status}.`,
      data?.field,
    );
    if (response.status === 401) unauthorizedHandler(error);
    throw error;
  }
  return data;
}

// A key whose scope does not open the route (a read-only key retrying a job, say): what it is, and how to
// get further, instead of a bare 403.
function scopeMessage(data) {
  const needed = (data.needed_scopes || ["full"]).map((scope) => `'${scope}'`).join(" or ");
  const kind = { read: "read-only", enqueue: "enqueue-only" }[data.scope] || `'${data.scope}'`;
  return `Not allowed with this ${kind} API key: ${data.message}. Sign out and sign in with a key of scope ${needed} to do this.`;
}

export function query(params) {
  const search = new URLSearchParams();
  for (const [name, value] of Object.entries(params)) {
    if (value !== undefined && value !== null && value !== "") search.set(name, String(value));
  }
  const text = search.toString();
  return text ? "?" + text : "";
}
