/**
 * `corral.triggers`: events that start jobs (as the Python SDK's client/triggers.py). Each POST /v1/events of a
 * trigger's event name whose data holds its `match` starts one job: its payload the event's data laid over the
 * trigger's, once per event id; the job shows `started_by`.
 */

import { items, pagesOf, upTo, type Corral } from "./corral.js";
import type { Trigger, TriggerPage, TriggerSpec } from "./types.js";

export class Triggers {
  readonly #corral: Corral;

  constructor(corral: Corral) {
    this.#corral = corral;
  }

  /**
   * E.g. `create({ name: "receipt", event: "payment.received", match: { plan: "pro" }, job: { type: "send_receipt" } })`.
   * Not retried (a repeat would answer 409: the name is taken). QuotaExceeded at max_triggers.
   */
  create(spec: TriggerSpec): Promise<Trigger> {
    return this.#corral.call("POST", "/v1/triggers", { idempotent: false, expect: [201], body: spec });
  }

  /** GET /v1/triggers page by page (by name), following `next_cursor` until the last page. */
  pages(options: { pageSize?: number; cursor?: string } = {}): AsyncGenerator<TriggerPage> {
    return pagesOf(this.#corral, "/v1/triggers", { limit: options.pageSize }, options.cursor, (answer: TriggerPage) => ({
      triggers: answer.triggers,
      next_cursor: answer.next_cursor ?? null,
    }));
  }

  /** The tenant's triggers by name, across pages. */
  async *list(options: { pageSize?: number; maxItems?: number } = {}): AsyncGenerator<Trigger> {
    yield* upTo(options.maxItems, items(this.pages(options), (page) => page.triggers));
  }

  get(name: string): Promise<Trigger> {
    return this.#corral.call("GET", triggerPath(name), { idempotent: true });
  }

  /** Delete it (the jobs it started stay). NotFound if there is none. */
  async delete(name: string): Promise<void> {
    await this.#corral.call("DELETE", triggerPath(name), { idempotent: true });
  }
}

function triggerPath(name: string): string {
  return `/v1/triggers/${encodeURIComponent(name)}`;
}
