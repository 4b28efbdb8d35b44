// #/operator/operations (admin only): the operations kiln-manage operation list shows,
// with their lease holders, steps and approval gates.

import {h, time, age, table, yesNo, formatValue} from "./dom.js";
import {stackHref} from "./router.js";
import {operatorPage, shortId} from "./operator.js";

// The answer's shapes are specs/console.rst's ("API additions", /operations); a field of
// another shape is a contract broken, and its error shows in the console, not a guess.

/** Steps {total, done, failed, running} as "3/5 done" plus any failed or running. */
function steps(value) {
  const extra = ["failed", "running"].filter((k) => value[k]).map((k) => `${value[k]} ${k}`);
  return [`${value.done}/${value.total} done`, ...extra].join(", ");
}

/** Step holders {worker id: steps it holds} as "id: n, ...". */
function stepHolders(value) {
  return Object.entries(value).map(([worker, count]) => `${worker}: ${count}`).join(", ")
    || "none";
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

/** The holders: a list of worker ids (empty while an operation waits or is done). */
function holders(ids) {
  return ids.length ? ids.map((id) => shortId(id)) : "—";
}

function held(op) {
  return op.held_by.length > 0;
}

/** The approval gate {plugin, message, ...} the operation is parked at, or null. */
function approval(gate) {
  if (gate === null) return yesNo(false);
  return h("span", {}, h("span", {class: "verdict verdict--warn"},
    h("span", {class: "glyph", "aria-hidden": "true", text: "‖"}), " waiting"),
  ` ${gate.plugin}: ${gate.message || ""}`);
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
    busy: (answer) => answer.operations.some((op) => !op.finished_at),
    render: (answer) => table({
      caption: "Operations", rows: answer.operations,
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
        {label: "Step holders", cell: (op) => stepHolders(op.step_holders)},
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
