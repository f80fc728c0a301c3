// The page's read token (the job's, or the portal's), kept per origin. The
// link tony prints brings it in the URL's fragment (#token=T: the server
// moved it there; no browser sends a fragment to any server); it goes into
// sessionStorage, which no page of another origin -- another port of this
// host included -- can read, and leaves the address bar. The page's own
// requests send it as the X-Tony-Token header. No cookie holds it: a
// browser sends a host's cookies to every port of the host, so to any
// other user's server there (docs/security.md).
"use strict";

const tonyToken = (() => {
  const KEY = "tony_token";
  let token = "";
  try { token = sessionStorage.getItem(KEY) || ""; } catch (e) { /* storage off: this load only */ }
  // #token=T, or #token=T&<the page's own fragment> (the portal's #/jobs/<id>)
  const m = location.hash.match(/^#token=([^&]*)(?:&(.*))?$/);
  if (m) {
    token = decodeURIComponent(m[1]);
    try { sessionStorage.setItem(KEY, token); } catch (e) { /* kept for this load */ }
    history.replaceState(history.state, "", location.pathname + location.search + (m[2] ? "#" + m[2] : ""));
  }
  return token;
})();

// fetch, with the token.
function tonyFetch(url, opts = {}) {
  const headers = Object.assign({}, opts.headers || {});
  if (tonyToken) headers["X-Tony-Token"] = tonyToken;
  return fetch(url, Object.assign({}, opts, { headers }));
}

// A link the reader opens in a tab of its own (a task's stacks, a log):
// no script of ours runs there to send the header, so the token goes in
// its query, to this page's own server only.
function tonyLink(url) {
  if (!tonyToken || /^[a-z]+:\/\//i.test(url)) return url;
  return url + (url.includes("?") ? "&" : "?") + "token=" + encodeURIComponent(tonyToken);
}
