// What the operator pages share: the admin-only read, its 403 shown as the API gave it,
// and the live refresh.

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
      problems.replaceChildren(errorBox(error, error.status === 403
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

/** The list in an answer: {"operations": [...]} -> [...]. */
export function listOf(answer, key) {
  if (Array.isArray(answer[key])) return answer[key];
  const lists = Object.values(answer).filter(Array.isArray);
  return lists.length ? lists[0] : [];
}

/** A short id for a table cell (the whole one in its title). */
export function shortId(id) {
  return id ? h("code", {class: "short-id", title: id, text: String(id).slice(0, 8)}) : "—";
}
