// #/operator/workers (admin only): the workers kiln-manage worker list shows, with
// their heartbeats and the steps they hold.

import {h, time, age, table, yesNo, formatValue} from "./dom.js";
import {operatorPage, shortId} from "./operator.js";

export function mount(main, route, who) {
  const page = operatorPage(main, who, {
    title: "Workers",
    intro: "The engine workers (kiln-manage worker list): a worker whose heartbeat "
      + "stopped is not alive, and the steps it held go to another.",
    resource: "workers",
    busy: (answer) => answer.workers.some((w) => w.steps_held),
    render: (answer) => table({
      caption: "Workers", rows: answer.workers, empty: "No workers.",
      rowClass: (w) => (w.alive ? null : "row--muted"),
      columns: [
        {label: "Worker", cell: (w) => shortId(w.id)},
        {label: "Host", cell: (w) => w.host},
        {label: "PID", class: "number", cell: (w) => formatValue(w.pid)},
        {label: "Alive", cell: (w) => yesNo(w.alive, "alive", "not alive")},
        {label: "Heartbeat", cell: (w) => h("span", {}, age(w.heartbeat_at), " (",
          time(w.heartbeat_at), ")")},
        {label: "Steps held", class: "number", cell: (w) => formatValue(w.steps_held)},
        {label: "Started", cell: (w) => time(w.started_at)},
        {label: "Stopped", cell: (w) => time(w.stopped_at)},
      ]}),
  });
  return {unmount: page.unmount};
}
