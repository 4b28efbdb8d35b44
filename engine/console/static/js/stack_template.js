// The stack's section "Template": the stored template as text with line numbers
// (GET .../source), the line of each FAILED resource highlighted and listed, and the
// line an address asks for (?line=N, from a resource's details) shown and focused.
// The text is read again at every poll while the stack is in progress: an update stores
// its new template when it is planned, which neither its status nor its updated time
// tells.

import * as api from "./api.js";
import {h, errorBox, sourceView, renderIfChanged, isInProgress} from "./dom.js";

export function create(ctx) {
  let source = null;
  let seen = null;
  let target = null;
  let failed = [];

  const problems = h("div");
  const failures = h("div", {id: "template-failures"});
  const text = h("div", {id: "template-text"});
  const element = h("section", {}, h("h2", {text: "Template"}),
    h("p", {class: "help", text: "Kiln's rendering of the stored template: comments and "
      + "formatting of the original text are not kept, and line numbers refer to this "
      + "text."}), problems, failures, text);

  async function refresh() {
    try {
      if (!source || seen !== ctx.version() || isInProgress(ctx.stack().stack_status)) {
        source = (await api.get(ctx.path("source"))).source;
        seen = ctx.version();
      }
      const resources = (await api.get(ctx.path("resources"))).resources;
      failed = resources.filter((r) => r.resource_status.endsWith("FAILED"))
        .map((r) => ({name: r.resource_name, reason: r.resource_status_reason,
          status: r.resource_status, line: source.lines.resources[r.resource_name] || null}))
        .sort((a, b) => (a.line || 0) - (b.line || 0));
    } catch (error) {
      problems.replaceChildren(errorBox(error, "The template could not be read."));
      return;
    }
    problems.replaceChildren();
    render();
  }

  function render() {
    if (!source) return;
    renderIfChanged(failures, failed, () => (failed.length ? [
      h("h3", {text: "Failed resources"}),
      h("ul", {class: "failures"}, failed.map((f) => h("li", {},
        f.line ? h("a", {href: ctx.href("template", {line: String(f.line)}),
          text: `line ${f.line}`}) : "not in this template", ": ",
        h("strong", {text: f.name}), ` ${f.status}: `, f.reason || ""))),
    ] : []));
    const marks = new Map();
    for (const f of failed) if (f.line) marks.set(f.line, "src-line--failed");
    if (target) marks.set(target, `${marks.get(target) || ""} src-line--target`.trim());
    const changed = renderIfChanged(text, {text: source.text, marks: [...marks]}, () =>
      sourceView(source.text, {marks, label: "Template source", id: "template-source"}));
    if (changed) focusTarget();
  }

  function focusTarget() {
    if (!target) return;
    const line = text.querySelector(`[data-line="${target}"]`);
    if (!line) return;
    line.setAttribute("tabindex", "-1");
    line.scrollIntoView({block: "center"});
    line.focus({preventScroll: true});
  }

  return {
    element,
    refresh,
    show(query) {
      const line = Number.parseInt(query.get("line") || "", 10);
      const next = Number.isFinite(line) && line > 0 ? line : null;
      if (next === target) return;
      target = next;
      render();
    },
  };
}
