// #/operator/operations (admin only): the operations kiln-manage operation list shows,
// with their lease holders, steps and approval gates.

import {h, time, age, table, yesNo, formatValue} from "./dom.js";
import {stackHref} from "./router.js";
import {operatorPage, listOf, shortId} from "./operator.js";

/** Steps as "3/5 done" plus any failed or running: {total, done, failed, running}. */
function steps(value) {
  if (!value || typeof value !== "object" || !("total" in value)) return summary(value);
  const extra = ["failed", "running"].filter((k) => value[k]).map((k) => `${value[k]} ${k}`);
  return [`${value.done ?? 0}/${value.total} done`, ...extra].join(", ");
}

function summary(value) {
  if (value === null || value === undefined) return "—";
  if (Array.isArray(value)) return value.map(summary).join(", ") || "none";
  if (typeof value === "object") {
    return Object.entries(value).map(([k, v]) => `${k}: ${formatValue(v)}`).join(", ")
      || "none";
  }
  return formatValue(value);
}

const STATES = {
  PENDING: ["○", "other"], RUNNING: ["⟳", "progress"], FINISHING: ["⟳", "progress"],
  NOTIFYING: ["⟳", "progress"], COMPLETE: ["✔", "complete"], FAILED: ["✖", "failed"],
};

function stateBadge(op) {
  const [glyph, kind] = op.awaiting_approval ? ["‖", "progress"]
    : STATES[op.state] || ["○", "other"];
  return h("span", {class: `status status--${kind}`},
    h("span", {class: "glyph", "aria-hidden": "true", text: glyph}), " ", op.state,
    op.cancelled ? " (cancelled)" : "");
}

/** The holders: a list of worker ids (none while an operation waits or is done). */
function holders(value) {
  const list = (Array.isArray(value) ? value : [value]).filter(Boolean);
  return list.length ? list.map((id) => shortId(id)) : "—";
}

function held(op) {
  return Array.isArray(op.held_by) ? op.held_by.length > 0 : Boolean(op.held_by);
}

function approval(value) {
  if (!value) return yesNo(false);
  if (typeof value === "object") {
    return h("span", {}, h("span", {class: "verdict verdict--warn"},
      h("span", {class: "glyph", "aria-hidden": "true", text: "‖"}), " waiting"),
    ` ${value.plugin ? `${value.plugin}: ` : ""}${value.message || ""}`);
  }
  return yesNo(Boolean(value), "waiting", "no");
}

export function mount(main, route, who) {
  const state = h("select", {id: "operations-state"},
    h("option", {value: "unfinished", text: "Unfinished"}),
    h("option", {value: "all", text: "All (newest first)"}));
  state.value = route.query.get("state") === "all" ? "all" : "unfinished";
  const controls = h("form", {class: "filters", "aria-label": "Filter operations"},
    h("div", {class: "field field--inline"}, h("label", {for: "operations-state",
      text: "Operations"}), state));
  const page = operatorPage(main, who, {
    title: "Operations",
    intro: "Stack operations of every tenant with who holds them (kiln-manage operation "
      + "list). A parked operation waits for an approval and has no holder.",
    resource: "operations",
    query: () => ({state: state.value, limit: "200"}),
    controls,
    busy: (answer) => listOf(answer, "operations").some((op) => !op.finished_at),
    render: (answer) => table({
      caption: "Operations", rows: listOf(answer, "operations"),
      empty: "No operations.",
      rowClass: (op) => (op.holder_alive === false && held(op) ? "row--failed" : null),
      columns: [
        {label: "Operation", cell: (op) => shortId(op.id)},
        {label: "Stack", cell: (op) => (op.stack_name ? h("a", {href: stackHref(
          op.tenant_id, op.stack_name, op.stack_id), text: op.stack_name}) : shortId(op.stack_id))},
        {label: "Tenant", cell: (op) => shortId(op.tenant_id)},
        {label: "Action", cell: (op) => op.action},
        {label: "State", cell: (op) => stateBadge(op)},
        {label: "Attempt", class: "number", cell: (op) => formatValue(op.attempt)},
        {label: "Held by", cell: (op) => h("span", {}, holders(op.held_by))},
        {label: "Lease expires", cell: (op) => (op.lease_expires_at ? h("span", {},
          time(op.lease_expires_at), ` (${age(op.lease_expires_at)})`) : "—")},
        {label: "Holder alive", cell: (op) => (held(op) ? yesNo(op.holder_alive, "alive",
          "not alive") : "—")},
        {label: "Steps", cell: (op) => steps(op.steps)},
        {label: "Step holders", cell: (op) => summary(op.step_holders)},
        {label: "Awaiting approval", class: "reason",
          cell: (op) => approval(op.awaiting_approval)},
        {label: "Created", cell: (op) => time(op.created_at)},
        {label: "Finished", cell: (op) => time(op.finished_at)},
        {label: "Failure", class: "reason", cell: (op) => op.failure_reason || ""},
      ]}),
  });
  state.addEventListener("change", () => page.poller.now());
  return {unmount: page.unmount};
}
