// The stack's section "Lifecycle": the lifecycle plugin calls of each operation, in the
// order they were made (GET .../lifecycle), and what each plugin holds for the stack.

import * as api from "./api.js";
import {h, errorBox, time, table, verdictBadge, renderIfChanged} from "./dom.js";
import {shortId} from "./operator.js";

/** The calls (oldest first) cut into operations, newest operation first: by the
 * operation id a call records; a call recorded before calls named their operation (no
 * `operation_id`) starts one where the action changes or a pre-op follows post-ops. */
export function operations(calls) {
  const groups = [];
  const byId = new Map();
  let last = null;
  for (const call of calls) {
    let group;
    if (call.operation_id) {
      group = byId.get(call.operation_id);
      if (!group) {
        group = {id: call.operation_id, action: call.action, calls: []};
        byId.set(group.id, group);
        groups.push(group);
      }
    } else if (!last || last.id || last.action !== call.action ||
        (call.phase === "pre" && last.calls.some((c) => c.phase === "post"))) {
      group = {id: null, action: call.action, calls: []};
      groups.push(group);
    } else {
      group = last;
    }
    group.calls.push(call);
    last = group;
  }
  return groups.reverse();
}

export function create(ctx) {
  const problems = h("div");
  const calls = h("div", {id: "lifecycle-calls"});
  const reports = h("div", {id: "lifecycle-reports"});
  const element = h("section", {}, h("h2", {text: "Lifecycle plugins"}), problems, calls,
    reports);

  async function refresh() {
    let lifecycle;
    try {
      lifecycle = (await api.get(ctx.path("lifecycle"))).lifecycle;
    } catch (error) {
      problems.replaceChildren(errorBox(error, "The lifecycle calls could not be read."));
      return;
    }
    problems.replaceChildren();
    renderIfChanged(calls, lifecycle.calls, () => {
      const groups = operations(lifecycle.calls);
      if (!groups.length) return h("p", {class: "empty", text: "No plugin was called yet."});
      return groups.map((group, index) => h("div", {class: "operation",
        dataset: group.id ? {operation: group.id} : null},
        h("h3", {}, `${group.action} operation`, group.id ? [" ", shortId(group.id)] : null,
          h("span", {class: "muted"}, ` — ${index === 0 ? "the latest, " : ""}from `),
          time(group.calls[0].time)),
        table({caption: `Plugin calls of the ${group.action} operation`
          + (group.id ? ` ${group.id.slice(0, 8)}` : ""), rows: group.calls,
          rowClass: (c) => (c.blocking ? "row--failed" : null),
          columns: [
            {label: "Plugin", cell: (c) => c.plugin},
            {label: "Phase", cell: (c) => `${c.phase}-op${c.dry_run ? " (dry run)" : ""}`},
            {label: "Verdict", cell: (c) => h("span", {}, verdictBadge(c.verdict),
              c.blocking ? h("span", {class: "muted", text: " (blocking)"}) : null)},
            {label: "Message", class: "reason", cell: (c) => c.message || ""},
            {label: "Duration", class: "number", cell: (c) => (c.duration_ms === undefined
              ? "—" : `${c.duration_ms} ms`)},
            {label: "Time", cell: (c) => time(c.time)},
          ]})));
    });
    renderIfChanged(reports, lifecycle.plugins, () => (lifecycle.plugins.length ? [
      h("h3", {text: "What the plugins hold for this stack"}),
      h("dl", {class: "reports"}, lifecycle.plugins.map((p) => [
        h("dt", {text: p.plugin}),
        h("dd", {}, p.error ? h("span", {class: "status status--failed", text: p.error})
          : p.report === null || p.report === undefined ? h("span", {class: "muted",
            text: "nothing"})
            : h("pre", {class: "value", text: JSON.stringify(p.report, null, 2)}))]))]
      : []));
  }

  return {element, refresh};
}
