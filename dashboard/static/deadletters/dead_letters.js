// A group's dead-letter list, for operators: select rows, then "Replay selected",
// "Replay all matching" (the page's filter) or "Discard selected…"; the dialog, its dry
// run and the progress are actions.js's. Once a request finished and its dialog closed,
// the list is loaded again so every status shown is the server's.
(function () {
  "use strict";

  const root = document.getElementById("dead-letters");
  if (!root || !window.LockstepActions) return;

  const url = root.dataset.actionsUrl;
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

  function plural(n, word) { return n + " " + word + (n === 1 ? "" : "s"); }

  function reload() { location.reload(); }

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
        url: url, action: "replay", ids: ids, loginUrl: loginUrl, onClosed: reload,
        what: plural(ids.length, "selected dead letter") + ".",
      });
    });
  }
  if (replayMatching) {
    replayMatching.addEventListener("click", function () {
      LockstepActions.open({
        url: url, action: "replay", filter: filter, loginUrl: loginUrl, onClosed: reload,
        what: describeFilter(),
      });
    });
  }
  if (discardSelected) {
    discardSelected.addEventListener("click", function () {
      const ids = selected();
      LockstepActions.open({
        url: url, action: "discard", ids: ids, loginUrl: loginUrl, onClosed: reload,
        what: plural(ids.length, "selected dead letter") + ". Discarded messages are not handled again.",
      });
    });
  }
  update();
})();
