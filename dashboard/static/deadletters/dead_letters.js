// A group's dead-letter list, for operators: select rows, then "Replay selected",
// "Replay all matching" (the page's filter) or "Discard selected…"; the dialog, its dry
// run and the progress are actions.js's. Once a request finished (and again when its
// dialog closes) the rows shown are re-read from the list's JSON view (data-api-url: this
// very page, filter and cursor included) and updated in place: statuses, what may still be
// selected, the waiting count. The page is not reloaded, so the scroll position, the
// selection of rows left waiting and any open dialog stay.
(function () {
  "use strict";

  const root = document.getElementById("dead-letters");
  if (!root || !window.LockstepActions) return;

  const url = root.dataset.actionsUrl;
  const apiUrl = root.dataset.apiUrl;
  const loginUrl = root.dataset.loginUrl;
  const table = document.getElementById("dl-table");
  const selectAll = document.getElementById("select-all");
  const countEl = document.getElementById("selected-count");
  const replaySelected = document.getElementById("replay-selected");
  const replayMatching = document.getElementById("replay-matching");
  const discardSelected = document.getElementById("discard-selected");
  const filterEl = document.getElementById("dl-filter");
  const filter = filterEl ? JSON.parse(filterEl.textContent) : {};

  function boxes() {
    return table ? Array.from(table.querySelectorAll("input.select-row:not(:disabled)")) : [];
  }

  function selected() {
    return boxes().filter(function (b) { return b.checked; }).map(function (b) { return Number(b.value); });
  }

  function update() {
    const ids = selected();
    const all = boxes();
    countEl.dataset.value = String(ids.length);
    countEl.textContent = ids.length ? ids.length + " selected" : "none selected";
    if (replaySelected) replaySelected.disabled = ids.length === 0;
    if (discardSelected) discardSelected.disabled = ids.length === 0;
    if (selectAll) {
      selectAll.checked = all.length > 0 && ids.length === all.length;
      selectAll.indeterminate = ids.length > 0 && ids.length < all.length;
      selectAll.disabled = all.length === 0;
    }
    for (const b of all) b.closest("tr").classList.toggle("selected", b.checked);
  }

  function describeFilter() {
    const parts = Object.keys(filter).map(function (k) { return k + " " + filter[k]; });
    return parts.length ? "Every dead letter waiting that matches " + parts.join(", ") + "."
      : "Every dead letter of this group that is waiting.";
  }

  function refresh() {
    return fetch(apiUrl, { credentials: "same-origin", headers: { Accept: "application/json" }, cache: "no-store" })
      .then(function (response) {
        if (response.status === 401) { window.location.href = loginUrl; return null; }
        return response.ok ? response.json() : null;
      })
      .then(function (data) { if (data) apply(data); })
      .catch(function () { /* the next action or a reload shows the news */ });
  }

  // The server's statuses for the rows on this page; rows it no longer lists stay as they
  // were (another filter's page), and no row is added (the cursor would move under it).
  function apply(data) {
    const byId = {};
    for (const item of data.items || []) byId[String(item.id)] = item;
    for (const row of table ? table.querySelectorAll("tr.dead-letter-row") : []) {
      const item = byId[row.dataset.id];
      if (!item || item.status === row.dataset.status) continue;
      row.dataset.status = item.status;
      const badge = row.querySelector(".badge");
      if (badge) {
        badge.className = "badge status-" + item.status;
        badge.textContent = item.status.replace(/_/g, " ");
      }
      const box = row.querySelector("input.select-row");
      if (box && item.status !== "dead") {
        box.checked = false;
        box.disabled = true;
        box.title = "only dead letters still waiting can be replayed or discarded";
      }
    }
    const waiting = document.getElementById("count-waiting");
    if (waiting && data.count_waiting !== undefined) {
      waiting.dataset.value = String(data.count_waiting);
      waiting.textContent = String(data.count_waiting);
    }
    if (replayMatching) replayMatching.disabled = !data.count_waiting;
    update();
  }

  if (table) {
    table.addEventListener("change", function (event) {
      if (event.target.classList.contains("select-row")) update();
    });
  }
  if (selectAll) {
    selectAll.addEventListener("change", function () {
      for (const b of boxes()) b.checked = selectAll.checked;
      update();
    });
  }
  if (replaySelected) {
    replaySelected.addEventListener("click", function () {
      const ids = selected();
      LockstepActions.open({
        url: url, action: "replay", ids: ids, loginUrl: loginUrl, onFinished: refresh, onClosed: refresh,
        what: lockstepCount(ids.length, "selected dead letter") + ".",
      });
    });
  }
  if (replayMatching) {
    replayMatching.addEventListener("click", function () {
      LockstepActions.open({
        url: url, action: "replay", filter: filter, loginUrl: loginUrl, onFinished: refresh, onClosed: refresh,
        what: describeFilter(),
      });
    });
  }
  if (discardSelected) {
    discardSelected.addEventListener("click", function () {
      const ids = selected();
      LockstepActions.open({
        url: url, action: "discard", ids: ids, loginUrl: loginUrl, onFinished: refresh, onClosed: refresh,
        what: lockstepCount(ids.length, "selected dead letter") + ". Discarded messages are not handled again.",
      });
    });
  }
  update();
})();
