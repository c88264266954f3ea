// One dead letter, for operators: Replay / Discard… as a request with this one id (dry run,
// Confirm, outcome: actions.js). The status, history and hold above are refresh.js's: the
// page re-reads itself every few seconds, so the status moves on to succeeded (or dead
// again) as the runtime reports it. The buttons follow the status shown.
(function () {
  "use strict";

  const root = document.getElementById("dead-letter");
  if (!root || !window.LockstepActions) return;

  const id = Number(root.dataset.id);
  const replayButton = document.getElementById("replay-one");
  const discardButton = document.getElementById("discard-one");
  const note = document.getElementById("dl-actions-note");
  const outcome = document.getElementById("action-outcome");
  const state = document.getElementById("dl-state");

  function status() {
    const badge = document.getElementById("dl-status");
    return badge ? badge.dataset.status : root.dataset.status;
  }

  // Only a dead letter still waiting can be acted on; the server refuses the rest anyway.
  function follow() {
    const waiting = status() === "dead";
    root.dataset.status = status();
    if (replayButton) replayButton.disabled = !waiting;
    if (discardButton) discardButton.disabled = !waiting;
    if (note && !waiting) note.textContent = "Only a dead letter still waiting can be replayed or discarded.";
  }

  function finished(request) {
    const words = LockstepActions.OUTCOME_WORDS;
    const item = (request.items || []).find(function (i) {
      return Number(i.record_id !== undefined ? i.record_id : i.id) === id;
    });
    const name = item ? item.outcome : Object.keys(request.outcomes || {}).find(function (k) {
      return request.outcomes[k] > 0;
    });
    outcome.dataset.outcome = name || "";
    outcome.textContent = name
      ? "Outcome: " + (words[name] || name) + (item && item.detail ? " (" + item.detail + ")" : "") + "."
      : LockstepActions.summary(request);
    outcome.hidden = false;
  }

  function act(action) {
    LockstepActions.open({
      url: root.dataset.actionsUrl,
      action: action,
      ids: [id],
      loginUrl: root.dataset.loginUrl,
      what: "Dead letter " + id + " (key " + document.getElementById("dl-key").textContent.trim() + ").",
      onFinished: finished,
    });
  }

  if (replayButton) replayButton.addEventListener("click", function () { act("replay"); });
  if (discardButton) discardButton.addEventListener("click", function () { act("discard"); });
  if (state) new MutationObserver(follow).observe(state, { childList: true, subtree: true });
  follow();
})();
