// Building the page from API data. Everything here writes text with textContent or text
// nodes, never innerHTML: stack names, reasons and messages are tenant-controlled.

/**
 * h("a", {href: "#/x", class: "y", onclick: fn}, "text", child, [more]).
 * Attribute values are set as attributes (strings); `text` sets textContent;
 * on<event> adds a listener; null, undefined and false children are skipped.
 */
export function h(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (key === "text") node.textContent = String(value);
    else if (key.startsWith("on") && typeof value === "function") {
      node.addEventListener(key.slice(2), value);
    } else if (key === "dataset") Object.assign(node.dataset, value);
    else node.setAttribute(key, value === true ? "" : String(value));
  }
  append(node, children);
  return node;
}

function append(node, children) {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    if (Array.isArray(child)) append(node, child);
    else node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

const STATUS = {
  COMPLETE: {glyph: "✔", kind: "complete"},
  FAILED: {glyph: "✖", kind: "failed"},
  IN_PROGRESS: {glyph: "⟳", kind: "progress"},
};

/** "CREATE_FAILED" -> {action: "CREATE", status: "FAILED"} */
export function splitStatus(text) {
  const value = String(text || "");
  for (const status of Object.keys(STATUS)) {
    if (value === status) return {action: "", status};
    if (value.endsWith(`_${status}`)) {
      return {action: value.slice(0, -status.length - 1), status};
    }
  }
  return {action: "", status: value};
}

/** A status as text plus a glyph, coloured too but never only coloured. */
export function statusBadge(text) {
  const {status} = splitStatus(text);
  const known = STATUS[status] || {glyph: "○", kind: "other"};
  return h("span", {class: `status status--${known.kind}`, dataset: {status: text || ""}},
    h("span", {class: "glyph", "aria-hidden": "true", text: known.glyph}),
    " ", text || "unknown");
}

export function isInProgress(text) {
  return splitStatus(text).status === "IN_PROGRESS";
}

const VERDICTS = {
  allow: ["✔", "good"], done: ["✔", "good"], approved: ["✔", "good"],
  warn: ["⚠", "warn"], skipped: ["↷", "neutral"], not_called: ["–", "neutral"],
  pending: ["‖", "warn"], deny: ["✖", "bad"], error: ["✖", "bad"],
  rejected: ["✖", "bad"], timeout: ["◷", "bad"], expired: ["◶", "bad"],
};

export function verdictBadge(verdict) {
  const [glyph, kind] = VERDICTS[verdict] || ["○", "neutral"];
  return h("span", {class: `verdict verdict--${kind}`, dataset: {verdict: verdict || ""}},
    h("span", {class: "glyph", "aria-hidden": "true", text: glyph}), " ", verdict || "—");
}

/** Yes or no as a glyph and a word ("alive" / "not alive"). */
export function yesNo(value, yes = "yes", no = "no") {
  if (value === null || value === undefined) return h("span", {class: "muted", text: "—"});
  return h("span", {class: `flag flag--${value ? "yes" : "no"}`},
    h("span", {class: "glyph", "aria-hidden": "true", text: value ? "✔" : "✖"}),
    " ", value ? yes : no);
}

function parseTime(value) {
  if (!value) return null;
  // Python's isoformat without a zone is UTC in Kiln.
  const text = /[zZ]|[+-]\d\d:?\d\d$/.test(value) ? value : `${value}Z`;
  const date = new Date(text);
  return Number.isNaN(date.getTime()) ? null : date;
}

/** <time> showing "2026-11-22 08:41:24 UTC". */
export function time(value) {
  const date = parseTime(value);
  if (!date) return h("span", {class: "muted", text: value ? String(value) : "—"});
  const text = `${date.toISOString().slice(0, 19).replace("T", " ")} UTC`;
  return h("time", {datetime: date.toISOString(), text});
}

/** "12 s ago", "3 min ago" (or "in 4 min" for a future time). */
export function age(value, now = Date.now()) {
  const date = parseTime(value);
  if (!date) return "—";
  const seconds = Math.round((now - date.getTime()) / 1000);
  const span = Math.abs(seconds);
  const text = span < 120 ? `${span} s` : span < 7200 ? `${Math.round(span / 60)} min`
    : span < 172800 ? `${Math.round(span / 3600)} h` : `${Math.round(span / 86400)} d`;
  return seconds >= 0 ? `${text} ago` : `in ${text}`;
}

/** Any JSON value as short text: null as a dash, objects as compact JSON. */
export function formatValue(value) {
  if (value === null || value === undefined) return "—";
  if (typeof value === "boolean") return value ? "yes" : "no";
  if (typeof value === "object") return JSON.stringify(value);
  return String(value);
}

/**
 * A table in a horizontally scrollable, focusable region (so a phone or a keyboard
 * can scroll it). columns: [{label, cell(row) -> Node|string, class}]; the first column
 * is the row header; rowClass(row) names a row's class.
 */
export function table({caption, columns, rows, empty = "Nothing to show.", id,
  rowClass = () => null}) {
  const wrapper = h("div", {class: "table-scroll", role: "region", tabindex: "0",
    "aria-label": caption, id});
  if (!rows.length) {
    wrapper.append(h("p", {class: "empty", text: empty}));
    return wrapper;
  }
  const head = h("tr", {}, columns.map((c) => h("th", {scope: "col", class: c.class,
    text: c.label})));
  const body = rows.map((row) => h("tr", {class: rowClass(row)},
    columns.map((column, index) => {
      const content = column.cell(row);
      return h(index === 0 ? "th" : "td", {scope: index === 0 ? "row" : null,
        class: column.class},
      content instanceof Node ? content : formatCell(content));
    })));
  wrapper.append(h("table", {}, h("caption", {text: caption}), h("thead", {}, head),
    h("tbody", {}, body)));
  return wrapper;
}

function formatCell(content) {
  return typeof content === "string" ? content : formatValue(content);
}

/** A Heat error shown as title, message and explanation, announced to screen readers. */
export function errorBox(error, lead) {
  const box = h("div", {class: "error", role: "alert"});
  if (lead) box.append(h("p", {class: "error-lead", text: lead}));
  if (error && error.summary) {
    const head = error.status ? `${error.title} (${error.status})` : error.title;
    box.append(h("p", {class: "error-title"}, h("strong", {text: head})));
    if (error.detail) box.append(h("p", {class: "error-message", text: error.detail}));
    if (error.explanation) box.append(h("p", {class: "error-explanation",
      text: error.explanation}));
  } else {
    box.append(h("p", {class: "error-message", text: String(error && error.message
      ? error.message : error)}));
  }
  return box;
}

/** Replace what `node` shows only when `data` changed: a poll that brings the same
 * answer must not rebuild the DOM under the reader's focus or screen reader. */
export function renderIfChanged(node, data, render) {
  const signature = JSON.stringify(data);
  if (node.dataset.signature === signature) return false;
  node.replaceChildren(...[].concat(render(data)).filter(Boolean));
  node.dataset.signature = signature;
  return true;
}

/** Tell screen readers something changed (the page's polite live region). */
export function announce(text) {
  const live = document.getElementById("live");
  if (!live) return;
  live.textContent = "";
  // A new text node after a tick, so that the same message repeated is read again.
  window.setTimeout(() => { live.textContent = text; }, 50);
}

/** A line-numbered view of source text; `marks` maps a line to a class name. */
export function sourceView(text, {marks = new Map(), label = "Template source",
  id} = {}) {
  const lines = String(text).split("\n");
  if (lines.length && lines[lines.length - 1] === "") lines.pop();
  const view = h("div", {class: "source", role: "region", tabindex: "0",
    "aria-label": label, id});
  view.append(...lines.map((line, index) => {
    const number = index + 1;
    const mark = marks.get(number);
    return h("div", {class: mark ? `src-line ${mark}` : "src-line",
      dataset: {line: String(number)}, id: id ? `${id}-L${number}` : null},
    h("span", {class: "ln", "aria-hidden": "true", text: String(number)}),
    mark ? h("span", {class: "visually-hidden", text: `Line ${number}, marked: `}) : null,
    h("code", {text: line || " "}));
  }));
  return view;
}
