// The stack's section "Resources": Heat's resource list (GET .../resources), nested
// stacks' resources too down to the depth chosen (shared with the graph), each linked to
// its node in the graph.

import * as api from "./api.js";
import {h, errorBox, statusBadge, time, table, renderIfChanged} from "./dom.js";
import {nodeKey} from "./graph_keys.js";

/** The id of the stack a resource row's link of relation `rel` names, or null. */
function linkedStack(row, rel) {
  const link = row.links.find((l) => l.rel === rel);
  return link ? link.href.split("/").pop() : null;
}

/**
 * Each row's graph key (a Map from row to key): a child stack's rows are keyed under the
 * row that owns that stack (its "nested" link), as the graph keys them; null for a row
 * whose owner is not listed.
 */
function graphKeys(resources, topStackId) {
  const owners = new Map(); // child stack id -> the row owning it
  for (const row of resources) {
    const child = linkedStack(row, "nested");
    if (child) owners.set(child, row);
  }
  const keys = new Map();
  const keyOf = (row) => {
    if (!keys.has(row)) {
      const stack = linkedStack(row, "stack");
      const owner = owners.get(stack);
      const parentKey = owner ? keyOf(owner) : null;
      keys.set(row, stack === topStackId ? nodeKey(row.resource_name)
        : parentKey === null ? null : nodeKey(row.resource_name, parentKey));
    }
    return keys.get(row);
  };
  for (const row of resources) keyOf(row);
  return keys;
}

export function create(ctx) {
  const problems = h("div");
  const list = h("div", {id: "resource-list"});
  const element = h("section", {}, h("h2", {text: "Resources"}), problems, list);

  async function refresh() {
    let resources;
    try {
      resources = (await api.get(ctx.path("resources"),
        {nested_depth: ctx.depth ? String(ctx.depth) : ""})).resources;
    } catch (error) {
      problems.replaceChildren(errorBox(error, "The resources could not be listed."));
      return;
    }
    problems.replaceChildren();
    resources.sort((a, b) => (a.parent_resource || "").localeCompare(b.parent_resource || "")
      || a.resource_name.localeCompare(b.resource_name));
    const keys = graphKeys(resources, ctx.stack().id);
    renderIfChanged(list, resources, () => table({
      caption: "Resources", rows: resources, empty: "The stack has no resources.",
      rowClass: (r) => (r.resource_status.endsWith("FAILED") ? "row--failed" : null),
      columns: [
        {label: "Resource", cell: (r) => (keys.get(r) === null ? r.resource_name
          : h("a", {href: ctx.href("graph", {select: keys.get(r)}), text: r.resource_name}))},
        {label: "Type", cell: (r) => r.resource_type},
        {label: "Status", cell: (r) => statusBadge(r.resource_status)},
        {label: "Reason", class: "reason", cell: (r) => r.resource_status_reason || ""},
        {label: "Physical id", cell: (r) => (r.physical_resource_id
          ? h("code", {text: r.physical_resource_id}) : "—")},
        {label: "In nested stack of", cell: (r) => r.parent_resource || "—"},
        {label: "Updated", cell: (r) => time(r.updated_time)},
      ]}));
  }

  return {element, refresh};
}
