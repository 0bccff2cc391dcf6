// Signing secrets: the tenant's active secrets for signed HTTP targets, rotation, and expiring one at once.

import { h } from "preact";
import { useState } from "preact/hooks";
import { api } from "./api.js";
import { ActionButton, Card, Empty, Flash, Page, PollState, Time, useFlash, usePoll } from "./ui.js";

export function SecretsPage() {
  const [flash, showFlash] = useFlash();
  const secrets = usePoll(() => api("GET", "/v1/signing-secrets"), [], 0);
  const list = secrets.data?.secrets || secrets.data?.signing_secrets || [];
  const anyBound = list.some((secret) => secret.destination);
  // The server keeps at least one unbound secret (409); a destination's last one may go.
  const unboundCount = list.filter((secret) => !secret.destination).length;
  return h(
    Page,
    {
      title: "Signing secrets",
      lead: "HTTP targets receive a Corral-Signature header and the Standard Webhooks headers (webhook-id, webhook-timestamp, webhook-signature) made with these. Rotating adds a new secret; the previous one stays valid for 24 hours, so receivers can switch without a gap. Expire a leaked secret to end it at once (the only one left cannot be: rotate first). A secret bound to a destination signs the requests to that origin alone.",
    },
    h(Flash, { flash }),
    h(PollState, { poll: secrets, notFound: "This deployment has no signing secrets (no HTTP targets)." }),
    secrets.data
      ? h(
          Card,
          {
            title: "Active secrets",
            actions: h(ActionButton, {
              label: "Rotate",
              busyLabel: "Rotating…",
              kind: "primary",
              run: () => api("POST", "/v1/signing-secrets:rotate"),
              onDone: () => {
                showFlash("success", "A new secret is active; the previous one stays valid for 24 hours.");
                secrets.reload();
              },
              onError: (error) => showFlash("error", error.message),
            }),
          },
          list.length
            ? h(
                "ul",
                { class: "secrets" },
                list.map((secret, index) =>
                  h(Secret, {
                    secret,
                    key: secret.id || index,
                    anyBound,
                    canExpire: Boolean(secret.id) && (Boolean(secret.destination) || unboundCount > 1),
                    onExpired: () => {
                      showFlash("success", "The secret is expired: no new request is signed with it (workers stop within 60 s).");
                      secrets.reload();
                    },
                    onError: (error) => showFlash("error", error.message),
                  }),
                ),
              )
            : h(Empty, { title: "No active secret." }, "Rotate to create one."),
        )
      : null,
  );
}

function masked(value, shown) {
  return shown ? value : `${value.slice(0, 6)}${"•".repeat(18)}`;
}

function Secret({ secret, anyBound, canExpire, onExpired, onError }) {
  const [shown, setShown] = useState(false);
  const [confirming, setConfirming] = useState(false);
  const value = secret.secret || secret.value || "";
  // A secret issued before the Standard Webhooks form: the libraries need the same key re-encoded.
  const standard = secret.standard_webhooks_secret && secret.standard_webhooks_secret !== value ? secret.standard_webhooks_secret : "";
  return h(
    "li",
    { class: "secret" },
    h("code", { class: "mono break" }, value ? masked(value, shown) : secret.id || "secret"),
    value
      ? h("button", { type: "button", class: "btn btn-secondary btn-small", onClick: () => setShown(!shown) }, shown ? "Hide" : "Show")
      : null,
    secret.destination
      ? h("span", { class: "small", "data-testid": "secret-destination" }, "signs requests to ", h("code", { class: "mono" }, secret.destination))
      : anyBound
        ? h("span", { class: "small", "data-testid": "secret-destination" }, "signs requests to every other destination")
        : null,
    standard
      ? h(
          "span",
          { class: "small", "data-testid": "secret-standard" },
          "for Standard Webhooks libraries: ",
          h("code", { class: "mono break" }, masked(standard, shown)),
        )
      : null,
    h(
      "span",
      { class: "muted small" },
      secret.created_at ? h("span", null, "created ", h(Time, { value: secret.created_at })) : null,
      secret.expires_at ? h("span", null, " · expires ", h(Time, { value: secret.expires_at })) : null,
    ),
    !canExpire
      ? null
      : confirming
        ? h(
            "span",
            { class: "button-row" },
            h(ActionButton, {
              label: "Yes, expire it now",
              busyLabel: "Expiring…",
              kind: "danger",
              run: () => api("POST", `/v1/signing-secrets/${encodeURIComponent(secret.id)}/expire`),
              onDone: onExpired,
              onError: (error) => {
                setConfirming(false);
                onError(error);
              },
            }),
            h("button", { type: "button", class: "btn btn-secondary btn-small", onClick: () => setConfirming(false) }, "Keep it"),
          )
        : h("button", { type: "button", class: "btn btn-danger btn-small", onClick: () => setConfirming(true) }, "Expire now"),
  );
}
