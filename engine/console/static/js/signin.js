// #/signin: paste a token; GET /v1/session says whose it is.

import * as api from "./api.js";
import * as session from "./session.js";
import {h, errorBox} from "./dom.js";

export function mount(main, route, who, {afterSignIn}) {
  document.title = "Sign in — Kiln";
  const notice = session.takeNotice();
  const input = h("input", {id: "token", name: "token", type: "password", required: true,
    autocomplete: "off", spellcheck: "false", "aria-describedby": "token-help"});
  const problems = h("div", {id: "signin-problems"});
  const button = h("button", {type: "submit", text: "Sign in"});
  const form = h("form", {class: "signin", novalidate: true},
    h("div", {class: "field"},
      h("label", {for: "token", text: "Token"}), input,
      h("p", {id: "token-help", class: "help",
        text: "A token from “kiln-manage token create”. It is kept in this browser tab "
          + "only, and forgotten when the tab closes or you sign out."})),
    problems, h("div", {class: "actions"}, button));
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    problems.replaceChildren();
    const secret = input.value.trim();
    if (!secret) {
      problems.append(errorBox("Paste a token first."));
      input.focus();
      return;
    }
    button.disabled = true;
    try {
      const answer = await api.request("/v1/session", {secret, signInOn401: false});
      session.signIn(secret, answer.session);
      afterSignIn();
    } catch (error) {
      problems.append(errorBox(error, "That token cannot sign in."));
      input.focus();
    } finally {
      button.disabled = false;
    }
  });
  main.append(...[h("h1", {text: "Sign in to Kiln"}),
    notice ? h("p", {class: "notice", role: "status", text: notice}) : null,
    who ? h("p", {class: "notice"}, `Signed in already as ${who.tenant_name || who.tenant_id}`
      + ` (${who.role}). `, h("a", {href: "#/stacks", text: "Go to the stacks"}),
    ", or sign in with another token.") : null,
    form].filter(Boolean));
  if (!who) input.focus();
  return {};
}
