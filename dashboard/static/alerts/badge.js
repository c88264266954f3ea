// The nav badge (open alerts) and the toasts for newly opened alerts, on every page.
//
// Socket /ws/alerts/ (dashboard/alerts/consumers.py) sends {"type": "alerts.update",
// "counts": {"open", "acknowledged"}, "opened": [{id, rule, severity, state, summary,
// url}], "resolved": [...]} on connect (nothing opened) and after every change. Messages
// are hints: each carries the current counts, so the badge is simply set from the latest
// one; a reconnect gets the counts again at once. Plain script, no modules.
(function () {
  "use strict";

  // Reconnect backoff doubles from 0.5 s to 10 s, as on the live pages (live_socket.js).
  const BACKOFF_MIN_MS = 500;
  const BACKOFF_MAX_MS = 10000;
  // Long enough to read a one-line summary and click it; short enough not to pile up.
  const TOAST_MS = 10000;
  // Toasts push the page down while shown (they never cover it: alerts.css), so few at
  // once: more than three is a storm; the oldest go, the badge still says how many.
  const MAX_TOASTS = 3;

  const badge = document.getElementById("alerts-badge");
  const toasts = document.getElementById("alert-toasts");
  if (!badge || !toasts || !window.WebSocket) return;

  function setCount(open) {
    const n = Number(open) || 0;
    badge.textContent = String(n);
    badge.dataset.count = String(n);
  }

  function toast(alert) {
    const box = document.createElement("div");
    box.className = "alert-toast severity-" + String(alert.severity || "warning");
    box.dataset.alertId = String(alert.id);
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

  function onMessage(event) {
    let message;
    try { message = JSON.parse(event.data); } catch (e) { return; }
    if (!message || message.type !== "alerts.update") return;
    if (message.counts) setCount(message.counts.open);
    (message.opened || []).forEach(toast);
  }

  let backoffMs = BACKOFF_MIN_MS;
  let stopped = false;
  let retryTimer = null;
  let socket = null;

  function open() {
    if (stopped) return;
    const scheme = location.protocol === "https:" ? "wss://" : "ws://";
    const ws = new WebSocket(scheme + location.host + toasts.dataset.socketPath);
    socket = ws;
    ws.onmessage = function (event) {
      backoffMs = BACKOFF_MIN_MS;  // only a socket that delivers resets the backoff
      toasts.dataset.live = "1";
      onMessage(event);
    };
    ws.onclose = function () {
      toasts.dataset.live = "";
      if (socket === ws) socket = null;
      if (stopped) return;
      clearTimeout(retryTimer);
      retryTimer = setTimeout(open, backoffMs);
      backoffMs = Math.min(backoffMs * 2, BACKOFF_MAX_MS);
    };
  }

  window.addEventListener("pagehide", function () {
    stopped = true;
    clearTimeout(retryTimer);
    if (socket) socket.close();
  });
  window.addEventListener("pageshow", function (event) {
    if (!event.persisted) return;  // back from the bfcache: the socket is gone
    stopped = false;
    backoffMs = BACKOFF_MIN_MS;
    open();
  });
  open();
})();
