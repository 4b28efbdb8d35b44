// Hash routes, so that a reload or a shared link lands on the same page:
//   #/signin  #/stacks  #/stacks/{tenant_id}/{name}/{id}[/{section}]
//   #/operator/operations  #/operator/workers  #/operator/plugins

export const STACK_SECTIONS = ["graph", "resources", "events", "outputs", "parameters",
  "template", "lifecycle", "preview"];

/** The route of a location hash, or null for a hash that is no route (an anchor). */
export function parse(hash) {
  const raw = hash.startsWith("#") ? hash.slice(1) : hash;
  if (raw === "") return {name: "home", query: new URLSearchParams()};
  if (!raw.startsWith("/")) return null;
  const mark = raw.indexOf("?");
  const path = mark < 0 ? raw : raw.slice(0, mark);
  const query = new URLSearchParams(mark < 0 ? "" : raw.slice(mark + 1));
  let segments;
  try {
    segments = path.split("/").filter(Boolean).map(decodeURIComponent);
  } catch {
    return {name: "unknown", query};
  }
  const [first, ...rest] = segments;
  if (!first) return {name: "home", query};
  if (first === "signin" && !rest.length) return {name: "signin", query};
  if (first === "stacks" && !rest.length) return {name: "stacks", query};
  if (first === "stacks" && (rest.length === 3 || rest.length === 4)) {
    const [tenant, stackName, id, section = "graph"] = rest;
    if (STACK_SECTIONS.includes(section)) {
      return {name: "stack", tenant, stackName, id, section, query};
    }
  }
  if (first === "operator" && rest.length === 1 &&
      ["operations", "workers", "plugins"].includes(rest[0])) {
    return {name: rest[0], query};
  }
  return {name: "unknown", query};
}

export function stackHref(tenant, name, id, section, query) {
  const path = ["#/stacks", tenant, name, id].map((s, i) => (i ? encodeURIComponent(s) : s));
  if (section && section !== "graph") path.push(section);
  const search = query ? new URLSearchParams(query).toString() : "";
  return path.join("/") + (search ? `?${search}` : "");
}

export function stacksHref(query) {
  const search = query ? new URLSearchParams(query).toString() : "";
  return `#/stacks${search ? `?${search}` : ""}`;
}
