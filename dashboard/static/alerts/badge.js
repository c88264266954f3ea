// The nav badge (open alerts) and the toasts for newly opened alerts, on every page.
//
// Socket /ws/alerts/ (dashboard/alerts/consumers.py) sends {"type": "alerts.update",
// "counts": {"open", "acknowledged"}, "opened": [{id, rule, severity, state, summary,
// url, count}], "resolved": [...]} on connect (nothing opened) and after every change;
// "opened" has one entry per group notification (rule, topic, group), not per alert.
// Messages are hints: each carries the current counts, so the badge is simply set from
// the latest one; a reconnect gets the counts again at once. The socket, its reconnects
// and the back/forward cache are live_socket.js's (loaded before this by base.html).
// Plain script, no modules.
(function () {
  "use strict";

  // Long enough to read a one-line summary and click it; short enough not to pile up.
  const TOAST_MS = 10000;
  // Toasts push the page down while shown (they never cover it: alerts.css), so few at
  // once: more than three is a storm; the oldest go, the badge still says how many.
  const MAX_TOASTS = 3;

  const badge = document.getElementById("alerts-badge");
  const toasts = document.getElementById("alert-toasts");
  if (!badge || !toasts || !window.LockstepLive) return;

  function setCount(open) {
    const n = Number(open) || 0;
    badge.textContent = String(n);
    badge.dataset.count = String(n);
  }

  function toast(alert) {
    const box = document.createElement("div");
    box.className = "alert-toast severity-" + String(alert.severity || "warning");
    box.dataset.alertId = String(alert.id);
    // One toast per group notification: how many alerts it tells of (its summary names
    // the group and the first of them, its link the list filtered to the group).
    box.dataset.count = String(alert.count || 1);
    box.setAttribute("role", "status");
    const head = document.createElement("strong");
    head.textContent = String(alert.severity || "alert") + " · " + String(alert.rule || "");
    const link = document.createElement("a");
    link.className = "summary";
    link.href = alert.url || "#";
    link.textContent = String(alert.summary || "");
    const close = document.createElement("button");
    close.type = "button";
    close.className = "close";
    close.setAttribute("aria-label", "dismiss");
    close.textContent = "×";
    close.addEventListener("click", function () { box.remove(); });
    box.append(close, head, link);
    toasts.append(box);
    while (toasts.children.length > MAX_TOASTS) toasts.firstElementChild.remove();
    setTimeout(function () { box.remove(); }, TOAST_MS);
  }

  function onMessage(message) {
    toasts.dataset.live = "1";
    if (message.counts) setCount(message.counts.open);
    (message.opened || []).forEach(toast);
  }

  LockstepLive.connect({
    path: toasts.dataset.socketPath,
    type: "alerts.update",
    sequenced: false,  // each message carries the whole counts: nothing to re-read
    closeOnPagehide: true,
    reopenOnPageshow: true,
    onMessage: onMessage,
    onClose: function () { toasts.dataset.live = ""; },
  });
})();
