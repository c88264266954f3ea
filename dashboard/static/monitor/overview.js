// Overview page: keeps the fleet summary, the worst queues and the table's page live.
//
// The server renders the page for the view in its URL (filters, sort, page) and embeds
// the same view as the socket's parts (#overview-data). The socket (/ws/overview/?<the
// page's query>) sends that view whole on connect (seq 0, possibly over several
// messages), then only what changed: any of "summary", "worst", "table" (paging),
// "rows" (changed rows, each with its id) and "order" (the ids of the page's rows, in
// order; rows arrive before the order that names them). Each message is at most 64 KiB
// (docs/events.md §5). On a seq gap or reconnect, live_socket.js re-reads the JSON view
// (same query) and the page renders it whole.
//
// Cells are tinted only when something an operator acts on changed: a row's state,
// owner or stuck reason, not every offset tick.
(function () {
  "use strict";

  const root = document.getElementById("overview");
  if (!root) return;

  // Row colours: a queue is "mid" once it is 100 messages or 10 s behind, "high" at
  // 1000 messages or a minute, the point where an operator should look at it now.
  const LAG_MID = { offsets: 100, seconds: 10 };
  const LAG_HIGH = { offsets: 1000, seconds: 60 };

  const queueUrl = root.dataset.queueUrl || "";
  const groupUrl = root.dataset.groupUrl || "";
  const deadLettersUrl = root.dataset.deadLettersUrl || "";
  const statusEl = document.getElementById("live-status");
  const updatedEl = document.getElementById("updated-at");
  // Counts, durations and rates as the server writes them (format.js).
  const fmt = window.LockstepFormat;

  // The page's model: the socket's parts, rows by id.
  let model = { summary: null, worst: [], table: null, rows: new Map(), order: [] };
  let newestMs = 0;
  let painted = false;

  // ---- applying parts ----------------------------------------------------------------

  function apply(parts, whole) {
    if (whole) model = { summary: null, worst: [], table: null, rows: new Map(), order: [] };
    const at = Number(parts.generated_at_ms) || 0;
    if (!whole && at && at < newestMs) return;
    if (at) newestMs = Math.max(newestMs, at);
    if (parts.summary) { model.summary = parts.summary; renderSummary(); }
    if (parts.worst) { model.worst = parts.worst; renderWorst(); }
    if (parts.table) { model.table = parts.table; renderPager(); }
    const changed = new Set();
    for (const row of parts.rows || []) { model.rows.set(row.id, row); changed.add(row.id); }
    if (parts.order) {
      model.order = parts.order;
      for (const id of Array.from(model.rows.keys())) {
        if (!model.order.includes(id)) model.rows.delete(id);
      }
    }
    if (parts.order || changed.size) renderRows(parts.order ? null : changed);
    if (newestMs) updatedEl.replaceChildren("updated ", LockstepTime.element(newestMs));
    painted = true;
  }

  // The JSON view (a re-read) in the socket's shape.
  function fromJson(data) {
    const table = Object.assign({}, data.table);
    const rows = table.rows || [];
    delete table.rows;
    return {
      generated_at_ms: data.generated_at_ms,
      summary: data.summary,
      worst: data.worst,
      table: table,
      rows: rows.map(function (r) {
        return Object.assign({ id: JSON.stringify([r.topic, r.group, r.queue]) }, r);
      }),
      order: rows.map(function (r) { return JSON.stringify([r.topic, r.group, r.queue]); }),
    };
  }

  // ---- rendering ---------------------------------------------------------------------

  function el(tag, className, text) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined) node.textContent = text;
    return node;
  }

  function link(className, text, href) {
    const a = el("a", className, text);
    a.href = href;
    return a;
  }

  function urlFor(pattern, topic, slot, value) {
    return pattern.replace("TOPIC", encodeURIComponent(topic))
      .replace(slot, encodeURIComponent(String(value)));
  }

  function cell(className, text) { return el("td", className, text); }

  function words(value) { return String(value || "").replace(/_/g, " "); }

  function renderSummary() {
    const s = model.summary;
    if (!s) return;
    const totals = document.getElementById("fleet-totals");
    for (const span of totals.querySelectorAll("[data-total]")) {
      const name = span.dataset.total;
      const value = name === "groups" ? s.group_count : (s.totals || {})[name];
      const noun = span.dataset.noun;
      span.textContent = noun ? lockstepCount(value || 0, noun)
        : fmt.count(value || 0);
      if (name === "stuck") span.classList.toggle("bad", (value || 0) > 0);
    }
    const inRates = new Map((s.topics || []).map(function (t) { return [t.name, t.in_per_s]; }));
    const body = document.getElementById("summary-rows");
    body.replaceChildren();
    for (const g of s.groups || []) {
      const row = el("tr", "summary-row" + (g.stuck ? " has-stuck" : ""));
      row.dataset.topic = g.topic;
      row.dataset.group = g.group;
      row.dataset.stuck = String(g.stuck);
      row.dataset.lag = String(g.lag);
      const groupCell = cell("");
      groupCell.append(link("", g.group, urlFor(groupUrl, g.topic, "GROUP", g.group)));
      const deadCell = cell("num");
      deadCell.append(link("", fmt.count(g.dead_letters),
        urlFor(deadLettersUrl, g.topic, "GROUP", g.group) + "?topic=" + encodeURIComponent(g.topic)));
      row.append(cell("", g.topic), groupCell, cell("num", fmt.count(g.queues)),
        cell("num", fmt.count(g.owned)), cell("num", fmt.count(g.owners)),
        cell("num", fmt.count(g.lag)), cell("num", fmt.seconds(g.max_time_lag_s)),
        cell("num", fmt.rate(inRates.get(g.topic))), cell("num", fmt.rate(g.out_per_s)),
        cell("num", fmt.count(g.retries_per_min) + "/min"),
        cell("num" + (g.stuck ? " bad" : ""), fmt.count(g.stuck)),
        cell("num", fmt.count(g.held_keys)), deadCell);
      body.append(row);
    }
    for (const t of s.topics || []) {
      if (t.groups) continue;
      const row = el("tr", "summary-row no-group");
      row.dataset.topic = t.name;
      row.dataset.group = "";
      const none = cell("none", lockstepCount(t.queue_count, "queue") + ", no consumer group yet");
      none.colSpan = 12;
      row.append(cell("", t.name), none);
      body.append(row);
    }
    document.getElementById("no-topics").hidden = (s.topics || []).length > 0;
    const more = document.getElementById("summary-more");
    more.hidden = s.group_count <= (s.groups || []).length;
    more.textContent = "The " + fmt.count((s.groups || []).length) + " worst of " + fmt.count(s.group_count) +
      " groups; filter the table below by group for the rest.";
  }

  function renderWorst() {
    const body = document.getElementById("worst-rows");
    body.replaceChildren();
    for (const r of model.worst) {
      const row = el("tr", "worst-row" + (r.stuck ? " stuck" : ""));
      row.dataset.topic = r.topic;
      row.dataset.group = r.group;
      row.dataset.queue = String(r.queue);
      row.dataset.stuck = r.stuck || "";
      const where = cell("");
      where.append(link("", r.topic + " / " + r.group + " / queue " + r.queue,
        urlFor(queueUrl, r.topic, "QUEUE", r.queue)));
      const state = cell("");
      state.append(el("span", "badge state-" + (r.stuck || r.state),
        r.stuck ? "stuck: " + words(r.stuck) : words(r.state)));
      row.append(where, state, cell("num", fmt.count(r.lag)),
        cell("num", fmt.seconds(r.time_lag_s)), cell("mono", r.owner || "—"),
        cell("why", r.stuck_why || ""));
      body.append(row);
    }
    body.closest("table").hidden = model.worst.length === 0;
    document.getElementById("no-worst").hidden = model.worst.length > 0;
  }

  function renderPager() {
    const t = model.table;
    const info = document.getElementById("page-info");
    if (!t || !info) return;
    info.textContent = "page " + fmt.count(t.page) + " of " + fmt.count(t.pages) + " · " +
      lockstepCount(t.total, "row");
    const pager = document.getElementById("table-pager");
    const here = new URLSearchParams(location.search);
    function pageLink(id, text, page, show) {
      let a = document.getElementById(id);
      if (!show) { if (a) a.remove(); return; }
      if (!a) { a = el("a", "", text); a.id = id; }
      const params = new URLSearchParams(here);
      if (page > 1) params.set("page", String(page)); else params.delete("page");
      const query = params.toString();
      a.href = "?" + query;
      return a;
    }
    const before = [pageLink("first-page", "« First", 1, t.page > 1),
      pageLink("previous-page", "‹ Previous", t.page - 1, t.page > 1)].filter(Boolean);
    const after = [pageLink("next-page", "Next ›", t.page + 1, t.page < t.pages),
      pageLink("last-page", "Last »", t.pages, t.page < t.pages)].filter(Boolean);
    pager.replaceChildren.apply(pager, before.concat([info], after));
  }

  function renderRows(onlyIds) {
    const body = document.getElementById("queue-rows");
    const existing = new Map();
    for (const row of body.querySelectorAll(":scope > tr.queue-row")) {
      existing.set(JSON.stringify([row.dataset.topic, row.dataset.group, Number(row.dataset.queue)]), row);
    }
    model.order.forEach(function (id, index) {
      const data = model.rows.get(id);
      if (!data) return;
      let row = existing.get(id);
      if (row) existing.delete(id); else row = createRow(data);
      if (!onlyIds || onlyIds.has(id)) renderRow(row, data);
      if (body.children[index] !== row) body.insertBefore(row, body.children[index] || null);
    });
    if (!onlyIds) for (const gone of existing.values()) gone.remove();
    document.getElementById("no-rows").hidden = model.order.length > 0;
  }

  function createRow(r) {
    const row = el("tr", "queue-row");
    row.dataset.topic = r.topic;
    row.dataset.group = r.group;
    row.dataset.queue = String(r.queue);
    const groupCell = cell("group");
    groupCell.append(link("", r.group, urlFor(groupUrl, r.topic, "GROUP", r.group)));
    const queueCell = cell("queue num");
    queueCell.append(link("", String(r.queue), urlFor(queueUrl, r.topic, "QUEUE", r.queue)));
    row.append(cell("topic", r.topic), groupCell, queueCell, cell("state"), cell("owner mono"),
      cell("token num"), cell("max-offset num"), cell("committed num"), cell("lag num"),
      cell("time-lag num"));
    return row;
  }

  function renderRow(row, r) {
    const stateCell = row.querySelector(".state");
    const stateKey = r.state + "|" + (r.stuck || "");
    if (stateCell.dataset.key !== stateKey) {
      const isNew = stateCell.dataset.key === undefined;
      stateCell.dataset.key = stateKey;
      stateCell.replaceChildren(el("span", "badge state-" + r.state, words(r.state)));
      if (painted && !isNew) flash(stateCell);
    }
    row.dataset.state = r.state;
    row.dataset.stuck = r.stuck || "";
    row.classList.toggle("stuck", Boolean(r.stuck));
    const level = lagLevel(r.lag, r.time_lag_s);
    row.dataset.lagLevel = level;
    row.classList.remove("lag-some", "lag-none", "lag-low", "lag-mid", "lag-high");
    row.classList.add("lag-" + level);
    const owner = row.querySelector(".owner");
    const holder = r.owner || "";
    const ownerKey = holder + "|" + r.owner_live;
    if (owner.dataset.key !== ownerKey) {
      const isNew = owner.dataset.key === undefined;
      owner.dataset.key = ownerKey;
      owner.dataset.owner = holder;
      owner.textContent = holder || "—";
      if (holder && !r.owner_live) owner.append(" ", el("span", "hint", "no live consumer"));
      if (painted && !isNew) flash(owner);
    }
    setText(row.querySelector(".token"), r.token, String(r.token));
    setText(row.querySelector(".max-offset"), r.max_offset, fmt.count(r.max_offset));
    setText(row.querySelector(".committed"), r.committed_offset, fmt.count(r.committed_offset));
    setText(row.querySelector(".lag"), r.lag, fmt.count(r.lag));
    setText(row.querySelector(".time-lag"), r.time_lag_s, fmt.seconds(r.time_lag_s));
  }

  function lagLevel(lag, seconds) {
    if (!(lag > 0)) return "none";
    if (lag >= LAG_HIGH.offsets || seconds >= LAG_HIGH.seconds) return "high";
    if (lag >= LAG_MID.offsets || seconds >= LAG_MID.seconds) return "mid";
    return "low";
  }

  function setText(node, value, text) {
    node.dataset.value = String(value);
    if (node.textContent !== text) node.textContent = text;
  }

  function flash(node) {
    node.classList.remove("changed");
    void node.offsetWidth; // restart the CSS animation
    node.classList.add("changed");
  }

  // ---- the socket and the JSON view -----------------------------------------------

  let resyncCount = 0;
  const initial = document.getElementById("overview-data");
  if (initial) {
    const view = JSON.parse(initial.textContent);
    apply({
      generated_at_ms: view.generated_at_ms, summary: view.summary, worst: view.worst,
      table: view.table, rows: Object.values(view.rows || {}), order: view.order,
    }, true);
  }
  LockstepLive.connect({
    path: root.dataset.socketPath,
    type: "overview",
    root: root,
    apiUrl: root.dataset.apiUrl,
    loginUrl: root.dataset.loginUrl,
    status: LockstepLive.status(statusEl),
    titles: {
      live: "Live updates over a WebSocket",
      reconnecting: function (ms) {
        return "Connection lost; retrying in " + fmt.seconds(ms / 1000);
      },
      stale: "No live updates for a while: is the ingester running? " +
        "Re-reading the overview every few seconds.",
      signedOut: "Your session ended",
    },
    stale: true,
    reopenOnPageshow: true,
    onMessage: function (message) {
      apply(message, message.seq === 0);
      root.dataset.messages = String(Number(root.dataset.messages || 0) + 1);
    },
    // ``reason`` (gap, reconnect, refused, stale) is kept on the root element with a count
    // of successful re-reads, so an operator (or a test) can see why the page re-read.
    onData: function (data, reason) {
      apply(fromJson(data), true);
      resyncCount += 1;
      root.dataset.resyncs = String(resyncCount);
      root.dataset.resyncReason = reason;
    },
  });
})();
