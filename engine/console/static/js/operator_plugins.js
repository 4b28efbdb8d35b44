// #/operator/plugins (admin only): the installed lifecycle plugins in their calling
// order, with their settings (secret ones masked by the API) and recent verdicts.

import {h, time, table, yesNo, verdictBadge, formatValue} from "./dom.js";
import {stackHref} from "./router.js";
import {operatorPage, shortId} from "./operator.js";

const RECENT = 20;

function plugin(p) {
  const id = `plugin-${p.name}`.replace(/[^\w-]/g, "_");
  return h("section", {class: "plugin", "aria-labelledby": id},
    // A disabled plugin has no position (null): it is not called.
    h("h2", {id}, p.position === null ? "" : `${p.position}. `, `${p.name} `,
      h("span", {class: "muted"},
      p.enabled ? "(enabled)" : "(disabled)")),
    h("dl", {class: "facts"},
      h("dt", {text: "Enabled"}), h("dd", {}, yesNo(p.enabled, "enabled", "disabled"),
        p.reason ? ` — ${p.reason}` : ""),
      h("dt", {text: "Entry point"}), h("dd", {}, h("code", {text: p.entry_point || "—"})),
      h("dt", {text: "Distribution"}), h("dd", {text: `${p.distribution || "—"} `
        + `${p.version || ""}`.trim()}),
      h("dt", {text: "Timeout"}), h("dd", {text: `${formatValue(p.timeout_seconds)} s, `
        + `then ${p.on_timeout || "—"}`}),
      h("dt", {text: "Dry runs"}), h("dd", {}, yesNo(p.supports_dry_run, "supported",
        "not supported")),
      h("dt", {text: "Tree scope"}), h("dd", {text: formatValue(p.tree_scope)})),
    table({caption: `Settings of ${p.name}`, rows: p.settings,
      empty: "No settings.", columns: [
        {label: "Setting", cell: (o) => (o.group ? `[${o.group}] ${o.name}` : o.name)},
        {label: "Value", cell: (o) => (o.value === "" || o.value === null
          ? h("span", {class: "muted", text: "not set"})
          : h("span", {}, h("code", {text: formatValue(o.value)}),
            o.secret ? h("span", {class: "muted", text: " (secret: masked)"}) : null))},
      ]}),
    table({caption: `Recent calls of ${p.name}`, rows: p.recent,
      empty: "Not called recently.", rowClass: (c) => (["deny", "error", "timeout",
        "rejected", "expired"].includes(c.verdict) ? "row--failed" : null),
      columns: [
        {label: "Time", cell: (c) => time(c.at)},
        {label: "Stack", cell: (c) => (c.stack_name ? h("a", {href: stackHref(c.tenant_id,
          c.stack_name, c.stack_id, "lifecycle"), text: c.stack_name}) : shortId(c.stack_id))},
        {label: "Action", cell: (c) => `${c.action} ${c.phase}-op`},
        {label: "Operation", cell: (c) => shortId(c.operation_id)},
        {label: "Verdict", cell: (c) => verdictBadge(c.verdict)},
        {label: "Message", class: "reason", cell: (c) => c.message || ""},
        {label: "Duration", class: "number", cell: (c) => (c.duration_ms === null
          ? "—" : `${c.duration_ms} ms`)},
      ]}));
}

export function mount(main, route, who) {
  const page = operatorPage(main, who, {
    title: "Lifecycle plugins",
    intro: "The installed lifecycle plugins in the order they are called (post-ops in "
      + "reverse), as kiln-manage plugin list shows them; secret settings are masked.",
    resource: "lifecycle_plugins",
    query: () => ({recent: String(RECENT)}),
    // In the answer's order: the calling order, then the disabled plugins.
    render: (answer) => (answer.lifecycle_plugins.length
      ? answer.lifecycle_plugins.map(plugin)
      : h("p", {class: "empty", text: "No lifecycle plugin is installed."})),
  });
  return {unmount: page.unmount};
}
