// The replay / discard dialog of the dead-letter pages: a dry run, then Confirm, then a live
// progress bar over the request's socket with a cancel button, then a summary.
//
// Plain script, no modules: load it (defer) after live_socket.js and before the page script,
// which calls
//
//   LockstepActions.open({
//     url: "/api/v1/groups/<group>/dead-letters/actions",
//     action: "replay" | "discard",
//     ids: [record ids]  or  filter: {topic, queue, key, error, status, since, until},
//     what: "3 selected dead letters",  // said under the title
//     loginUrl: "...",                  // a 401: "signed out" with a link
//     onFinished: function (request) {}, // the request reached done or cancelled
//     onClosed: function (request) {},   // the dialog closed (request: null if not finished)
//   });
//
// One request id per dialog (request_id, 8..64 of [A-Za-z0-9_-]): the dry run and the
// confirmation carry the same one, so a double click, or a retry after a lost answer, is
// the same request to the server and replays once. The socket (/ws/dead-letters/requests/
// <id>/) carries {"type": "progress", "seq", ...the request}; LockstepLive re-reads the
// request's status URL on a gap, a reconnect, or every few seconds while no socket is open.
// The status URL is the source of truth: a message never moves the bar backwards.
(function () {
  "use strict";

  // While no socket is open, the request's status is re-read this often: progress moves
  // at LOCKSTEP_REPLAY_RATE_PER_S, and a second is live to a reader.
  const POLL_MS = 1000;
  // With a socket open, the status is re-read as well every few seconds: the channel layer
  // may drop a message, and the last one (done) must not be the one missing.
  const REFRESH_MS = 4000;
  // At most this many keys are listed in the dry run (the count says how many there are).
  const MAX_KEYS_SHOWN = 50;
  const TERMINAL = ["done", "cancelled"];
  const OUTCOME_WORDS = {
    pending: "pending", in_place: "replayed in place", republished: "re-published",
    discarded: "discarded", missing: "no longer a dead letter", skipped: "skipped",
    failed: "failed",
  };

  const dialog = document.getElementById("action-dialog");
  if (!dialog) return;
  const $ = function (id) { return document.getElementById(id); };
  const title = $("action-title");
  const whatEl = $("action-what");
  const statusEl = $("action-status");
  const dryRunEl = $("dry-run");
  const reasonField = $("reason-field");
  const reasonEl = $("action-reason");
  const progressEl = $("action-progress");
  const bar = $("progress-bar");
  const errorEl = $("action-error");
  const summaryEl = $("action-summary");
  const confirmButton = $("action-confirm");
  const cancelButton = $("action-cancel");
  const stopButton = $("action-stop");
  const closeButton = $("action-close");

  let current = null; // {options, requestId, phase, request, live, finished}

  // ---- requests ----------------------------------------------------------------------

  function newRequestId() {
    const bytes = new Uint8Array(16);
    window.crypto.getRandomValues(bytes); // randomUUID needs a secure context; this does not
    return Array.from(bytes, function (b) { return b.toString(16).padStart(2, "0"); }).join("");
  }

  function csrfToken() {
    const cookie = document.cookie.split("; ").find(function (c) { return c.indexOf("csrftoken=") === 0; });
    if (cookie) return decodeURIComponent(cookie.slice("csrftoken=".length));
    const input = dialog.querySelector("input[name=csrfmiddlewaretoken]");
    return input ? input.value : "";
  }

  // POST JSON; resolves {status, body} (body null when not JSON), rejects on network errors.
  function post(url, payload) {
    return fetch(url, {
      method: "POST",
      credentials: "same-origin",
      headers: { "Content-Type": "application/json", Accept: "application/json", "X-CSRFToken": csrfToken() },
      body: JSON.stringify(payload || {}),
    }).then(function (response) {
      return response.json()
        .catch(function () { return null; })
        .then(function (body) { return { status: response.status, body: body }; });
    });
  }

  function payload(dryRun) {
    const o = current.options;
    const body = { action: o.action, request_id: current.requestId, dry_run: dryRun };
    if (o.ids) body.ids = o.ids; else body.filter = o.filter || {};
    if (o.action === "discard") body.reason = reasonEl.value.trim();
    return body;
  }

  // A refused POST in words; null when the answer is a success.
  function refusal(answer) {
    if (answer.status >= 200 && answer.status < 300) return null;
    const said = answer.body && answer.body.error ? answer.body.error : "";
    if (answer.status === 401) return "You were signed out. Log in again and retry.";
    if (answer.status === 403) return "Your role may not do this" + (said ? ": " + said : ".");
    return (said || "The server answered " + answer.status + ".");
  }

  // ---- the dialog ------------------------------------------------------------------

  function setPhase(phase) {
    current.phase = phase;
    dialog.dataset.phase = phase;
    const running = phase === "running";
    const finished = phase === "finished";
    confirmButton.hidden = running || finished;
    cancelButton.hidden = running || finished;
    stopButton.hidden = !running;
    closeButton.hidden = !finished;
    reasonEl.disabled = phase !== "ready" && phase !== "checking";
  }

  function showError(text) {
    errorEl.textContent = text;
    errorEl.hidden = !text;
  }

  function open(options) {
    if (current && current.live) current.live.stop();
    current = { options: options, requestId: newRequestId(), phase: "checking", request: null, live: null, finished: false };
    dialog.dataset.requestId = current.requestId;
    delete dialog.dataset.seq;
    delete dialog.dataset.socket;
    dialog.dataset.action = options.action;
    title.textContent = options.action === "discard" ? "Discard dead letters" : "Replay dead letters";
    whatEl.textContent = options.what || "";
    statusEl.textContent = "Checking what this would do…";
    dryRunEl.hidden = true;
    progressEl.hidden = true;
    summaryEl.hidden = true;
    showError("");
    reasonField.hidden = options.action !== "discard";
    reasonEl.value = "";
    confirmButton.textContent = options.action === "discard" ? "Discard" : "Replay";
    confirmButton.disabled = true;
    cancelButton.textContent = "Cancel";
    setPhase("checking");
    if (!dialog.open) dialog.showModal();
    dryRun();
  }

  function dryRun() {
    const mine = current;
    post(current.options.url, payload(true)).then(function (answer) {
      if (mine !== current) return;
      const refused = refusal(answer);
      if (refused) {
        statusEl.textContent = "";
        showError(refused);
        setPhase("refused");
        return;
      }
      renderDryRun(answer.body);
      setPhase("ready");
      updateConfirm();
    }).catch(function () {
      if (mine !== current) return;
      statusEl.textContent = "";
      showError("The server could not be reached; nothing was done.");
      setPhase("refused");
    });
  }

  function renderDryRun(d) {
    const count = Number(d.count) || 0;
    const verb = current.options.action === "discard" ? "discard" : "replay";
    if (count) nameTargets(verb, count, d.targets || []);
    else statusEl.textContent = "Nothing to " + verb + ": no dead letter waiting matches.";
    $("dry-run-count").textContent = String(count);
    $("dry-run-skipped").textContent = String(d.skipped || 0);
    $("dry-run-key-count").textContent = String(d.key_count !== undefined ? d.key_count : (d.keys || []).length);
    $("dry-run-queue-count").textContent = String((d.queues || []).length);
    dialog.dataset.dryRunCount = String(count);
    const skipped = $("dry-run-skipped-reasons");
    skipped.replaceChildren();
    for (const s of d.skipped_reasons || []) {
      skipped.append(el("li", "", "Skipped: " + s.count + " " + s.reason + "."));
    }
    skipped.hidden = !skipped.children.length;
    const notes = $("dry-run-notes");
    notes.replaceChildren();
    for (const note of d.order_notes || []) notes.append(el("li", "", note));
    notes.parentElement.hidden = !(d.order_notes || []).length;
    const keys = $("dry-run-keys");
    const listed = (d.keys || []).slice(0, MAX_KEYS_SHOWN);
    keys.replaceChildren();
    for (const k of listed) {
      const tr = el("tr");
      tr.append(el("td", "mono", k.key), el("td", "num", String(k.count)));
      keys.append(tr);
    }
    const keyCount = Number(d.key_count) || listed.length;
    $("dry-run-keys-box").querySelector("summary").textContent = keyCount > listed.length
      ? "Keys (the " + listed.length + " with the most messages, of " + keyCount + ")"
      : "Keys";
    $("dry-run-keys-box").hidden = listed.length === 0;
    $("dry-run-queues-box").hidden = !(d.queues || []).length;
    const queues = $("dry-run-queues");
    queues.replaceChildren();
    for (const q of d.queues || []) {
      const tr = el("tr");
      tr.append(el("td", "", q.topic), el("td", "num", String(q.queue)), el("td", "num", String(q.count)));
      queues.append(tr);
    }
    dryRunEl.hidden = false;
    current.dryRunCount = count;
  }

  // "Discard 3 dead letters: order-100 @ 17, order-900 @ 22, order-7 @ 5." — what a
  // confirmation acts on, by key and offset: the dry run names the first ones (in the order
  // they are acted on) and the count says how many more, so a mis-ticked row shows here.
  function nameTargets(verb, count, targets) {
    const named = targets.slice(0, count);
    const head = verb.charAt(0).toUpperCase() + verb.slice(1) + " " + lockstepCount(count, "dead letter");
    statusEl.replaceChildren(head + (named.length ? ": " : "."));
    named.forEach(function (t, i) {
      const item = el("span", "target");
      item.dataset.key = t.key;
      item.dataset.offset = String(t.offset);
      item.title = "topic " + t.topic + ", queue " + t.queue + ", dead letter " + t.id;
      item.append(el("code", "", t.key), " @ " + t.offset);
      statusEl.append(item, i < named.length - 1 ? ", " : "");
    });
    const more = count - named.length;
    if (named.length) statusEl.append(more > 0 ? " … and " + more + " more." : ".");
  }

  function updateConfirm() {
    if (!current || current.phase !== "ready") return;
    const needsReason = current.options.action === "discard";
    confirmButton.disabled = !current.dryRunCount || (needsReason && !reasonEl.value.trim());
  }

  function confirm() {
    if (!current || current.phase !== "ready") return;
    const mine = current;
    setPhase("sending");
    confirmButton.disabled = true;
    statusEl.textContent = "Sending…";
    post(current.options.url, payload(false)).then(function (answer) {
      if (mine !== current) return;
      const refused = refusal(answer);
      if (refused) {
        statusEl.textContent = "";
        showError(refused);
        setPhase("ready");
        updateConfirm();
        return;
      }
      start(answer.body);
    }).catch(function () {
      if (mine !== current) return;
      // The request may have reached the server: the same id again is the same request.
      showError("The server could not be reached. Confirm again: it will not be done twice.");
      setPhase("ready");
      updateConfirm();
    });
  }

  // ---- progress ------------------------------------------------------------------------

  function start(request) {
    setPhase("running");
    progressEl.hidden = false;
    statusEl.textContent = current.options.action === "discard" ? "Discarding…" : "Replaying…";
    render(request);
    if (current.finished) return;
    const mine = current;
    current.live = LockstepLive.connect({
      path: request.socket_path,
      type: "progress",
      apiUrl: request.status_url,
      loginUrl: current.options.loginUrl,
      pollMs: POLL_MS,
      refreshMs: REFRESH_MS,
      root: dialog, // data-seq: the last progress message's seq
      onOpen: function () { dialog.dataset.socket = "open"; },
      onClose: function () { dialog.dataset.socket = "closed"; },
      onMessage: function (message) { if (mine === current) render(message); },
      onData: function (data) { if (mine === current) render(data); },
    });
    current.statusUrl = request.status_url;
  }

  function render(r) {
    if (!r || current.finished) return;
    const previous = current.request;
    // Answers can cross (socket, re-read): never go back from a higher done count.
    if (previous && Number(r.done) < Number(previous.done) && TERMINAL.indexOf(r.state) < 0) return;
    current.request = r;
    current.statusUrl = r.status_url || current.statusUrl;
    const total = Number(r.total) || 0;
    const done = Number(r.done) || 0;
    bar.max = Math.max(total, 1);
    bar.value = done;
    dialog.dataset.done = String(done);
    dialog.dataset.total = String(total);
    dialog.dataset.state = r.state || "";
    $("progress-text").textContent = done + " / " + total;
    const state = $("progress-state");
    state.textContent = r.state || "";
    state.className = "badge request-" + (r.state || "");
    renderOutcomes($("progress-outcomes"), r.outcomes || {});
    if (TERMINAL.indexOf(r.state) >= 0) finish(r);
  }

  function renderOutcomes(list, outcomes) {
    list.replaceChildren();
    for (const name of Object.keys(outcomes)) {
      if (!outcomes[name]) continue;
      const item = el("li", "chip outcome-" + name, (OUTCOME_WORDS[name] || name) + " " + outcomes[name]);
      item.dataset.outcome = name;
      item.dataset.count = String(outcomes[name]);
      list.append(item);
    }
  }

  function finish(r) {
    current.finished = true;
    if (current.live) current.live.stop();
    setPhase("finished");
    statusEl.textContent = "";
    summaryEl.textContent = summary(r);
    summaryEl.hidden = false;
    if (current.options.onFinished) current.options.onFinished(r);
  }

  function summary(r) {
    const parts = [];
    for (const name of Object.keys(r.outcomes || {})) {
      if (r.outcomes[name]) parts.push(r.outcomes[name] + " " + (OUTCOME_WORDS[name] || name));
    }
    const what = parts.length ? parts.join(", ") : "nothing done";
    if (r.state === "cancelled") {
      const left = (Number(r.total) || 0) - (Number(r.done) || 0);
      return "Cancelled after " + r.done + " of " + r.total + ": " + what + "." +
        (left > 0 ? " The other " + left + " were left as they were." : "");
    }
    return "Done: " + what + ".";
  }

  function stop() {
    if (!current || current.phase !== "running" || !current.statusUrl) return;
    stopButton.disabled = true;
    statusEl.textContent = "Cancelling: the messages not started yet stay dead…";
    const mine = current;
    post(current.statusUrl + "/cancel", {}).then(function (answer) {
      if (mine !== current) return;
      stopButton.disabled = false;
      const refused = refusal(answer);
      if (refused) { showError(refused); return; }
      if (answer.body) render(answer.body);
      if (current.live) current.live.resync("cancel");
    }).catch(function () {
      if (mine !== current) return;
      stopButton.disabled = false;
      showError("The server could not be reached; the request goes on. Try again.");
    });
  }

  function el(tag, className, text) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined) node.textContent = text;
    return node;
  }

  confirmButton.addEventListener("click", confirm);
  cancelButton.addEventListener("click", function () { dialog.close(); });
  stopButton.addEventListener("click", stop);
  closeButton.addEventListener("click", function () { dialog.close(); });
  reasonEl.addEventListener("input", updateConfirm);
  // Escape would hide a running request's progress: it goes on, so the dialog stays.
  dialog.addEventListener("cancel", function (event) {
    if (current && (current.phase === "running" || current.phase === "sending")) event.preventDefault();
  });
  dialog.addEventListener("close", function () {
    if (!current) return;
    const closed = current;
    current = null;
    if (closed.live) closed.live.stop();
    dialog.dataset.phase = "closed";
    if (closed.options.onClosed) closed.options.onClosed(closed.finished ? closed.request : null);
  });

  window.LockstepActions = { open: open, summary: summary, OUTCOME_WORDS: OUTCOME_WORDS };
})();
