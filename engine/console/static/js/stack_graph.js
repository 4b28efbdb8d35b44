// The stack's section "Graph": its resources as a dependency graph (GraphView, from
// graph.js) from GET .../graph?nested_depth=N, with the page's controls (depth, find,
// zoom, fit; the view draws the legend) and a details panel for the selected resource.
// Refreshed by the stack page's poller only (a new depth asks it for a tick), so reads
// never overlap; an answer for a depth no longer chosen is dropped all the same.

import * as api from "./api.js";
import {h, errorBox, statusBadge, formatValue, renderIfChanged} from "./dom.js";

const DEPTHS = [0, 1, 2, 3];

export function create(ctx) {
  let view = null;
  let viewMade = null; // the promise of `view`: one GraphView, however many ask at once
  let asked = 0; // the reads asked for: only the last one's answer is drawn
  let graph = null;
  let selected = null;
  let wanted = null; // a resource to select once the graph is drawn (?select=key)

  const problems = h("div");
  const canvas = h("div", {class: "graph-canvas", id: "graph-canvas"});
  const details = h("aside", {class: "details", id: "resource-details",
    "aria-labelledby": "details-title", "aria-live": "polite"});
  const depth = h("select", {id: "graph-depth"},
    DEPTHS.map((d) => h("option", {value: String(d),
      text: d ? `${d} level${d > 1 ? "s" : ""} down` : "none"})));
  depth.addEventListener("change", () => {
    ctx.depth = Number(depth.value);
    ctx.refresh();
  });
  const search = h("input", {id: "graph-search", type: "search", autocomplete: "off",
    "aria-describedby": "graph-search-count"});
  const found = h("span", {id: "graph-search-count", class: "muted", "aria-live": "polite"});
  search.addEventListener("input", () => {
    if (!view) return;
    const matches = view.search(search.value);
    found.textContent = search.value.trim()
      ? `${matches.length || "no"} match${matches.length === 1 ? "" : "es"}` : "";
  });
  search.addEventListener("keydown", (event) => {
    if (event.key !== "Enter" || !view) return;
    event.preventDefault();
    const [first] = view.search(search.value);
    if (first !== undefined) select(first, true);
  });
  const button = (text, action) => h("button", {type: "button", class: "secondary", text,
    onclick: () => view && action()});
  const toolbar = h("div", {class: "toolbar", role: "group", "aria-label": "Graph view"},
    h("div", {class: "field field--inline"},
      h("label", {for: "graph-depth", text: "Nested stacks"}), depth),
    h("div", {class: "field field--inline"},
      h("label", {for: "graph-search", text: "Find"}), search, found),
    button("Zoom in", () => view.zoom(1.25)), button("Zoom out", () => view.zoom(0.8)),
    button("Fit", () => view.fit()));
  const element = h("section", {},
    h("h2", {text: "Graph"}),
    h("p", {class: "help"}, "Arrows go from a resource to those that depend on it. "
      + "Tab to a resource, move with the arrow keys and press Enter to see its details "
      + "(E opens or closes a nested stack or group); the same resources are ",
    h("a", {href: ctx.href("resources"), text: "listed as a table"}), "."),
    toolbar, problems,
    h("div", {class: "graph-layout"}, canvas, details));
  renderDetails();

  // graph.js is loaded when a graph is first drawn, not with the console: the other
  // pages do without its thousand lines, and a fault in it costs this section alone.
  function ensureView() {
    viewMade ??= import("./graph.js").then(({GraphView}) => {
      // The canvas is as tall as the graph needs, within --kg-min-height (console.css)
      // and --kg-height (70vh, graph.css).
      view = new GraphView(canvas, {onSelect: (key) => select(key, false), fitHeight: true});
      return view;
    }, (error) => {
      viewMade = null; // a failed load is tried again at the next refresh
      throw error;
    });
    return viewMade;
  }

  async function refresh() {
    const ticket = ++asked;
    const wantedDepth = ctx.depth;
    const stale = () => ticket !== asked || wantedDepth !== ctx.depth;
    let answer;
    try {
      answer = await api.get(ctx.path("graph"), {nested_depth: String(wantedDepth)});
      await ensureView();
    } catch (error) {
      if (!stale()) problems.replaceChildren(errorBox(error, "The graph could not be drawn."));
      return;
    }
    if (stale()) return;
    problems.replaceChildren();
    graph = answer.graph;
    depth.value = String(ctx.depth);
    view.update(graph);
    if (wanted && node(wanted)) {
      const key = wanted;
      wanted = null;
      view.select(key);
      select(key, false);
    } else {
      renderDetails();
    }
  }

  function node(key) {
    return graph ? graph.nodes.find((n) => n.key === key) : null;
  }

  function select(key, fromOutside) {
    selected = key;
    if (fromOutside && view) view.select(key);
    renderDetails();
  }

  function renderDetails() {
    const item = selected ? node(selected) : null;
    const parentOf = Boolean(item && graph.nodes.some((n) => n.parent === item.key));
    // Rebuilt only when what it shows changed: a poll must not re-announce it.
    renderIfChanged(details, {selected, item, parentOf, drawn: Boolean(graph)},
      () => (item ? describe(item, parentOf) : [
        h("h3", {id: "details-title", text: "Resource details"}),
        h("p", {class: "help", text: selected && graph
          ? `${selected} is not in the graph any more.`
          : "Select a resource in the graph to see its details."})]));
  }

  function describe(item, parentOf) {
    const rows = [
      ["Name", item.name],
      item.key !== item.name ? ["Key", item.key] : null,
      ["Type", item.type],
      ["Status", statusBadge(`${item.action}_${item.status}`)],
      ["Reason", item.status_reason || "—"],
      ["Physical id", item.physical_resource_id ? h("code",
        {text: item.physical_resource_id}) : "—"],
      item.nested_stack_id ? ["Nested stack", h("code", {text: item.nested_stack_id})] : null,
      item.in_template === false ? ["In the template", "no: this update deletes it"] : null,
      item.replaced ? ["Replaces", h("span", {}, h("code",
        {text: formatValue(item.replaced.physical_resource_id)}),
      " (the old one, not deleted yet)")] : null,
      // Lines are those of the stack's own template (/source), not a nested one's.
      item.line && !item.parent ? ["Template line", h("a", {id: "details-line",
        href: ctx.href("template", {line: String(item.line)}),
        text: `line ${item.line}`})] : null,
    ].filter(Boolean);
    return [
      h("h3", {id: "details-title"}, item.name),
      h("dl", {class: "facts"}, rows.map(([label, value]) => [
        h("dt", {text: label}), h("dd", {}, value)])),
      parentOf || item.nested_stack_id ? h("div", {class: "actions"},
        h("button", {type: "button", class: "secondary", text: "Expand",
          onclick: () => view && view.expand(item.key)}),
        h("button", {type: "button", class: "secondary", text: "Collapse",
          onclick: () => view && view.collapse(item.key)})) : null,
    ];
  }

  return {
    element,
    refresh,
    show(query) {
      const key = query.get("select");
      if (!key) return;
      if (node(key)) select(key, true);
      else wanted = key;
    },
  };
}
