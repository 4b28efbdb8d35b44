// The signed-in token and who it is, kept in this tab's sessionStorage only: gone when
// the tab closes, never a cookie (so no other site can make the browser send it).

const TOKEN = "kiln.token";
const WHO = "kiln.session";
const NOTICE = "kiln.notice";
const NEXT = "kiln.next";

export function token() {
  return sessionStorage.getItem(TOKEN);
}

/** The GET /v1/session answer: {tenant_id, tenant_name, role, token_id, is_admin}. */
export function current() {
  const text = sessionStorage.getItem(WHO);
  if (!text || !token()) return null;
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}

export function signIn(secret, who) {
  sessionStorage.setItem(TOKEN, secret);
  sessionStorage.setItem(WHO, JSON.stringify(who));
}

export function signOut(notice) {
  sessionStorage.removeItem(TOKEN);
  sessionStorage.removeItem(WHO);
  if (notice) sessionStorage.setItem(NOTICE, notice);
}

/** A message for the sign-in page (why the user is there), read once. */
export function takeNotice() {
  const notice = sessionStorage.getItem(NOTICE);
  sessionStorage.removeItem(NOTICE);
  return notice;
}

/** Where to go once signed in (the page the user asked for). */
export function rememberPage(hash) {
  if (hash && hash !== "#/signin") sessionStorage.setItem(NEXT, hash);
}

export function takePage() {
  const hash = sessionStorage.getItem(NEXT);
  sessionStorage.removeItem(NEXT);
  return hash;
}
