// Snapshot pages (consumer group, consumers, message lookup): keep them current by
// re-reading the page itself every few seconds and swapping its live regions.
//
// The server renders every region from the same data as the page's JSON twin, so the
// markup lives in one place (the template). A region is an element with
// [data-live-region] and an id; the page root (.live-page) says how often to refresh
// (data-refresh-ms). Refreshing stops while the tab is hidden and when the session ended.
(function () {
  "use strict";

  const root = document.querySelector(".live-page");
  if (!root) return;

  // Below a second the page would re-render faster than an operator can read it.
  const MIN_INTERVAL_MS = 1000;
  const interval = Math.max(MIN_INTERVAL_MS, Number(root.dataset.refreshMs) || 2000);
  const statusEl = document.getElementById("live-status");
  const statusLabel = statusEl ? statusEl.querySelector(".label") : null;
  const updatedEl = document.getElementById("updated-at");
  let refreshes = 0;
  let timer = null;
  let busy = false;

  function setState(state, text) {
    if (!statusEl) return;
    statusEl.dataset.state = state;
    statusLabel.textContent = text;
  }

  function signedOut(loginUrl) {
    clearInterval(timer);
    setState("signed-out", "");
    const link = document.createElement("a");
    link.href = loginUrl;
    link.textContent = "signed out — log in again";
    statusLabel.replaceChildren(link);
  }

  function swap(html) {
    const fresh = new DOMParser().parseFromString(html, "text/html");
    for (const region of document.querySelectorAll("[data-live-region][id]")) {
      const next = fresh.getElementById(region.id);
      if (next) region.replaceChildren(...next.childNodes);
    }
    const stamp = fresh.getElementById("updated-at");
    if (stamp && updatedEl) {
      updatedEl.textContent = stamp.textContent;
      updatedEl.dataset.value = stamp.dataset.value || "";
    }
  }

  function refresh() {
    if (busy || document.hidden) return;
    busy = true;
    fetch(location.href, { credentials: "same-origin", cache: "no-store" })
      .then(function (response) {
        // A session that ended is redirected to the login form.
        if (response.redirected && new URL(response.url).pathname.indexOf("/login/") === 0) {
          signedOut(response.url);
          return null;
        }
        if (!response.ok) throw new Error("page answered " + response.status);
        return response.text();
      })
      .then(function (html) {
        if (html === null) return;
        swap(html);
        refreshes += 1;
        root.dataset.refreshes = String(refreshes);
        setState("live", "live");
      })
      .catch(function () { setState("reconnecting", "reconnecting"); })
      .finally(function () { busy = false; });
  }

  timer = setInterval(refresh, interval);
  document.addEventListener("visibilitychange", function () { if (!document.hidden) refresh(); });
})();
