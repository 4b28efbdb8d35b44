// #/stacks: the tenant's stacks (an admin may ask for every tenant's), filtered with
// Heat's list parameters, refreshed live.

import * as api from "./api.js";
import {h, errorBox, statusBadge, time, table, isInProgress, renderIfChanged}
  from "./dom.js";
import {Poller, FAST_MS, SLOW_MS} from "./poller.js";
import {stackHref, stacksHref} from "./router.js";

const STATUSES = [["", "Any status"], ["IN_PROGRESS", "In progress"],
  ["COMPLETE", "Complete"], ["FAILED", "Failed"]];
const ACTIONS = ["", "CREATE", "UPDATE", "DELETE", "ROLLBACK", "SUSPEND", "RESUME", "CHECK",
  "ADOPT", "SNAPSHOT", "RESTORE"];

function filtersOf(query, who) {
  return {
    name: query.get("name") || "",
    status: query.get("status") || "",
    action: query.get("action") || "",
    all: Boolean(who.is_admin && query.get("all") === "1"),
  };
}

export function mount(main, route, who) {
  document.title = "Stacks — Kiln";
  let filters = filtersOf(route.query, who);
  let stacks = [];

  const name = h("input", {id: "filter-name", name: "name", type: "search",
    autocomplete: "off"});
  const status = h("select", {id: "filter-status", name: "status"},
    STATUSES.map(([value, label]) => h("option", {value, text: label})));
  const action = h("select", {id: "filter-action", name: "action"},
    ACTIONS.map((value) => h("option", {value, text: value || "Any action"})));
  const all = h("input", {id: "filter-all", name: "all", type: "checkbox"});
  const form = h("form", {class: "filters", role: "search", "aria-label": "Filter stacks"},
    h("div", {class: "field"}, h("label", {for: "filter-name", text: "Name (exact)"}), name),
    h("div", {class: "field"}, h("label", {for: "filter-status", text: "Status"}), status),
    h("div", {class: "field"}, h("label", {for: "filter-action", text: "Action"}), action),
    who.is_admin ? h("div", {class: "field field--check"}, all,
      h("label", {for: "filter-all", text: "Every tenant"})) : null,
    h("div", {class: "actions"}, h("button", {type: "submit", text: "Filter"}),
      h("button", {type: "button", class: "secondary", text: "Clear",
        onclick: () => { window.location.hash = stacksHref(); }})));
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const query = {};
    if (name.value.trim()) query.name = name.value.trim();
    if (status.value) query.status = status.value;
    if (action.value) query.action = action.value;
    if (all.checked) query.all = "1";
    window.location.hash = stacksHref(query);
  });
  const heading = h("h1", {text: "Stacks"});
  const problems = h("div");
  const list = h("div", {id: "stack-list"});
  main.append(heading, form, problems, list);

  function syncForm() {
    name.value = filters.name;
    status.value = filters.status;
    action.value = filters.action;
    all.checked = filters.all;
    heading.textContent = filters.all ? "Stacks of every tenant" : "Stacks";
  }

  async function tick() {
    try {
      const answer = await api.get(api.tenantPath(who.tenant_id, "stacks"), {
        name: filters.name, status: filters.status, action: filters.action,
        global_tenant: filters.all ? "true" : ""});
      stacks = answer.stacks || [];
      problems.replaceChildren();
      renderIfChanged(list, {stacks, all: filters.all}, render);
    } catch (error) {
      problems.replaceChildren(errorBox(error, "The stacks could not be listed."));
    }
  }

  function render() {
    const columns = [
      {label: "Name", cell: (s) => h("a", {href: stackHref(s.project || who.tenant_id,
        s.stack_name, s.id), text: s.stack_name})},
      filters.all ? {label: "Tenant", cell: (s) => s.project || ""} : null,
      {label: "Status", cell: (s) => statusBadge(s.stack_status)},
      {label: "Reason", class: "reason", cell: (s) => s.stack_status_reason || ""},
      {label: "Created", cell: (s) => time(s.creation_time)},
      {label: "Updated", cell: (s) => time(s.updated_time)},
    ].filter(Boolean);
    return table({caption: filters.all ? "Stacks of every tenant" : "Stacks", columns,
      rows: stacks, empty: "No stacks match."});
  }

  syncForm();
  const poller = new Poller(tick, () => (
    stacks.some((s) => isInProgress(s.stack_status)) ? FAST_MS : SLOW_MS));
  poller.start();
  return {
    update(next) {
      filters = filtersOf(next.query, who);
      syncForm();
      list.replaceChildren();
      delete list.dataset.signature;
      poller.now();
    },
    unmount() { poller.stop(); },
  };
}
