// The corral dashboard: sign-in, navigation and routing (#/path?query, so no key ever sits in a URL).

import "uplot/dist/uPlot.min.css";
import "../style.css";
import { h, render } from "preact";
import { useEffect, useState } from "preact/hooks";
import { ApiError, api, onUnauthorized, session } from "./api.js";
import { BatchDetail, BatchesPage } from "./batches.js";
import { timeZone } from "./format.js";
import { JobDetail, JobsPage } from "./jobs.js";
import { OperatorPage } from "./operator.js";
import { Overview } from "./overview.js";
import { ScheduleDetail, SchedulesPage } from "./schedules.js";
import { SecretsPage } from "./secrets.js";
import { TriggersPage } from "./triggers.js";
import { ErrorBox } from "./ui.js";

const TENANT_NAV = [
  ["/overview", "Overview"],
  ["/jobs", "Jobs"],
  ["/dead", "Dead"],
  ["/delayed", "Delayed"],
  ["/batches", "Batches"],
  ["/schedules", "Schedules"],
  ["/triggers", "Triggers"],
  ["/secrets", "Signing secrets"],
];
const OPERATOR_NAV = [["/operator", "Operator"]];

function parseHash() {
  const raw = decodeURIComponent(location.hash.replace(/^#/, "")) || "";
  const [path, search = ""] = raw.split("?");
  return { path: path || "", params: Object.fromEntries(new URLSearchParams(search)) };
}

function navigate(to) {
  location.hash = "#" + to;
}

function useRoute() {
  const [route, setRoute] = useState(parseHash());
  useEffect(() => {
    const update = () => setRoute(parseHash());
    window.addEventListener("hashchange", update);
    return () => window.removeEventListener("hashchange", update);
  }, []);
  return route;
}

function SignIn({ onSignedIn, reason }) {
  const [key, setKey] = useState("");
  const [error, setError] = useState(reason ? new ApiError(401, "unauthorized", reason) : null);
  const [busy, setBusy] = useState(false);
  const submit = async (event) => {
    event.preventDefault();
    const candidate = key.trim();
    if (!candidate) return;
    setBusy(true);
    setError(null);
    const operator = candidate.startsWith("co_");
    try {
      // One cheap call proves the key before it is kept (a wrong key answers 401).
      await api("GET", operator ? "/operator/v1/queues" : "/v1/schedules", undefined, candidate);
      session.save(candidate);
      setKey("");
      onSignedIn(operator);
    } catch (failure) {
      setError(
        failure.status === 401
          ? new ApiError(401, "unauthorized", "That key was not accepted. Paste the API key `make up` printed (ck_…), or an operator key (co_…).")
          : failure,
      );
    } finally {
      setBusy(false);
    }
  };
  return h(
    "main",
    { class: "signin" },
    h(
      "form",
      { class: "card signin-card", onSubmit: submit },
      h("div", { class: "brand brand-large" }, h("span", { class: "logo", "aria-hidden": "true" }), "corral"),
      h("h1", null, "Sign in"),
      h("p", { class: "muted" }, "Paste an API key to see, cancel and retry your jobs. It stays in this browser tab only and is gone when you close it."),
      h(
        "label",
        null,
        "API key",
        h("input", {
          id: "api-key",
          name: "api-key",
          type: "password",
          autocomplete: "off",
          spellcheck: false,
          required: true,
          autofocus: true,
          placeholder: "ck_…",
          value: key,
          onInput: (event) => setKey(event.currentTarget.value),
        }),
      ),
      h(ErrorBox, { error }),
      h("button", { type: "submit", class: "btn btn-primary btn-block", disabled: busy }, busy ? "Checking…" : "Sign in"),
      h("p", { class: "muted small" }, "No key? `make up` prints one; an operator mints more."),
    ),
  );
}

function Shell({ operator, route, onSignOut }) {
  const nav = operator ? OPERATOR_NAV : TENANT_NAV;
  const [menuOpen, setMenuOpen] = useState(false);
  const current = "/" + (route.path.split("/")[1] || "");
  return h(
    "div",
    { class: "shell" },
    h("a", { class: "skip-link", href: "#main", onClick: (event) => { event.preventDefault(); document.getElementById("main")?.focus(); } }, "Skip to content"),
    h(
      "header",
      { class: "topbar" },
      h("div", { class: "brand" }, h("span", { class: "logo", "aria-hidden": "true" }), "corral"),
      h(
        "button",
        { type: "button", class: "btn btn-ghost menu-toggle", "aria-expanded": String(menuOpen), "aria-controls": "nav", onClick: () => setMenuOpen(!menuOpen) },
        "Menu",
      ),
      h(
        "nav",
        { id: "nav", class: menuOpen ? "nav open" : "nav", "aria-label": "Main" },
        nav.map(([path, label]) =>
          h(
            "a",
            { href: "#" + path, "aria-current": current === path ? "page" : null, onClick: () => setMenuOpen(false) },
            label,
          ),
        ),
      ),
      h(
        "div",
        { class: "session" },
        h("span", { class: "muted small", title: "Times are shown in this time zone" }, timeZone),
        // The API reference (Swagger UI) beside the dashboard: "docs" resolves against /dashboard to /docs.
        h("a", { href: "docs", class: "btn btn-ghost", target: "_blank", rel: "noopener" }, "API reference"),
        h("button", { type: "button", class: "btn btn-ghost", onClick: onSignOut }, "Sign out"),
      ),
    ),
    h("main", { id: "main", tabIndex: -1 }, page(operator, route)),
  );
}

function page(operator, route) {
  const [, section, rest] = route.path.match(/^\/([^/]*)\/?(.*)$/) || [null, "", ""];
  if (operator) return h(OperatorPage);
  switch (section) {
    case "jobs":
      return rest ? h(JobDetail, { jobId: rest, navigate }) : h(JobsPage, { mode: "all", params: route.params, navigate, key: JSON.stringify(route.params) });
    case "dead":
      return h(JobsPage, { mode: "dead", params: route.params, navigate, key: "dead" + JSON.stringify(route.params) });
    case "delayed":
      return h(JobsPage, { mode: "delayed", params: route.params, navigate, key: "delayed" + JSON.stringify(route.params) });
    case "batches":
      return rest ? h(BatchDetail, { batchId: rest }) : h(BatchesPage);
    case "schedules":
      return rest ? h(ScheduleDetail, { name: rest, navigate }) : h(SchedulesPage, { navigate });
    case "triggers":
      return h(TriggersPage);
    case "secrets":
      return h(SecretsPage);
    case "operator":
      return h("div", { class: "page" }, h(ErrorBox, { error: { message: "The operator view needs an operator key (co_…). Sign out and sign in with one." } }));
    default:
      return h(Overview, { navigate });
  }
}

function App() {
  const route = useRoute();
  const [signedIn, setSignedIn] = useState(Boolean(session.key()));
  const [reason, setReason] = useState(null);
  const operator = signedIn && session.isOperator();
  useEffect(() => {
    onUnauthorized(() => {
      session.clear();
      setReason("Your key is no longer accepted (revoked?). Sign in again.");
      setSignedIn(false);
    });
  }, []);
  useEffect(() => {
    document.title = `corral · ${route.path.split("/")[1] || (operator ? "operator" : "overview")}`;
  }, [route.path, operator]);
  if (!signedIn) {
    return h(SignIn, {
      reason,
      onSignedIn: (isOperator) => {
        setReason(null);
        setSignedIn(true);
        // A link opened before signing in (e.g. #/jobs/<id>) is kept; otherwise start at the overview.
        if (isOperator || !parseHash().path) navigate(isOperator ? "/operator" : "/overview");
      },
    });
  }
  return h(Shell, {
    operator,
    route,
    onSignOut: () => {
      session.clear();
      setSignedIn(false);
      history.replaceState(null, "", location.pathname);
    },
  });
}

render(h(App), document.getElementById("app"));
