// The one way the console talks to Kiln: fetch with the token, JSON in and out, Heat's
// error bodies turned into ApiError with a readable message.

import * as session from "./session.js";

export class ApiError extends Error {
  /**
   * @param {number} status HTTP status (0: Kiln could not be reached)
   * @param {object|null} body Heat's fault body {code, title, explanation, error}
   */
  constructor(status, body, fallback) {
    const error = (body && body.error) || {};
    const message = error.message || (body && body.message) || fallback || "";
    super(message);
    this.status = status;
    this.title = (body && body.title) || (status ? `HTTP ${status}` : "No answer");
    this.explanation = (body && body.explanation) || "";
    this.type = error.type || "";
    this.detail = message;
  }

  /** One line: "Not Found (404): The Stack (x) could not be found." */
  summary() {
    const head = this.status ? `${this.title} (${this.status})` : this.title;
    return this.detail ? `${head}: ${this.detail}` : head;
  }
}

/** The path of a tenant's resource, each segment escaped: tenantPath(t, "stacks", n). */
export function tenantPath(tenantId, ...segments) {
  return ["/v1", tenantId, ...segments].map((s, i) => (i ? encodeURIComponent(s) : s))
    .join("/");
}

/**
 * A request to the API. Answers the parsed JSON (null for an empty body); throws
 * ApiError. A 401 signs the tab out and returns to the sign-in page, unless
 * `signInOn401` is false (the sign-in page's own check).
 */
export async function request(path, {method = "GET", query, body, secret,
  signInOn401 = true} = {}) {
  const url = new URL(path, window.location.origin);
  for (const [key, value] of Object.entries(query || {})) {
    if (value === undefined || value === null || value === "") continue;
    for (const item of Array.isArray(value) ? value : [value]) {
      url.searchParams.append(key, String(item));
    }
  }
  const headers = {Accept: "application/json"};
  const tokenValue = secret || session.token();
  if (tokenValue) headers["X-Auth-Token"] = tokenValue;
  const init = {method, headers, cache: "no-store", credentials: "omit",
    redirect: "follow"};
  if (body !== undefined) {
    headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  let response;
  try {
    response = await fetch(url, init);
  } catch (err) {
    throw new ApiError(0, null, `Kiln could not be reached (${err.message}).`);
  }
  const parsed = await parseBody(response);
  if (response.ok) return parsed;
  if (response.status === 401 && signInOn401) {
    session.signOut("Your token was refused (expired or revoked?): sign in again.");
    session.rememberPage(window.location.hash);
    window.location.hash = "#/signin";
  }
  throw new ApiError(response.status, parsed && typeof parsed === "object" ? parsed : null,
    response.statusText);
}

async function parseBody(response) {
  if (response.status === 204) return null;
  const type = response.headers.get("Content-Type") || "";
  if (!type.includes("json")) return null;
  try {
    return await response.json();
  } catch {
    return null;
  }
}

export const get = (path, query, options = {}) => request(path, {...options, query});
