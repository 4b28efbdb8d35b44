// The console's entry point: the header (navigation, who is signed in), the router and
// the page on show. Each page is a module exporting
//   mount(main, route, who) -> {update?(route), unmount?()}
// where update() takes a route of the same page (another tab, other filters) without
// rebuilding it.

import * as session from "./session.js";
import {parse} from "./router.js";
import {h} from "./dom.js";
import * as signin from "./signin.js";
import * as stacks from "./stacks.js";
import * as stack from "./stack.js";
import * as operations from "./operator_operations.js";
import * as workers from "./operator_workers.js";
import * as plugins from "./operator_plugins.js";

const PAGES = {signin, stacks, stack, operations, workers, plugins, unknown: {mount: notFound}};

let shown = null; // {key, page}

function pageKey(route) {
  return route.name === "stack" ? `stack:${route.tenant}/${route.stackName}/${route.id}`
    : route.name;
}

function show() {
  const route = parse(window.location.hash);
  if (!route) return; // an in-page anchor such as the skip link's: not a route
  const who = session.current();
  if (route.name === "home") {
    window.location.replace(who ? "#/stacks" : "#/signin");
    return;
  }
  if (!who && route.name !== "signin") {
    session.rememberPage(window.location.hash);
    window.location.replace("#/signin");
    return;
  }
  header(who, route);
  const key = pageKey(route);
  if (shown && shown.key === key && shown.page.update) {
    shown.page.update(route);
    return;
  }
  if (shown && shown.page.unmount) shown.page.unmount();
  const main = document.getElementById("main");
  main.replaceChildren();
  delete main.dataset.pollMs;
  const first = shown === null;
  const page = PAGES[route.name].mount(main, route, who, {afterSignIn}) || {};
  shown = {key, page};
  if (!first) {
    // Focus goes to the new page's heading, as a page load would put the reader there.
    const heading = main.querySelector("h1");
    if (heading) {
      heading.setAttribute("tabindex", "-1");
      heading.focus({preventScroll: false});
    }
  }
}

function afterSignIn() {
  window.location.hash = session.takePage() || "#/stacks";
}

function header(who, route) {
  const nav = document.getElementById("main-nav");
  const whoBox = document.getElementById("who");
  nav.hidden = !who;
  whoBox.hidden = !who;
  for (const item of nav.querySelectorAll(".operator-only")) item.hidden = !(who && who.is_admin);
  const section = route.name === "stack" ? "stacks" : route.name;
  for (const link of nav.querySelectorAll("a[data-section]")) {
    if (link.dataset.section === section) link.setAttribute("aria-current", "page");
    else link.removeAttribute("aria-current");
  }
  if (who) {
    document.getElementById("who-text").textContent =
      `${who.tenant_name || who.tenant_id} (${who.role})`;
  }
}

function notFound(main) {
  document.title = "Not found — Kiln";
  main.append(h("h1", {text: "No such page"}),
    h("p", {}, "The console has no page at this address. ",
      h("a", {href: "#/stacks", text: "Go to the stacks."})));
  return {};
}

document.getElementById("sign-out").addEventListener("click", () => {
  session.signOut();
  window.location.hash = "#/signin";
});
document.getElementById("skip-link").addEventListener("click", (event) => {
  event.preventDefault();
  document.getElementById("main").focus();
});
window.addEventListener("hashchange", show);
show();
