// The stack's section "Parameters": as the stack show returns them. Hidden parameters
// come masked from the API and are shown masked; there is nothing here to unmask them.

import {h, table, renderIfChanged} from "./dom.js";

export function create(ctx) {
  const list = h("div", {id: "parameter-list"});
  const element = h("section", {}, h("h2", {text: "Parameters"}),
    h("p", {class: "help", text: "Hidden parameters are masked by Kiln (******). "
      + "OS:: parameters are the ones every stack has."}), list);

  function refresh() {
    const stack = ctx.stack();
    if (!stack) return;
    const rows = Object.entries(stack.parameters || {}).sort(([a], [b]) =>
      (a.startsWith("OS::") - b.startsWith("OS::")) || a.localeCompare(b));
    renderIfChanged(list, rows, () => table({
      caption: "Parameters", rows, empty: "The stack has no parameters.",
      columns: [
        {label: "Parameter", cell: ([name]) => name},
        {label: "Value", cell: ([, value]) => h("code", {class: "value",
          text: typeof value === "string" ? value : JSON.stringify(value)})},
      ]}));
  }

  return {element, refresh};
}
