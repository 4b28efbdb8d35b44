// The stack's section "Resources": Heat's resource list (GET .../resources), nested
// stacks' resources too down to the depth chosen (shared with the graph).

import * as api from "./api.js";
import {h, errorBox, statusBadge, time, table, renderIfChanged} from "./dom.js";

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
    renderIfChanged(list, resources, () => table({
      caption: "Resources", rows: resources, empty: "The stack has no resources.",
      rowClass: (r) => (r.resource_status.endsWith("FAILED") ? "row--failed" : null),
      columns: [
        {label: "Resource", cell: (r) => (r.parent_resource ? r.resource_name
          : h("a", {href: ctx.href("graph", {select: r.resource_name}),
            text: r.resource_name}))},
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
