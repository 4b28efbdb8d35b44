// What the operator pages share: the admin-only read, its 403 shown as the API gave it
// (once: a member's token will not become an admin's, so the polling stops there), and
// the live refresh.

import * as api from "./api.js";
import {h, errorBox, renderIfChanged} from "./dom.js";
import {Poller, FAST_MS, SLOW_MS} from "./poller.js";

/**
 * An operator page: a heading, an intro, optional controls and a body rendered from one
 * GET of the session's tenant (`resource` under /v1/{tenant_id}/), polled fast while
 * `busy(answer)`. Answers {unmount, poller}.
 */
export function operatorPage(main, who, {title, intro, resource, query = () => ({}),
  render, busy = () => false, controls = null}) {
  document.title = `${title} — Kiln`;
  const problems = h("div", {id: "operator-problems"});
  const body = h("div", {id: "operator-body"});
  main.append(...[h("h1", {text: title}), h("p", {class: "help", text: intro}), controls,
    problems, body].filter(Boolean));
  let answer = null;

  async function tick() {
    try {
      answer = await api.get(api.tenantPath(who.tenant_id, resource), query());
    } catch (error) {
      answer = null;
      body.replaceChildren();
      delete body.dataset.signature;
      const forbidden = error.status === 403;
      if (forbidden) poller.stop();
      problems.replaceChildren(errorBox(error, forbidden
        ? "This page is for operators (a token with the admin role)."
        : `The ${title.toLowerCase()} could not be read.`));
      return;
    }
    problems.replaceChildren();
    renderIfChanged(body, answer, render);
  }

  const poller = new Poller(tick, () => (answer && busy(answer) ? FAST_MS : SLOW_MS));
  poller.start();
  return {poller, unmount: () => poller.stop()};
}

/** A short id for a table cell (the whole one in its title). */
export function shortId(id) {
  return id ? h("code", {class: "short-id", title: id, text: String(id).slice(0, 8)}) : "—";
}
