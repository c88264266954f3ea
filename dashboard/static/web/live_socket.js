// Live pages' WebSocket: connect, reconnect with backoff, sequence gaps, staleness, re-reads
// of the JSON view, the polling fallback and the live status indicator, in one place.
//
// The sockets carry hints (dashboard/web/push_socket.py, LiveConsumer): {"type", "seq",
// ...}. Seq 0 is a fresh snapshot sent on connect; the pushes then count up by one. Any
// other step (a lost message, or a restarted publisher's skipped number) is a gap: hints
// may have been lost, so the page re-reads its JSON view, the source of truth. A reconnect
// is handled the same way. Sockets without a sequence (sequenced: false, the alert badge)
// get every message of their type and the reconnects. Plain script, no modules: base.html
// loads it (defer) on every signed-in page, before the page scripts.
//
//   const live = LockstepLive.connect({
//     path: root.dataset.socketPath,    // socket path; empty, or no WebSocket: no socket
//     type: "overview",                 // messages of any other type are ignored
//     sequenced: true,                  // track seq and detect gaps (default true)
//     root: root,                       // gets data-seq, the last seq seen
//     apiUrl: root.dataset.apiUrl,      // the JSON view, re-read on gap/reconnect/...
//     loginUrl: root.dataset.loginUrl,  // a 401 from the JSON view: "signed out" link
//     status: LockstepLive.status(document.getElementById("live-status")),
//     titles: { live: "...", reconnecting: function (ms) {...}, stale: "...", signedOut: "..." },
//     stale: true,                      // no hint for STALE_AFTER_MS: "stale", re-read
//     pollMs: 2000,                     // no open socket: re-read every pollMs
//     refreshMs: 10000,                 // open socket: re-read every refreshMs as well
//     backoffMinMs, backoffMaxMs,       // reconnect delay bounds (defaults below)
//     closeOnPagehide: true,            // close the socket when the page is hidden
//     reopenOnPageshow: false,          // ...and open it again back from the bfcache
//     onMessage: function (message) {}, // a hint in order (seq 0 included)
//     onData: function (data, reason) {}, // the JSON view, re-read because of reason
//     onOpen: function () {}, onClose: function () {},
//   });
//   live.resync(reason); live.isOpen(); live.isStopped(); live.stop();
//
// Re-read reasons: "gap", "reconnect", "stale", "refused" (a handshake that never opened),
// "poll" and "refresh". Without pollMs, the indicator says "reconnecting" while the socket
// is down and a refused handshake re-reads the JSON view at once (to tell a signed-out
// session, 401, from a server that is down); with pollMs the polls do both: the indicator
// says "live (polling)" or "reconnecting" after each.
//
// Also: LockstepLive.status(el) (the indicator: set, signedOut, state) and
// LockstepLive.fetchJson(url, what, onSignedOut) (GET JSON, no cache; 401: onSignedOut()
// and null; other errors reject).
(function () {
  "use strict";

  // Reconnect backoff doubles from 0.5 s to 10 s: a restarted server is found within a
  // second or two, and a long outage costs one attempt every 10 s.
  const BACKOFF_MIN_MS = 500;
  const BACKOFF_MAX_MS = 10000;
  // The ingester pushes at least every 2 s (IDLE_PUSH_SECONDS); three missed pushes mean
  // it is not running, so the page says so and falls back to re-reading the JSON view.
  const STALE_AFTER_MS = 6000;
  // How often staleness is checked: a second is precise enough for a 6 s threshold.
  const STALE_CHECK_MS = 1000;

  // ---- the status indicator ------------------------------------------------------------

  // ``el`` is #live-status: data-state drives its colour, .label its text. A title is set
  // only when one is given (pages without titles keep the template's).
  function status(el) {
    const label = el ? el.querySelector(".label") : null;
    function set(state, text, title) {
      if (!el) return;
      el.dataset.state = state;
      label.textContent = text;
      if (title) el.title = title;
    }
    return {
      set: set,
      state: function () { return el ? el.dataset.state : undefined; },
      signedOut: function (loginUrl, title) {
        set("signed-out", "", title);
        if (!label) return;
        const link = document.createElement("a");
        link.href = loginUrl;
        link.textContent = "signed out — log in again";
        label.replaceChildren(link);
      },
    };
  }

  // ---- the JSON views --------------------------------------------------------------------

  function fetchJson(url, what, onSignedOut) {
    return fetch(url, {
      headers: { Accept: "application/json" }, credentials: "same-origin", cache: "no-store",
    }).then(function (response) {
      if (response.status === 401) {
        if (onSignedOut) onSignedOut();
        return null;
      }
      if (!response.ok) throw new Error(what + " API answered " + response.status);
      return response.json();
    });
  }

  // ---- the socket --------------------------------------------------------------------------

  function connect(options) {
    const type = options.type;
    const sequenced = options.sequenced !== false;
    const indicator = options.status || null;
    const titles = options.titles || {};
    const polling = Boolean(options.pollMs);
    const backoffMin = options.backoffMinMs || BACKOFF_MIN_MS;
    const backoffMax = options.backoffMaxMs || BACKOFF_MAX_MS;
    const onMessage = options.onMessage || function () {};
    const canOpen = Boolean(options.path) && Boolean(window.WebSocket);

    let socket = null;
    let stopped = false;
    let everOpened = false;
    let lastSeq = null;
    let backoffMs = backoffMin;
    let retryTimer = null;
    let lastHintAt = 0;
    let lastStaleResync = 0;
    let reading = null;
    let queuedReason = null;

    function show(state) {
      if (!indicator) return;
      if (state === "live") indicator.set("live", "live", titles.live);
      else if (state === "stale") indicator.set("stale", "stale", titles.stale);
      else if (state === "polling") indicator.set("polling", "live (polling)", titles.polling);
      else if (state === "reconnecting") {
        indicator.set("reconnecting", "reconnecting",
          titles.reconnecting ? titles.reconnecting(backoffMs) : undefined);
      }
    }

    function isOpen() { return socket !== null && socket.readyState === WebSocket.OPEN; }

    function stop() {
      stopped = true;
      clearTimeout(retryTimer);
      if (socket) socket.close();
    }

    function signOut() {
      stop();
      if (indicator) indicator.signedOut(options.loginUrl, titles.signedOut);
    }

    // One read at a time. A reason that comes while a read is in flight is not answered by
    // it: that read may have been taken before the change the reason points at (a gap seen
    // mid-read). So one more read follows, for the latest such reason.
    function resync(reason) {
      if (!options.apiUrl) return null;
      if (stopped) return reading;
      if (reading) {
        queuedReason = reason;
        return reading;
      }
      reading = fetchJson(options.apiUrl, type, signOut)
        .then(function (data) {
          if (!data) return;
          if (options.onData) options.onData(data, reason);
          if (polling && !isOpen()) show("polling");
        })
        // The server may be down; the next hint, reconnect, poll or stale check tries again.
        .catch(function () { if (polling && !isOpen()) show("reconnecting"); })
        .finally(function () {
          reading = null;
          const next = queuedReason;
          queuedReason = null;
          if (next !== null) resync(next);
        });
      return reading;
    }

    function open() {
      if (stopped || !canOpen) return;
      const scheme = location.protocol === "https:" ? "wss://" : "ws://";
      const ws = new WebSocket(scheme + location.host + options.path);
      let opened = false;
      socket = ws;
      ws.onopen = function () {
        opened = true;
        lastSeq = null;
        lastHintAt = Date.now();
        show("live");
        if (options.onOpen) options.onOpen();
        // Hints sent while we were away are gone: read the whole state again.
        if (everOpened) resync("reconnect");
        everOpened = true;
      };
      ws.onmessage = function (event) {
        let message;
        try { message = JSON.parse(event.data); } catch (e) { return; }
        if (!message || message.type !== type) return;
        // Only a socket that delivers resets the backoff: one the server accepts and then
        // drops at once must not be retried every half second.
        backoffMs = backoffMin;
        lastHintAt = Date.now();
        if (indicator && indicator.state() === "stale") show("live");
        if (!sequenced) { onMessage(message); return; }
        const seq = Number(message.seq);
        if (options.root) options.root.dataset.seq = String(seq);
        if (seq === 0) {
          // The snapshot taken on connect; the ingester's next push sets the baseline.
          lastSeq = null;
          onMessage(message);
          return;
        }
        const gap = lastSeq !== null && seq !== lastSeq + 1;
        lastSeq = seq;
        if (gap) resync("gap"); else onMessage(message);
      };
      ws.onclose = function () {
        if (socket === ws) socket = null;
        if (options.onClose) options.onClose();
        if (stopped) return;
        if (!polling) {
          // A refused handshake looks like any failed connect; the JSON view tells a
          // signed-out session (401) apart from a server that is down.
          if (!opened) resync("refused");
          show("reconnecting");
        }
        clearTimeout(retryTimer);
        retryTimer = setTimeout(open, backoffMs);
        backoffMs = Math.min(backoffMs * 2, backoffMax);
      };
    }

    function checkStale() {
      if (stopped || !isOpen()) return;
      const now = Date.now();
      if (now - lastHintAt < STALE_AFTER_MS) return;
      show("stale");
      if (now - lastStaleResync >= STALE_AFTER_MS) {
        lastStaleResync = now;
        resync("stale");
      }
    }

    open();
    if (options.stale) setInterval(checkStale, STALE_CHECK_MS);
    if (polling) setInterval(function () { if (!isOpen()) resync("poll"); }, options.pollMs);
    if (options.refreshMs) {
      setInterval(function () { if (isOpen()) resync("refresh"); }, options.refreshMs);
    }
    if (options.closeOnPagehide !== false) window.addEventListener("pagehide", stop);
    if (options.reopenOnPageshow) {
      window.addEventListener("pageshow", function (event) {
        // Back from the back/forward cache: the socket is gone, so start over.
        if (!event.persisted) return;
        stopped = false;
        everOpened = true;
        backoffMs = backoffMin;
        open();
      });
    }

    return {
      resync: resync,
      isOpen: isOpen,
      isStopped: function () { return stopped; },
      stop: stop,
    };
  }

  window.LockstepLive = {
    connect: connect,
    status: status,
    fetchJson: fetchJson,
    BACKOFF_MIN_MS: BACKOFF_MIN_MS,
    BACKOFF_MAX_MS: BACKOFF_MAX_MS,
    STALE_AFTER_MS: STALE_AFTER_MS,
  };
})();
