// Triggers: events that start jobs. The list (event, match, the job each matching event starts), page by page,
// with a delete on each; a started job's page links back here through its `started_by`.

import { h } from "preact";
import { api, query } from "./api.js";
import { ActionButton, Empty, Flash, Page, Pager, PollState, Table, Time, useCursors, useFlash, usePoll } from "./ui.js";

const PAGE_SIZE = 50;

const triggerPath = (name) => `/v1/triggers/${encodeURIComponent(name)}`;

export function TriggersPage() {
  const [flash, showFlash] = useFlash();
  const pages = useCursors();
  const list = usePoll(() => api("GET", "/v1/triggers" + query({ limit: PAGE_SIZE, cursor: pages.cursor })), [pages.page], 0);
  const triggers = list.data?.triggers || [];
  return h(
    Page,
    {
      title: "Triggers",
      lead: "Each event (POST /v1/events) of a trigger's name whose data holds its match starts its job, once per event id.",
    },
    h(Flash, { flash }),
    h(PollState, { poll: list }),
    list.data && !triggers.length
      ? h(Empty, { title: "No triggers yet." }, "Create one with POST /v1/triggers, `corral triggers create` or the SDKs.")
      : null,
    triggers.length
      ? h(
          Table,
          { columns: ["Name", "Event", "Match", "Job type", "Created", ""], testId: "triggers" },
          triggers.map((trigger) =>
            h(
              "tr",
              { key: trigger.name, id: `trigger-${trigger.name}` },
              h("td", { class: "break" }, trigger.name),
              h("td", { class: "mono small break" }, trigger.event),
              h("td", { class: "mono small break" }, trigger.match ? JSON.stringify(trigger.match) : "any"),
              h("td", null, trigger.job?.type || "—"),
              h("td", null, h(Time, { value: trigger.created_at })),
              h(
                "td",
                null,
                h(ActionButton, {
                  label: "Delete",
                  busyLabel: "Deleting…",
                  kind: "danger",
                  testId: `delete-${trigger.name}`,
                  run: () => api("DELETE", triggerPath(trigger.name)),
                  onDone: () => {
                    showFlash("success", `Trigger ${trigger.name} deleted.`);
                    list.reload();
                  },
                  onError: (error) => showFlash("error", error.message),
                }),
              ),
            ),
          ),
        )
      : null,
    pages.page > 0 || list.data?.next_cursor
      ? h(Pager, { pages, nextCursor: list.data?.next_cursor, backLabel: "← Previous", forwardLabel: "Next →" })
      : null,
  );
}
