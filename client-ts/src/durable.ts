/**
 * `corral.events` and `corral.tokens` (as the Python SDK's client/durable.py): what resumes a waiting durable
 * job from outside it: an event its wait matches, or the token it waits for, completed.
 */

import type { Corral } from "./corral.js";
import type { EventSpec, TokenCompleted } from "./types.js";

/** `corral.events`: events of this tenant, which resume the jobs waiting for them. */
export class Events {
  readonly #corral: Corral;

  constructor(corral: Corral) {
    this.#corral = corral;
  }

  /**
   * Send an event; its id. Every waiting job of this tenant whose `wait_for_event` names `name` and whose
   * `match` `data` holds resumes with `data`. The same id sent twice is one event, so the SDK's retries send it
   * once: an id is made per call (`ev_<32 hex>`) when none is given. Conflict if the id was sent before with
   * another name or data.
   */
  async send(name: string, data?: unknown, options: { id?: string } = {}): Promise<string> {
    const body: EventSpec = { name, data: data ?? null, id: options.id ?? newEventId() };
    const answer = await this.#corral.call<{ id: string }>("POST", "/v1/events", { idempotent: true, expect: [202], body });
    return answer.id;
  }
}

/** `corral.tokens`: the tokens durable jobs wait for (`context.create_token`, `wait_for_token`). */
export class Tokens {
  readonly #corral: Corral;

  constructor(corral: Corral) {
    this.#corral = corral;
  }

  /**
   * Complete the token: the job waiting for it resumes with `data`. Once only: a second completion, an expired
   * token or one whose job was cancelled rejects with Conflict; an unknown token with NotFound. Not sent again
   * after a connection dropped mid-request (a completion that landed would then answer Conflict).
   */
  complete(tokenId: string, data?: unknown): Promise<TokenCompleted> {
    const path = `/v1/tokens/${encodeURIComponent(tokenId)}:complete`;
    return this.#corral.call("POST", path, { idempotent: false, body: { data: data ?? null } });
  }
}

function newEventId(): string {
  return `ev_${globalThis.crypto.randomUUID().replace(/-/g, "")}`;
}
