// The stack's section "Preview": the update preview (Heat's PUT .../preview) of a
// template file chosen in this browser, with an optional environment file and
// parameters: what would be added, updated, replaced, deleted or left unchanged, and
// each lifecycle plugin's dry-run verdict. Nothing is stored. A 400 shows the error and,
// when it names a line, that line of the uploaded text.

import * as api from "./api.js";
import {h, errorBox, table, verdictBadge, sourceView} from "./dom.js";

const CHANGES = [
  ["added", "+", "Added"], ["updated", "~", "Updated in place"],
  ["replaced", "⇄", "Replaced"], ["deleted", "−", "Deleted"],
  ["unchanged", "=", "Unchanged"],
];

/** "name=value" lines as parameters; blank lines and lines starting with # skipped. */
export function parseParameters(text) {
  const parameters = {};
  for (const [index, raw] of text.split("\n").entries()) {
    const line = raw.trim();
    if (!line || line.startsWith("#")) continue;
    const equals = line.indexOf("=");
    if (equals < 1) throw new Error(`Parameters, line ${index + 1}: write name=value.`);
    parameters[line.slice(0, equals).trim()] = line.slice(equals + 1).trim();
  }
  return parameters;
}

/** The document and line an error message names ("template:12 resources.x: ..."). */
export function locate(message) {
  const match = /(?:^|[\s(])([\w.\/-]+):(\d+)(?=[\s:,)]|$)/.exec(message || "");
  return match ? {file: match[1], line: Number(match[2])} : null;
}

export function create(ctx) {
  const templateFile = h("input", {id: "preview-template", name: "template", type: "file",
    required: true, accept: ".yaml,.yml,.json,.template,.hot,text/*"});
  const environmentFile = h("input", {id: "preview-environment", name: "environment",
    type: "file", accept: ".yaml,.yml,.json,.env,text/*"});
  const parametersText = h("textarea", {id: "preview-parameters", name: "parameters",
    rows: "3", spellcheck: "false", "aria-describedby": "preview-parameters-help"});
  const patch = h("input", {id: "preview-patch", name: "patch", type: "checkbox"});
  const button = h("button", {type: "submit", text: "Preview the update"});
  const result = h("div", {id: "preview-result", "aria-live": "polite"});
  const form = h("form", {class: "preview-form"},
    h("div", {class: "field"}, h("label", {for: "preview-template",
      text: "Template file"}), templateFile),
    h("div", {class: "field"}, h("label", {for: "preview-environment",
      text: "Environment file (optional)"}), environmentFile),
    h("div", {class: "field"}, h("label", {for: "preview-parameters",
      text: "Parameters (optional)"}), parametersText,
    h("p", {id: "preview-parameters-help", class: "help",
      text: "One name=value a line."})),
    h("div", {class: "field field--check"}, patch, h("label", {for: "preview-patch",
      text: "Keep the stack's current parameters not given here (PATCH)"})),
    h("div", {class: "actions"}, button));
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    run();
  });
  const element = h("section", {}, h("h2", {text: "Preview an update"}),
    h("p", {class: "help", text: "Choose a template file from this computer: Kiln says "
      + "what an update to it would do and what each lifecycle plugin would say. "
      + "Nothing is changed."}), form, result);

  async function run() {
    result.replaceChildren();
    const file = templateFile.files[0];
    if (!file) {
      result.append(errorBox("Choose a template file first."));
      templateFile.focus();
      return;
    }
    let texts;
    let body;
    try {
      texts = {template: await file.text()};
      body = {template: texts.template, parameters: parseParameters(parametersText.value)};
      if (environmentFile.files[0]) {
        texts.environment = await environmentFile.files[0].text();
        body.environment = texts.environment;
      }
    } catch (error) {
      result.append(errorBox(error, "The preview was not asked for."));
      return;
    }
    button.disabled = true;
    result.append(h("p", {class: "muted", text: "Asking Kiln…"}));
    try {
      const answer = await api.request(ctx.path("preview"),
        {method: patch.checked ? "PATCH" : "PUT", body});
      result.replaceChildren(...renderPreview(answer, file.name));
    } catch (error) {
      result.replaceChildren(...renderError(error, texts, file.name));
    } finally {
      button.disabled = false;
    }
  }

  function renderPreview(answer, fileName) {
    const changes = answer.resource_changes || {};
    const count = (key) => (changes[key] || []).length;
    return [
      h("h3", {text: `What an update to ${fileName} would do`}),
      h("ul", {class: "change-summary", id: "preview-summary"}, CHANGES.map(([key, glyph,
        label]) => h("li", {class: `change change--${key}`, dataset: {change: key}},
        h("span", {class: "glyph", "aria-hidden": "true", text: glyph}),
        ` ${label}: ${count(key)}`))),
      ...CHANGES.filter(([key]) => count(key)).map(([key, , label]) => table({
        caption: `${label} (${count(key)})`, rows: changes[key], id: `preview-${key}`,
        columns: [
          {label: "Resource", cell: (r) => r.resource_name},
          {label: "Type", cell: (r) => r.resource_type},
        ]})),
      h("h3", {text: "Lifecycle plugins' verdicts"}),
      table({caption: "Dry-run verdicts", id: "preview-verdicts",
        rows: answer.lifecycle || [], empty: "No lifecycle plugin gave a verdict.",
        rowClass: (v) => (v.blocking ? "row--failed" : null),
        columns: [
          {label: "Plugin", cell: (v) => v.plugin},
          {label: "Verdict", cell: (v) => h("span", {}, verdictBadge(v.verdict),
            v.blocking ? h("span", {class: "muted", text: " (would fail the update)"})
              : null)},
          {label: "Message", class: "reason", cell: (v) => v.message || ""},
          {label: "Duration", class: "number", cell: (v) => (v.duration_ms === undefined
            ? "—" : `${v.duration_ms} ms`)},
        ]}),
    ];
  }

  function renderError(error, texts, fileName) {
    const parts = [errorBox(error, "Kiln refused this update.")];
    const where = error.status === 400 ? locate(error.detail) : null;
    const text = where && (where.file === "environment" ? texts.environment
      : texts.template);
    if (where && text !== undefined) {
      const label = where.file === "environment" ? "Environment file" : fileName;
      parts.push(h("p", {}, `${label}, line ${where.line}:`),
        sourceView(text, {marks: new Map([[where.line, "src-line--failed src-line--target"]]),
          label: `${label} as uploaded`, id: "preview-source"}));
      window.setTimeout(() => {
        const line = document.querySelector(`#preview-source [data-line="${where.line}"]`);
        if (line) line.scrollIntoView({block: "center"});
      }, 0);
    }
    return parts;
  }

  return {element, refresh() {}};
}
