// Event feed: new events at the top, live, filterable, pausable.
//
// GET /api/v1/events?<filters>&after=<last stream ID shown> is the source of truth: the
// page asks it every second (at once again while it answers has_more), so no event is
// skipped whatever the rate. The /ws/events/ socket, when there, only hints that events
// up to some ID were stored, so the page asks sooner. Paused, the page asks nothing; on
// resume it catches up from where it stopped. The socket and the status indicator are
// live_socket.js's.
(function () {
  "use strict";

  const root = document.getElementById("feed");
  if (!root) return;

  // The feed is read this often whatever the socket does: a second is live to a reader.
  const POLL_MS = 1000;
  // The table keeps the newest rows only: a browser tab left open on a busy feed must not
  // grow without bound.
  const MAX_ROWS = 500;
  // A missing hint socket is retried slowly: polling already keeps the feed live.
  const SOCKET_RETRY_MS = 10000;

  // Written every few seconds for every queue: never tinted when they arrive (and
  // hidden unless the "periodic samples" box is ticked), so new events that matter stand
  // out.
  const PERIODIC = new Set((root.dataset.periodicTypes || "").split(",").filter(Boolean));
  const apiUrl = root.dataset.apiUrl;
  const form = document.getElementById("feed-filters");
  const rowsEl = document.getElementById("event-rows");
  const emptyEl = document.getElementById("feed-empty");
  const countEl = document.getElementById("feed-count");
  const toggle = document.getElementById("feed-toggle");
  const status = LockstepLive.status(document.getElementById("live-status"));
  let lastId = root.dataset.lastId || "";
  let paused = false;
  let inFlight = false;
  // A filter change asks for a fresh list: if a read is in flight it is made right after,
  // and answers to reads made under older filters are dropped (they would bring back
  // unfiltered rows and an old cursor).
  let generation = 0;
  let replacePending = false;
  let signedOut = false;
  let hints = null; // the hint socket (LockstepLive.connect)

  function filters() {
    const params = new URLSearchParams();
    for (const [name, value] of new FormData(form)) {
      if (String(value).trim() !== "") params.set(name, String(value).trim());
    }
    return params;
  }

  function cell(className, text) {
    const td = document.createElement("td");
    if (className) td.className = className;
    td.textContent = text === null || text === undefined ? "" : String(text);
    return td;
  }

  // `arrived`: the row came with a live read (not a fresh list): tinted for a moment,
  // unless it is a periodic sample.
  function row(e, arrived) {
    const tr = document.createElement("tr");
    tr.className = arrived && !PERIODIC.has(e.type) ? "event-row fresh" : "event-row";
    tr.dataset.id = e.id;
    tr.dataset.type = e.type;
    const when = cell("when mono");
    when.append(LockstepTime.element(e.ts_ms || Date.parse(e.ts), "ms"));
    const type = cell("");
    const badge = document.createElement("span");
    badge.className = "badge type-" + e.type;
    badge.textContent = e.type;
    type.append(badge);
    let details = JSON.stringify(e.details || {});
    if (details.length > 300) details = details.slice(0, 299) + "…";
    tr.append(when, type, cell("", e.topic), cell("", e.group), cell("num", e.queue),
      cell("mono", e.key), cell("num", e.token), cell("mono consumer", e.consumer),
      cell("details mono", details));
    return tr;
  }

  function show(events, replace) {
    if (replace) rowsEl.replaceChildren();
    for (const e of events) {
      if (rowsEl.querySelector('tr[data-id="' + CSS.escape(e.id) + '"]')) continue;
      rowsEl.prepend(row(e, !replace));
    }
    while (rowsEl.rows.length > MAX_ROWS) rowsEl.deleteRow(-1);
    countEl.textContent = String(rowsEl.rows.length);
    emptyEl.hidden = rowsEl.rows.length > 0;
  }

  function poll(replace) {
    if (replace) replacePending = true;
    if (paused && !replacePending) {
      // Counted so that a reader (a test) can tell a read skipped from a read not due yet.
      root.dataset.skipped = String(Number(root.dataset.skipped || 0) + 1);
      return;
    }
    if (inFlight || signedOut) return;
    inFlight = true;
    const asked = generation;
    const replacing = replacePending;
    replacePending = false;
    const params = filters();
    // The page's default, which its URL leaves out: the JSON feed's is to show them.
    if (!params.has("periodic")) params.set("periodic", "hide");
    if (lastId && !replacing) params.set("after", lastId);
    params.set("limit", "500");
    LockstepLive.fetchJson(apiUrl + "?" + params.toString(), "events", function () {
      signedOut = true;
      if (hints) hints.stop();
      status.signedOut(root.dataset.loginUrl);
    })
      .then(function (data) {
        if (!data || asked !== generation) return;
        // Paused while this read was on its way: the list stays as it was at the click.
        // lastId has not moved, so the first read after resuming brings these events.
        if (paused && !replacing) return;
        // A cursor the server no longer stores (pruned): start the list over.
        show(data.events, replacing || !data.cursor_found);
        lastId = data.last_id || lastId;
        root.dataset.lastId = lastId;
        root.dataset.polls = String(Number(root.dataset.polls || 0) + 1);
        if (!paused) status.set("live", "live");
        if (data.has_more) setTimeout(function () { poll(false); }, 0);
      })
      .catch(function () { status.set("reconnecting", "reconnecting"); })
      .finally(function () {
        inFlight = false;
        if (replacePending) poll(true);
      });
  }

  function setPaused(value) {
    paused = value;
    root.dataset.state = paused ? "paused" : "live";
    toggle.textContent = paused ? "Resume" : "Pause";
    toggle.setAttribute("aria-pressed", paused ? "true" : "false");
    status.set(paused ? "paused" : "live", paused ? "paused" : "live");
    if (!paused) poll(false);
  }

  form.addEventListener("submit", function (event) {
    event.preventDefault();
    const params = filters();
    history.replaceState(null, "", location.pathname + (params.toString() ? "?" + params : ""));
    generation += 1;
    lastId = "";
    root.dataset.filtered = params.toString();
    poll(true);
  });
  toggle.addEventListener("click", function () { setPaused(!paused); });

  setInterval(function () { poll(false); }, POLL_MS);
  // The socket only hints that events up to last_id are stored: no seq, no re-reads, no
  // say in the indicator (polling keeps the feed live), retried every SOCKET_RETRY_MS and
  // left open while the page is hidden, as before.
  hints = LockstepLive.connect({
    path: root.dataset.socketPath,
    type: "events",
    sequenced: false,
    backoffMinMs: SOCKET_RETRY_MS,
    backoffMaxMs: SOCKET_RETRY_MS,
    closeOnPagehide: false,
    onMessage: function (hint) { if (hint.last_id !== lastId) poll(false); },
  });
})();
