// The stack's section "Events": its events as a timeline, newest first.

import * as api from "./api.js";
import {h, errorBox, statusBadge, time, verdictBadge, renderIfChanged} from "./dom.js";

const LIMIT = 200;

export function create(ctx) {
  const problems = h("div");
  const timeline = h("div", {id: "event-timeline"});
  const element = h("section", {}, h("h2", {text: "Events"}),
    h("p", {class: "help", text: `Newest first; the latest ${LIMIT}.`}), problems, timeline);

  async function refresh() {
    let events;
    try {
      events = (await api.get(ctx.path("events"),
        {sort_dir: "desc", limit: String(LIMIT)})).events;
    } catch (error) {
      problems.replaceChildren(errorBox(error, "The events could not be listed."));
      return;
    }
    problems.replaceChildren();
    renderIfChanged(timeline, events, () => (events.length ? h("ol", {class: "timeline"},
      events.map((e) => h("li", {class: `event${e.resource_status.endsWith("FAILED")
        ? " event--failed" : ""}`},
      h("div", {class: "event-head"}, time(e.event_time), " ",
        h("strong", {class: "event-resource", text: e.resource_name}), " ",
        statusBadge(e.resource_status),
        e.lifecycle ? [" ", h("span", {class: "muted", text: `${e.lifecycle.plugin} `
          + `${e.lifecycle.phase}-op:`}), " ", verdictBadge(e.lifecycle.verdict)] : null),
      e.resource_status_reason ? h("p", {class: "event-reason",
        text: e.resource_status_reason}) : null))) : h("p", {class: "empty",
      text: "No events yet."})));
  }

  return {element, refresh};
}
