// Overview page: keeps the queue table live.
//
// The socket carries hints: {"type": "overview", "seq": n, "data": snapshot}. seq 0 is the
// fresh snapshot the server sends on connect; after it, the ingester's pushes count up by
// one. A gap (a lost push, or a restarted ingester's skipped number) or a reconnect means
// hints may have been lost, so the page re-reads GET /api/v1/overview, the source of
// truth, and renders that. Every snapshot carries generated_at_ms (Redis clock): an older
// snapshot never overwrites a newer one, whichever path it came by.
//
// The socket's snapshots carry the live state only; the JSON view adds "stats" (rates,
// retries, dead letters, stuck queues over the last minute), re-read every few seconds
// and rendered above each topic's table, with a grid of its queues coloured by lag.
// The stats' stuck list (the server's one definition, which the group page shows too)
// also marks the stuck queues and groups, and "owners_not_live" the lock holders that
// stopped heartbeating: both are kept until the next stats, since socket snapshots lack them.
//
// The socket itself (reconnects, seq gaps, staleness, the status indicator) is
// live_socket.js's; this file renders.
(function () {
  "use strict";

  const root = document.getElementById("overview");
  if (!root) return;

  // Row colours: a queue is "mid" once it is 100 messages or 10 s behind, "high" at
  // 1000 messages or a minute, the point where an operator should look at it now.
  const LAG_MID = { offsets: 100, seconds: 10 };
  const LAG_HIGH = { offsets: 1000, seconds: 60 };
  // Stats are per minute and cost a few database queries: every 5 s is fresh enough.
  const STATS_REFRESH_MS = 5000;

  const apiUrl = root.dataset.apiUrl;
  const socketPath = root.dataset.socketPath;
  const loginUrl = root.dataset.loginUrl;
  const queueUrl = root.dataset.queueUrl || "";
  const groupUrl = root.dataset.groupUrl || "";
  const deadLettersUrl = root.dataset.deadLettersUrl || "";
  const alertsEl = document.getElementById("alerts");
  const topicsEl = document.getElementById("topics");
  const emptyEl = document.getElementById("no-topics");
  const statusEl = document.getElementById("live-status");
  const updatedEl = document.getElementById("updated-at");
  const numberFormat = new Intl.NumberFormat("en-US");

  // ---- rendering ---------------------------------------------------------------------

  let newestMs = 0;
  let painted = false;
  // From the latest stats: "topic|group|queue" -> stuck reasons, "topic|group" -> count,
  // and the lock holders that are no longer live.
  let stuckQueues = new Map();
  let stuckGroups = new Map();
  let notLive = new Set();

  function keepStats(stats) {
    stuckQueues = new Map();
    stuckGroups = new Map();
    for (const a of stats.stuck || []) {
      const queueKey = a.topic + "|" + a.group + "|" + a.queue;
      stuckQueues.set(queueKey, (stuckQueues.get(queueKey) || []).concat([a.reason]));
      const groupKey = a.topic + "|" + a.group;
      stuckGroups.set(groupKey, (stuckGroups.get(groupKey) || 0) + 1);
    }
    notLive = new Set(stats.owners_not_live || []);
  }

  function markStuck(node, reasons) {
    node.classList.toggle("stuck", reasons.length > 0);
    node.dataset.stuck = reasons.join(" ");
  }

  function render(data) {
    if (!data || !Array.isArray(data.topics)) return;
    const generated = Number(data.generated_at_ms) || 0;
    if (generated < newestMs) return;
    newestMs = generated;
    if (data.stats) keepStats(data.stats);
    const sections = new Map();
    for (const section of topicsEl.querySelectorAll(":scope > section.topic")) {
      sections.set(section.dataset.topic, section);
    }
    data.topics.forEach(function (topic, index) {
      let section = sections.get(topic.name);
      if (section) {
        sections.delete(topic.name);
      } else {
        section = createSection(topic.name);
      }
      renderTopic(section, topic);
      placeAt(topicsEl, section, index);
    });
    for (const gone of sections.values()) gone.remove();
    if (data.stats) renderStats(data.stats);
    emptyEl.hidden = data.topics.length > 0;
    // In the viewer's chosen zone, UTC in the title, as every other time (time.js).
    if (generated) updatedEl.replaceChildren("updated ", LockstepTime.element(generated));
    painted = true;
  }

  function placeAt(parent, child, index) {
    if (parent.children[index] !== child) parent.insertBefore(child, parent.children[index] || null);
  }

  function el(tag, className, text) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined) node.textContent = text;
    return node;
  }

  function createSection(name) {
    const section = el("section", "topic");
    section.dataset.topic = name;
    const head = el("header", "topic-head");
    head.append(el("h2", "", name), el("span", "topic-meta"), el("ul", "group-totals"));
    section.append(head, el("div", "topic-stats"), el("div", "queue-grid"));
    const table = el("table", "queues");
    const headRow = el("tr");
    [["Queue", "num"], ["Max offset", "num"], ["Group", ""], ["Lock holder", ""],
      ["Token", "num"], ["Committed", "num"], ["Lag", "num"], ["Time lag", "num"]]
      .forEach(function (col) { headRow.append(el("th", col[1], col[0])); });
    table.append(el("thead"), el("tbody"));
    table.tHead.append(headRow);
    section.append(table);
    return section;
  }

  function renderTopic(section, topic) {
    section.querySelector(".topic-meta").textContent = lockstepCount(topic.queue_count, "queue");
    renderGroupTotals(section.querySelector(".group-totals"), topic);
    renderGrid(section.querySelector(".queue-grid"), topic);
    const tbody = section.querySelector("tbody");
    const rows = new Map();
    for (const row of tbody.querySelectorAll(":scope > tr.queue-row")) {
      rows.set(row.dataset.queue + "|" + row.dataset.group, row);
    }
    let index = 0;
    for (const q of topic.queues) {
      const groups = q.groups.length ? q.groups : [null];
      for (const g of groups) {
        const key = q.queue + "|" + (g ? g.group : "");
        let row = rows.get(key);
        if (row) rows.delete(key); else row = createRow(topic.name, q.queue, g);
        renderRow(row, q, g);
        markStuck(row, g ? stuckQueues.get(topic.name + "|" + g.group + "|" + q.queue) || [] : []);
        placeAt(tbody, row, index++);
      }
    }
    for (const gone of rows.values()) gone.remove();
  }

  function renderGroupTotals(list, topic) {
    list.replaceChildren();
    for (const group of topic.groups) {
      let lag = 0;
      for (const q of topic.queues) {
        for (const g of q.groups) if (g.group === group) lag += g.lag;
      }
      const stuck = stuckGroups.get(topic.name + "|" + group) || 0;
      const item = el("li", "group-total lag-" + lagLevel(lag, 0) + (stuck ? " has-stuck" : ""));
      item.dataset.group = group;
      item.dataset.lag = String(lag);
      item.dataset.stuck = String(stuck);
      item.append(link("name", group, urlFor(groupUrl, topic.name, "GROUP", group)),
        el("span", "value", "lag " + numberFormat.format(lag)));
      if (stuck) item.append(el("span", "value bad", stuck + " stuck"));
      list.append(item);
    }
  }

  function createRow(topicName, queue, g) {
    const row = el("tr", "queue-row");
    row.dataset.topic = topicName;
    row.dataset.queue = String(queue);
    row.dataset.group = g ? g.group : "";
    const queueCell = el("td", "queue num");
    queueCell.append(link("", String(queue), urlFor(queueUrl, topicName, "QUEUE", queue)));
    row.append(queueCell, el("td", "max-offset num"));
    if (!g) {
      const none = el("td", "group none", "no consumer group yet");
      none.colSpan = 6;
      row.append(none);
      return row;
    }
    const groupCell = el("td", "group");
    groupCell.append(link("", g.group, urlFor(groupUrl, topicName, "GROUP", g.group)));
    row.append(groupCell, el("td", "owner"), el("td", "token num"),
      el("td", "committed num"), el("td", "lag num"), el("td", "time-lag num"));
    return row;
  }

  function renderRow(row, q, g) {
    setNumber(row.querySelector(".max-offset"), q.max_offset, numberFormat.format(q.max_offset));
    const level = g ? lagLevel(g.lag, g.time_lag_s) : "none";
    row.dataset.lagLevel = level;
    row.classList.remove("lag-none", "lag-low", "lag-mid", "lag-high");
    row.classList.add("lag-" + level);
    if (!g) return;
    const owner = row.querySelector(".owner");
    const holder = g.owner || "";
    const dead = holder !== "" && notLive.has(holder);
    if (owner.dataset.owner !== holder || owner.textContent === "" ||
        owner.dataset.notLive !== String(dead)) {
      const isNew = owner.dataset.owner === undefined;
      owner.dataset.owner = holder;
      owner.dataset.notLive = String(dead);
      owner.textContent = holder || "—";
      if (dead) owner.append(" ", el("span", "hint", "no live consumer"));
      const expires = Math.round((g.lock_expires_in_ms || 0) / 1000);
      owner.title = !holder ? "no consumer holds this queue"
        : dead ? holder + " sends no heartbeat any more; its lock expires in " + expires + " s"
        : "lock expires in " + expires + " s";
      owner.classList.toggle("unowned", !holder || dead);
      if (painted && !isNew) flash(owner);
    }
    setNumber(row.querySelector(".token"), g.token, String(g.token));
    setNumber(row.querySelector(".committed"), g.committed_offset,
      numberFormat.format(g.committed_offset));
    setNumber(row.querySelector(".lag"), g.lag, numberFormat.format(g.lag));
    setNumber(row.querySelector(".time-lag"), g.time_lag_s, formatSeconds(g.time_lag_s));
  }

  function urlFor(pattern, topic, slot, value) {
    return pattern.replace("TOPIC", encodeURIComponent(topic))
      .replace(slot, encodeURIComponent(String(value)));
  }

  function link(className, text, href) {
    const a = el("a", className, text);
    a.href = href;
    return a;
  }

  // One row of cells per group, one cell per queue, coloured like the table rows.
  function renderGrid(grid, topic) {
    grid.replaceChildren();
    for (const group of topic.groups) {
      const row = el("div", "grid-row");
      row.dataset.group = group;
      row.append(el("span", "grid-label", group));
      for (const q of topic.queues) {
        const g = q.groups.find(function (x) { return x.group === group; });
        if (!g) continue;
        const level = lagLevel(g.lag, g.time_lag_s);
        const cell = link("grid-cell lag-" + level, String(q.queue),
          urlFor(queueUrl, topic.name, "QUEUE", q.queue));
        cell.dataset.queue = String(q.queue);
        cell.dataset.lagLevel = level;
        cell.dataset.lag = String(g.lag);
        const reasons = stuckQueues.get(topic.name + "|" + group + "|" + q.queue) || [];
        markStuck(cell, reasons);
        const holder = g.owner ? g.owner + (notLive.has(g.owner) ? " (no live consumer)" : "")
          : "nobody";
        cell.title = "queue " + q.queue + ": lag " + numberFormat.format(g.lag) + ", " +
          formatSeconds(g.time_lag_s) + " behind; held by " + holder +
          (reasons.length ? "; stuck: " + reasons.join(", ").replace(/_/g, " ") : "");
        row.append(cell);
      }
      grid.append(row);
    }
  }

  function rate(value, unit) {
    return value === null || value === undefined ? "—" : Number(value).toFixed(1) + unit;
  }

  function renderStats(stats) {
    for (const t of stats.topics || []) {
      const section = topicsEl.querySelector('section.topic[data-topic="' + CSS.escape(t.name) + '"]');
      if (!section) continue;
      const box = section.querySelector(".topic-stats");
      box.replaceChildren();
      const input = el("span", "topic-in", "in " + rate(t.in_per_s, "/s"));
      input.dataset.value = t.in_per_s === null ? "" : String(t.in_per_s);
      input.title = "messages produced per second over the last " + stats.window_s + " s (lag samples)";
      box.append(input);
      for (const g of t.groups) {
        const item = el("span", "group-stats" + (g.stuck ? " has-stuck" : ""));
        item.dataset.group = g.group;
        item.dataset.out = String(g.out_per_s);
        item.dataset.retries = String(g.retries_per_min);
        item.dataset.deadLetters = String(g.dead_letters);
        item.dataset.stuck = String(g.stuck);
        item.append(link("name", g.group, urlFor(groupUrl, t.name, "GROUP", g.group)),
          el("span", "", "out " + rate(g.out_per_s, "/s")),
          el("span", "", lockstepCount(g.retries_per_min, "retry", "retries") + "/min"),
          link("dead-letters" + (g.dead_letters ? " warn" : ""), lockstepCount(g.dead_letters, "dead letter"),
            urlFor(deadLettersUrl, t.name, "GROUP", g.group) + "?topic=" + encodeURIComponent(t.name)),
          el("span", g.stuck ? "bad" : "", g.stuck + " stuck"));
        box.append(item);
      }
    }
    renderAlerts(stats.stuck || []);
  }

  function renderAlerts(stuck) {
    if (!alertsEl) return;
    const list = alertsEl.querySelector("#alert-list");
    list.replaceChildren();
    for (const a of stuck) {
      const item = el("li", "alert");
      item.dataset.topic = a.topic;
      item.dataset.group = a.group;
      item.dataset.queue = String(a.queue);
      item.dataset.reason = a.reason;
      item.append(link("", a.topic + " / " + a.group, urlFor(queueUrl, a.topic, "QUEUE", a.queue)),
        document.createTextNode(" — "), el("span", "badge state-" + a.reason, a.reason.replace(/_/g, " ")),
        document.createTextNode(" " + a.why));
      list.append(item);
    }
    alertsEl.dataset.count = String(stuck.length);
    alertsEl.querySelector(".count").textContent = String(stuck.length);
    alertsEl.querySelector("#no-alerts").hidden = stuck.length > 0;
  }

  // Stats only come with the JSON view. Not a resync: it leaves resyncReason alone, and
  // a 401 is left to the socket's reconnect logic, which owns the signed-out state.
  function refreshStats() {
    if (live.isStopped()) return;
    LockstepLive.fetchJson(apiUrl, "overview")
      .then(function (data) { if (data) render(data); })
      .catch(function () {});
  }

  function setNumber(cell, value, text) {
    if (cell.textContent === text && cell.dataset.value === String(value)) return;
    const changed = cell.dataset.value !== undefined && cell.dataset.value !== String(value);
    cell.dataset.value = String(value);
    cell.textContent = text;
    if (changed && painted) flash(cell);
  }

  function flash(cell) {
    cell.classList.remove("changed");
    void cell.offsetWidth; // restart the CSS animation
    cell.classList.add("changed");
  }

  function lagLevel(lag, seconds) {
    if (lag <= 0) return "none";
    if (lag >= LAG_HIGH.offsets || seconds >= LAG_HIGH.seconds) return "high";
    if (lag >= LAG_MID.offsets || seconds >= LAG_MID.seconds) return "mid";
    return "low";
  }

  function formatSeconds(s) {
    if (!s) return "0 s";
    if (s < 60) return s.toFixed(1) + " s";
    if (s < 3600) return Math.floor(s / 60) + " m " + Math.floor(s % 60) + " s";
    return Math.floor(s / 3600) + " h " + Math.floor((s % 3600) / 60) + " m";
  }

  // ---- the socket (hints) and the JSON view (source of truth) -------------------------

  let resyncCount = 0;

  const initial = document.getElementById("overview-data");
  if (initial) render(JSON.parse(initial.textContent));
  const live = LockstepLive.connect({
    path: socketPath,
    type: "overview",
    root: root,
    apiUrl: apiUrl,
    loginUrl: loginUrl,
    status: LockstepLive.status(statusEl),
    titles: {
      live: "Live updates over a WebSocket",
      reconnecting: function (ms) {
        return "Connection lost; retrying in " + (ms / 1000).toFixed(1) + " s";
      },
      stale: "No live updates for a while: is the ingester running? " +
        "Re-reading the overview every few seconds.",
      signedOut: "Your session ended",
    },
    stale: true,
    reopenOnPageshow: true,
    onMessage: function (message) { render(message.data); },
    // ``reason`` (gap, reconnect, refused, stale) is kept on the root element with a count
    // of successful re-reads, so an operator (or a test) can see why the page re-read.
    onData: function (data, reason) {
      render(data);
      resyncCount += 1;
      root.dataset.resyncs = String(resyncCount);
      root.dataset.resyncReason = reason;
    },
  });
  setInterval(refreshStats, STATS_REFRESH_MS);
})();
