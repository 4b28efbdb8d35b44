// The approval gate the stack's operation is parked at (GET .../approval), with Approve
// and Reject for a tenant admin (POST .../approval). Rebuilt only when the gate or its
// decision changes, so a comment being typed survives the polls.

import * as api from "./api.js";
import {h, errorBox, time, age, announce} from "./dom.js";

export function createApproval(ctx) {
  const element = h("section", {class: "approval", id: "approval",
    "aria-labelledby": "approval-title", hidden: true});
  let shownKey = null;

  function update(approval) {
    const key = approval ? `${approval.operation_id}|${approval.decision}` : null;
    if (key === shownKey) return;
    shownKey = key;
    element.hidden = !approval;
    element.replaceChildren(...(approval ? render(approval) : []));
  }

  function render(approval) {
    const decided = Boolean(approval.decision);
    const parts = [
      h("h2", {id: "approval-title"},
        h("span", {class: "glyph", "aria-hidden": "true", text: decided ? "✔" : "‖"}), " ",
        decided ? `Approval ${approval.decision}: waiting for a worker to go on`
          : `Waiting for approval of the ${approval.action}`),
      h("p", {class: "approval-message"}, h("strong", {text: `${approval.plugin}: `}),
        approval.message || ""),
      h("dl", {class: "facts"},
        h("dt", {text: "Requested"}), h("dd", {}, time(approval.requested_at)),
        h("dt", {text: "Rejected if not approved by"}),
        h("dd", {}, time(approval.expires_at), ` (${age(approval.expires_at)})`),
        h("dt", {text: "Operation"}), h("dd", {}, h("code", {text: approval.operation_id}))),
    ];
    if (approval.override) {
      parts.push(h("p", {class: "warning", text: "Approving overrides a soft-mandatory "
        + "policy refusal; it is recorded as an override."}));
    }
    if (decided) {
      parts.push(h("p", {class: "decision"}, `${approval.decision} by `
        + `${approval.decided_by || "?"}`, approval.comment ? `: ${approval.comment}` : ""));
    } else if (ctx.who.is_admin) {
      parts.push(decisionForm(approval));
    } else {
      parts.push(h("p", {class: "help", text: "A token of this tenant with the admin role "
        + "can approve or reject it (here, through the API or kiln-manage)."}));
    }
    return parts;
  }

  // A handler per button: the decision sent is the button pressed, and nothing else (no
  // form submission, so no Enter or script sends one the user did not choose).
  function decisionForm() {
    const comment = h("textarea", {id: "approval-comment", name: "comment", rows: "2",
      maxlength: "1000"});
    const problems = h("div", {id: "approval-problems"});
    const approve = h("button", {type: "button", id: "approve", text: "Approve",
      onclick: () => decide("approve")});
    const reject = h("button", {type: "button", id: "reject", class: "danger",
      text: "Reject", onclick: () => decide("reject")});
    const form = h("form", {class: "approval-form"},
      h("div", {class: "field"}, h("label", {for: "approval-comment",
        text: "Comment (optional, recorded with the decision)"}), comment),
      problems, h("div", {class: "actions"}, approve, reject));
    form.addEventListener("submit", (event) => event.preventDefault());

    async function decide(decision) {
      problems.replaceChildren();
      approve.disabled = reject.disabled = true;
      try {
        await api.request(ctx.path("approval"), {method: "POST",
          body: {decision, comment: comment.value}});
        announce(`Operation ${decision === "approve" ? "approved" : "rejected"}.`);
        ctx.refresh();
      } catch (error) {
        problems.append(errorBox(error, `The ${decision} was not taken.`));
        approve.disabled = reject.disabled = false;
      }
    }
    return form;
  }

  return {element, update};
}
