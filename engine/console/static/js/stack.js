// #/stacks/{tenant_id}/{name}/{id}[/{section}]: one stack. The header (status, reason,
// the approval it is parked at) and one section at a time; the stack and the section on
// show are polled, every 2 s while the stack or its operation is in progress or parked,
// every 15 s otherwise. A section is read in the poller's tick only (a tab shown or a
// depth chosen asks for a tick at once), so its reads never overlap and answer in order.
// Sections are built when first shown and kept (the graph keeps its zoom and selection,
// the preview its chosen files).

import * as api from "./api.js";
import {h, errorBox, statusBadge, time, isInProgress, announce, renderIfChanged}
  from "./dom.js";
import {Poller, FAST_MS, SLOW_MS} from "./poller.js";
import {stackHref, stacksHref} from "./router.js";
import {createApproval} from "./stack_approval.js";
import * as graph from "./stack_graph.js";
import * as resources from "./stack_resources.js";
import * as events from "./stack_events.js";
import * as outputs from "./stack_outputs.js";
import * as parameters from "./stack_parameters.js";
import * as template from "./stack_template.js";
import * as lifecycle from "./stack_lifecycle.js";
import * as preview from "./stack_preview.js";

const SECTIONS = [
  ["graph", "Graph", graph], ["resources", "Resources", resources],
  ["events", "Events", events], ["outputs", "Outputs", outputs],
  ["parameters", "Parameters", parameters], ["template", "Template", template],
  ["lifecycle", "Lifecycle", lifecycle], ["preview", "Preview", preview],
];

export function mount(main, route, who) {
  // A member acts in its own tenant only: another tenant's stack is then simply not
  // found, as through any client. An admin acts in the tenant the address names.
  const tenant = who.is_admin ? route.tenant : who.tenant_id;
  const name = route.stackName;
  const id = route.id;
  document.title = `${name} — Kiln`;

  let stack = null;
  let approval = null;
  let lastStatus = null;
  let active = null;
  let gone = false;
  // Set by unmount(): a tick under way when the page was left must not announce or draw
  // anything on the next one, so it checks after each wait.
  let unmounted = false;
  const built = new Map();

  const ctx = {
    who, tenant, name, id,
    path: (...segments) => api.tenantPath(tenant, "stacks", name, id, ...segments),
    href: (section, query) => stackHref(route.tenant, name, id, section, query),
    stack: () => stack,
    /** Changes whenever the stack's status or template may have: sections that need
     * not poll (the template) fetch again only then. */
    version: () => (stack ? `${stack.stack_status}|${stack.updated_time}` : ""),
    refresh: () => poller.now(),
    depth: 0,
  };

  const heading = h("h1", {}, h("span", {class: "kind", text: "Stack "}), name);
  const summary = h("div", {class: "stack-summary", id: "stack-summary"});
  const problems = h("div", {id: "stack-problems"});
  const approvalBox = createApproval(ctx);
  const tabs = h("nav", {class: "tabs", "aria-label": "Stack sections"},
    h("ul", {}, SECTIONS.map(([key, label]) => h("li", {},
      h("a", {href: ctx.href(key), dataset: {section: key}, text: label})))));
  const body = h("div", {class: "stack-sections"});
  main.append(h("p", {class: "breadcrumb"}, h("a", {href: stacksHref(), text: "Stacks"}),
    " / ", name), heading, summary, problems, approvalBox.element, tabs, body);

  function renderSummary() {
    renderIfChanged(summary, {s: stack, live: live()}, () => [
      h("p", {class: "stack-status"}, statusBadge(stack.stack_status),
        h("span", {class: "reason", id: "stack-reason", text: stack.stack_status_reason || ""})),
      h("dl", {class: "facts"},
        h("dt", {text: "Id"}), h("dd", {}, h("code", {text: stack.id})),
        who.is_admin ? [h("dt", {text: "Tenant"}), h("dd", {text: tenant})] : null,
        h("dt", {text: "Created"}), h("dd", {}, time(stack.creation_time)),
        h("dt", {text: "Updated"}), h("dd", {}, time(stack.updated_time)),
        h("dt", {text: "Refreshed"}), h("dd", {id: "refresh-rate",
          text: live() ? "every 2 s (in progress)" : "every 15 s"})),
    ]);
  }

  function live() {
    return Boolean(stack && (isInProgress(stack.stack_status) ||
      (approval && !approval.decision)));
  }

  async function tick() {
    if (gone || unmounted) return;
    try {
      const answer = await api.get(ctx.path(), {resolve_outputs: "false"});
      if (unmounted) return;
      stack = answer.stack;
    } catch (error) {
      if (unmounted) return;
      if (error.status === 404 || error.status === 403) {
        gone = true;
        poller.stop();
        summary.replaceChildren();
        tabs.hidden = true;
        body.hidden = true;
        approvalBox.update(null);
        problems.replaceChildren(errorBox(error, "This stack cannot be shown."));
      } else {
        problems.replaceChildren(errorBox(error, "The stack could not be read."));
      }
      return;
    }
    approval = isInProgress(stack.stack_status) ? await readApproval() : null;
    if (unmounted) return;
    approvalBox.update(approval);
    problems.replaceChildren();
    if (lastStatus !== null && lastStatus !== stack.stack_status) {
      announce(`Stack ${name} is now ${stack.stack_status}`);
    }
    lastStatus = stack.stack_status;
    renderSummary();
    if (active) await active.section.refresh();
  }

  async function readApproval() {
    try {
      return (await api.get(ctx.path("approval"))).approval;
    } catch (error) {
      if (error.status !== 404) console.warn("approval:", error.summary());
      return null;
    }
  }

  function showSection(next) {
    const key = next.section;
    for (const link of tabs.querySelectorAll("a")) {
      if (link.dataset.section === key) link.setAttribute("aria-current", "page");
      else link.removeAttribute("aria-current");
    }
    if (!built.has(key)) {
      const [, label, module] = SECTIONS.find(([k]) => k === key);
      const section = module.create(ctx);
      section.element.classList.add("stack-section");
      section.element.id = `section-${key}`;
      section.element.setAttribute("aria-label", label);
      body.append(section.element);
      built.set(key, {key, section});
    }
    for (const entry of built.values()) entry.section.element.hidden = entry.key !== key;
    const changed = !active || active.key !== key;
    active = built.get(key);
    document.title = `${name}: ${SECTIONS.find(([k]) => k === key)[1]} — Kiln`;
    if (active.section.show) active.section.show(next.query);
    if (changed) poller.now();
  }

  const poller = new Poller(tick, () => (live() ? FAST_MS : SLOW_MS));
  showSection(route);
  poller.start();
  return {
    update(next) { showSection(next); },
    unmount() {
      unmounted = true;
      poller.stop();
      for (const entry of built.values()) if (entry.section.destroy) entry.section.destroy();
    },
  };
}
