// The stack's section "Outputs": resolved through the stack show on every poll while the
// section is shown, since an output can change with no change of the stack's status (an
// attribute known only later); the server keeps what it resolved until the resources
// the outputs read change (specs/live-outputs.rst).

import * as api from "./api.js";
import {h, errorBox, table, renderIfChanged} from "./dom.js";

export function create(ctx) {
  const problems = h("div");
  const list = h("div", {id: "output-list"});
  const element = h("section", {}, h("h2", {text: "Outputs"}), problems, list);

  async function refresh() {
    let outputs;
    try {
      outputs = (await api.get(ctx.path())).stack.outputs || [];
    } catch (error) {
      problems.replaceChildren(errorBox(error, "The outputs could not be read."));
      return;
    }
    problems.replaceChildren();
    outputs.sort((a, b) => a.output_key.localeCompare(b.output_key));
    renderIfChanged(list, outputs, () => table({
      caption: "Outputs", rows: outputs, empty: "The template has no outputs.",
      columns: [
        {label: "Output", cell: (o) => o.output_key},
        {label: "Value", cell: (o) => (o.output_error
          ? h("span", {class: "status status--failed"},
            h("span", {class: "glyph", "aria-hidden": "true", text: "✖"}),
            ` Error: ${o.output_error}`)
          : h("pre", {class: "value", text: typeof o.output_value === "string"
            ? o.output_value : JSON.stringify(o.output_value, null, 2)}))},
        {label: "Description", cell: (o) => o.description || ""},
      ]}));
  }

  return {element, refresh};
}
