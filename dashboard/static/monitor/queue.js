// Queue page: live state per group, a uPlot chart of offsets and lag, the lock-ownership
// timeline, retried messages and recent events.
//
// GET /api/v1/topics/<t>/queues/<q> is the source of truth (history, timeline, state).
// The socket /ws/queues/<t>/<q>/ sends {"type": "queue", "seq", "data": queue_state,
// "events"} hints: each appends a live point to the chart and updates the table; a gap
// in seq (or a reconnect) re-reads the JSON view. Without a socket (not there, or dead)
// the page re-reads the JSON view every 2 s instead, so it stays live either way. The
// socket, its reconnects, gaps, polls and the status indicator are live_socket.js's.
(function () {
  "use strict";

  const root = document.getElementById("queue");
  const initial = document.getElementById("queue-data");
  if (!root || !initial) return;

  // Fallback while there is no open socket: re-reading the JSON view every 2 s keeps it live.
  const POLL_MS = 2000;
  // With a socket, the timeline, retried messages and commit history are still re-read
  // from the JSON view now and then: the hints carry live state, not history.
  const REFRESH_MS = 10000;
  // Recent events shown: enough to see what just happened to this queue, no more.
  const MAX_EVENTS = 50;
  // Event types too frequent to read in a feed (samples and state snapshots): not shown.
  const NOISY = new Set(["lag_sampled", "key_state", "lanes"]);

  const apiUrl = root.dataset.apiUrl;
  const chartEl = document.getElementById("queue-chart");
  const groupSelect = document.getElementById("chart-group");
  const timelineEl = document.getElementById("lock-timeline");
  const statusEl = document.getElementById("live-status");
  const updatedEl = document.getElementById("updated-at");
  const eventsEl = document.getElementById("queue-events");
  // Counts and durations as the server writes them (format.js).
  const fmt = window.LockstepFormat;

  let data = JSON.parse(initial.textContent);
  let group = groupSelect ? groupSelect.value : (data.groups[0] || {}).group;
  let points = [];
  let chart = null;

  // ---- formatting ----------------------------------------------------------------------

  function el(tag, className, text) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }

  const color = LockstepTheme.color;

  function clock(ms) { return LockstepTime.format(ms, "s"); }

  function count(u, v) { return fmt.count(v); }

  // ---- the chart -----------------------------------------------------------------------

  function pointsFor(snapshot) {
    const out = ((snapshot.series || {})[group] || []).map(function (p) { return p.slice(); });
    const live = liveRow(snapshot);
    if (live) addPoint(out, live);
    return out;
  }

  function liveRow(state) {
    const g = (state.groups || []).find(function (x) { return x.group === group; });
    return g ? [state.generated_at_ms, state.max_offset, g.committed_offset, g.lag] : null;
  }

  // Points stay in time order (uPlot needs it); one at the same or an older time than the
  // newest merges into it.
  function addPoint(list, point) {
    const last = list[list.length - 1];
    if (last && point[0] <= last[0]) {
      for (let i = 1; i < 4; i++) if (point[i] !== null) last[i] = point[i];
      return;
    }
    list.push(point);
  }

  function columns() {
    const since = data.generated_at_ms - data.minutes * 60000;
    const kept = points.filter(function (p) { return p[0] >= since; });
    return [0, 1, 2, 3].map(function (i) {
      return kept.map(function (p) { return i === 0 ? p[0] / 1000 : p[i]; });
    });
  }

  function drawChart() {
    if (!window.uPlot) return;
    const cols = columns();
    if (!chart) {
      chart = new window.uPlot({
        width: Math.max(300, chartEl.clientWidth), height: 260,
        scales: { x: { time: true }, off: {}, lag: {} },
        // Times in the viewer's zone, 24-hour, on the axis and in the legend (time.js);
        // offsets and lag as the table writes them.
        series: [
          { value: LockstepTime.legendValue },
          { label: "max offset", scale: "off", stroke: color("chart-1"), width: 2, spanGaps: true, value: count },
          { label: "committed", scale: "off", stroke: color("ok"), width: 2, spanGaps: true, value: count },
          { label: "lag", scale: "lag", stroke: color("bad"), width: 1.5, spanGaps: true,
            fill: color("bad-fill"), value: count },
        ],
        // A commit's point carries only the committed offset: the readout shows each
        // series' nearest point with a value, not a blank for max offset and lag.
        cursor: { hover: { skip: [null, undefined] } },
        axes: [LockstepTheme.axis({ values: LockstepTime.axisValues, space: LockstepTime.axisSpace }),
          LockstepTheme.axis({ scale: "off", incrs: LockstepTheme.wholeSteps, size: LockstepTheme.fitLabels }),
          LockstepTheme.axis({ scale: "lag", side: 1, grid: { show: false }, incrs: LockstepTheme.wholeSteps,
            size: LockstepTheme.fitLabels })],
      }, cols, chartEl);
      window.lockstepQueueChart = chart;
      window.addEventListener("resize", function () {
        chart.setSize({ width: Math.max(300, chartEl.clientWidth), height: 260 });
      });
    } else {
      chart.setData(cols);
    }
    chartEl.dataset.points = String(cols[0].length);
    chartEl.dataset.committedPoints = String(cols[2].filter(function (v) { return v !== null; }).length);
  }

  // ---- live state ----------------------------------------------------------------------

  function renderGroups(state) {
    for (const g of state.groups || []) {
      const row = document.querySelector('#queue-groups tr.queue-group[data-group="' + CSS.escape(g.group) + '"]');
      if (!row) continue;
      const owner = row.querySelector(".owner");
      owner.textContent = g.owner || "—";
      // A lock whose owner stopped heartbeating (killed, frozen) is held by nobody alive.
      if (g.state === "no_live_consumer") owner.append(" ", el("span", "hint", "not live"));
      row.querySelector(".token").textContent = String(g.token);
      row.querySelector(".lock-age").textContent = g.lock_age_ms === null ? "—" : fmt.seconds(g.lock_age_ms / 1000);
      row.querySelector(".expires").textContent = g.lock_expires_in_ms === null ? "—" : fmt.seconds(g.lock_expires_in_ms / 1000);
      setNumber(row.querySelector(".committed"), g.committed_offset);
      setNumber(row.querySelector(".max-offset"), state.max_offset);
      setNumber(row.querySelector(".lag"), g.lag);
      row.querySelector(".time-lag").textContent = fmt.seconds(g.time_lag_s);
      const badge = el("span", "badge state-" + g.state, words(g.state));
      badge.dataset.state = g.state;
      row.querySelector(".state").replaceChildren(badge);
      row.querySelector(".retries").textContent = fmt.count(g.retries);
      // Only the JSON view counts dead letters; the socket's snapshots leave them as they are.
      if (state.dead_letters && Object.prototype.hasOwnProperty.call(state.dead_letters, g.group)) {
        row.querySelector(".dead-letters a").textContent = fmt.count(state.dead_letters[g.group]);
      }
      const error = row.querySelector(".last-error");
      error.textContent = (g.last_error || "").slice(0, 80);
      error.title = g.last_error || "";
    }
    updatedEl.replaceChildren("updated ", LockstepTime.element(state.generated_at_ms));
  }

  // "no_live_consumer" -> "no live consumer", as the server-rendered page says it.
  function words(name) {
    return String(name || "").replace(/_/g, " ");
  }

  function setNumber(cell, value) {
    cell.dataset.value = String(value);
    cell.textContent = fmt.count(value);
  }

  function renderProblems(problems) {
    const table = document.getElementById("queue-problems");
    const body = table.tBodies[0];
    body.replaceChildren();
    for (const p of problems) {
      const tr = el("tr", "problem");
      tr.dataset.group = p.group;
      tr.dataset.key = p.key;
      tr.dataset.offset = String(p.offset);
      const kind = el("td");
      kind.append(el("span", "badge state-" + p.kind, p.kind));
      tr.append(el("td", "", p.group), kind, el("td", "mono", p.key), el("td", "num", p.offset),
        el("td", "num", fmt.count(p.retries)), el("td", "num", fmt.count(p.waiting)),
        el("td", "error-text", (p.error || "").slice(0, 120)));
      body.append(tr);
    }
    table.hidden = problems.length === 0;
    document.getElementById("no-problems").hidden = problems.length > 0;
  }

  function eventRow(e) {
    const tr = el("tr", "event-row");
    tr.dataset.id = e.id;
    tr.dataset.type = e.type;
    const ms = e.ts_ms || Date.parse(e.ts);
    const type = el("td");
    type.append(el("span", "badge type-" + e.type, e.type));
    let details = JSON.stringify(e.details || {});
    if (details.length > 300) details = details.slice(0, 299) + "…";
    const when = el("td", "when mono");
    when.append(LockstepTime.element(ms, "ms"));
    tr.append(when, type,
      el("td", "", e.topic), el("td", "", e.group), el("td", "num", e.queue),
      el("td", "mono", e.key), el("td", "num", e.token), el("td", "mono consumer", e.consumer),
      el("td", "details mono", details));
    return tr;
  }

  // Stream IDs ("<ms>-<seq>"; an event shard's prefixed "s<shard>:", the ingester's own
  // events "<name>:" too) in stored order: by time, then sequence. As numbers, not strings
  // ("9-0" is older than "10-0"). A queue's events all come from one shard.
  function idParts(id) {
    return String(id).replace(/^.*:/, "").split("-").map(Number);
  }

  function compareIds(a, b) {
    const [am, as] = idParts(a);
    const [bm, bs] = idParts(b);
    return am - bm || as - bs;
  }

  // ``events`` in any order (the JSON view and the socket send them newest first); each
  // row goes in its place by ID, so the table stays newest first whatever the order a
  // batch came in, and an event seen twice is shown once.
  function renderEvents(events, replace) {
    if (replace) eventsEl.replaceChildren();
    for (const e of events) {
      if (NOISY.has(e.type)) continue;
      if (eventsEl.querySelector('tr[data-id="' + CSS.escape(e.id) + '"]')) continue;
      const newer = Array.prototype.find.call(eventsEl.rows, function (row) {
        return compareIds(row.dataset.id, e.id) < 0;
      });
      eventsEl.insertBefore(eventRow(e), newer || null);
    }
    while (eventsEl.rows.length > MAX_EVENTS) eventsEl.deleteRow(-1);
  }

  // ---- the lock timeline ----------------------------------------------------------------

  // The track spans the window, or less when the first ownership or rebalance in it came
  // later (a young queue): a lock held for ten seconds should not be a one-pixel sliver.
  function timelineStart(snapshot) {
    const times = (snapshot.timeline || []).map(function (i) { return i.start_ms; })
      .concat((snapshot.rebalances || []).map(function (r) { return r.at_ms; }));
    if (times.length === 0) return snapshot.since_ms;
    const earliest = Math.min.apply(null, times);
    const pad = (snapshot.generated_at_ms - earliest) * 0.05;
    return Math.max(snapshot.since_ms, earliest - pad);
  }

  function renderTimeline(snapshot) {
    const since = timelineStart(snapshot);
    const now = snapshot.generated_at_ms;
    const span = Math.max(1, now - since);
    const pos = function (t) { return Math.min(100, Math.max(0, (t - since) / span * 100)); };
    const lanes = new Map();
    for (const i of snapshot.timeline || []) {
      const name = i.group + "\u0000" + i.consumer;
      if (!lanes.has(name)) lanes.set(name, []);
      lanes.get(name).push(i);
    }
    const rows = [];
    for (const [name, intervals] of lanes) {
      const [groupName, consumer] = name.split("\u0000");
      const row = el("div", "timeline-row");
      row.dataset.group = groupName;
      row.dataset.consumer = consumer;
      const label = el("div", "timeline-label", groupName + " · " + consumer);
      label.title = consumer;
      const track = el("div", "timeline-track");
      for (const i of intervals) {
        const end = i.end_ms === null ? now : i.end_ms;
        if (end < since) continue;
        const bar = el("div", "lock-bar" + (i.live ? " live" : "") +
          (i.end_ms === null && !i.live ? " unseen-end" : ""));
        bar.dataset.consumer = i.consumer;
        bar.dataset.token = String(i.token);
        bar.dataset.endReason = i.end_reason || "";
        bar.style.left = pos(i.start_ms) + "%";
        bar.style.width = Math.max(0.4, pos(end) - pos(i.start_ms)) + "%";
        bar.title = "token " + i.token + ": " + clock(i.start_ms) + " → " +
          (i.live ? "now (holds it)" : i.end_ms === null ? "? (" + i.end_reason + ")" :
            clock(i.end_ms) + " (" + i.end_reason + ")");
        track.append(bar);
      }
      row.append(label, track);
      rows.push(row);
    }
    const marks = el("div", "timeline-row rebalances");
    marks.append(el("div", "timeline-label", "rebalances"));
    const markTrack = el("div", "timeline-track");
    for (const r of snapshot.rebalances || []) {
      const mark = el("div", "rebalance-mark " + r.change);
      mark.style.left = pos(r.at_ms) + "%";
      mark.title = clock(r.at_ms) + ": " + r.change + " to " + r.consumer + " (" +
        lockstepCount(r.members.length, "member") + ")";
      markTrack.append(mark);
    }
    marks.append(markTrack);
    const axis = el("div", "timeline-axis");
    const start = el("span");
    start.append(LockstepTime.element(since));
    axis.append(start, el("span", "", "now"));
    if (rows.length === 0) rows.push(el("p", "empty-inline", "No lock was held in this window."));
    timelineEl.replaceChildren(...rows, marks, axis);
    timelineEl.dataset.bars = String(timelineEl.querySelectorAll(".lock-bar").length);
  }

  // ---- whole snapshots (the JSON view) ---------------------------------------------------

  function renderAll(snapshot) {
    data = snapshot;
    points = pointsFor(snapshot);
    drawChart();
    renderGroups(snapshot);
    renderTimeline(snapshot);
    renderProblems(snapshot.problems || []);
    renderEvents(snapshot.events || [], true);
  }

  function onHint(message) {
    const state = message.data;
    if (!state || state.generated_at_ms < data.generated_at_ms) return;
    data = Object.assign({}, data, { generated_at_ms: state.generated_at_ms,
      max_offset: state.max_offset, groups: state.groups });
    const live = liveRow(state);
    if (live) addPoint(points, live);
    drawChart();
    renderGroups(state);
    renderEvents(message.events || [], false);
    root.dataset.hints = String(Number(root.dataset.hints || 0) + 1);
  }

  if (groupSelect) {
    groupSelect.addEventListener("change", function () {
      group = groupSelect.value;
      points = pointsFor(data);
      drawChart();
    });
  }

  renderAll(data);
  LockstepLive.connect({
    path: root.dataset.socketPath,
    type: "queue",
    root: root,
    apiUrl: apiUrl,
    loginUrl: root.dataset.loginUrl,
    status: LockstepLive.status(statusEl),
    pollMs: POLL_MS,
    refreshMs: REFRESH_MS,
    onOpen: function () { root.dataset.socket = "open"; },
    onClose: function () { root.dataset.socket = "closed"; },
    onMessage: onHint,
    // ``reason`` (gap, reconnect, poll, refresh) and a count of re-reads are kept on the
    // root element, so an operator (or a test) can see why the page re-read.
    onData: function (snapshot, reason) {
      renderAll(snapshot);
      root.dataset.rereads = String(Number(root.dataset.rereads || 0) + 1);
      root.dataset.rereadReason = reason;
    },
  });
})();
