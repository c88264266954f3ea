// Reports page: the day's hourly charts (uPlot), the queue selector that switches them to
// one queue's series, and "Run now" with the run's progress.
//
// The page is server-rendered from the same data as GET /api/v1/analytics/report (embedded
// as #report-data). Choosing a queue re-reads that JSON view with ?queue= and redraws the
// charts (the address follows, so it can be shared). "Run now" POSTs to
// /api/v1/analytics/runs with the CSRF token; the run's state is then polled from
// /api/v1/analytics/runs/<id> until it is no longer queued or running, and the page reloads
// to show the new report (or the failure).
(function () {
  "use strict";

  const root = document.getElementById("report");
  const initial = document.getElementById("report-data");
  if (!root || !initial) return;

  // A run's stages last seconds to minutes: polling every 1.5 s shows each one without
  // loading the server.
  const POLL_MS = 1500;
  const HOURS = Array.from({ length: 24 }, function (_, h) { return h; });
  const CHART_HEIGHT = 240;
  const color = LockstepTheme.color;
  const COLOURS = { p50: color("chart-2"), p95: color("chart-1"), p99: color("bad"), max: color("muted") };

  let data = JSON.parse(initial.textContent);
  const charts = {};
  window.lockstepReportCharts = charts;

  // ---- formatting ----------------------------------------------------------------------

  // Counts and durations as the server writes them (format.js).
  const fmt = window.LockstepFormat;
  const compactFormat = new Intl.NumberFormat("en-US", { notation: "compact", maximumFractionDigits: 1 });
  // Tick steps for a seconds axis: whole seconds, minutes and hours, so every label is short.
  const SECOND_STEPS = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400];

  // Hour h of the report's UTC day, as the viewer's zone shows it ("19:00", "05:30").
  function hourLabel(h) { return LockstepTime.format(Date.parse(data.day + "T00:00:00Z") + h * 3600000, "hm"); }

  // An axis label: "45 s", "10 min", "2 h".
  function secondsTick(s) {
    if (s < 60) return s + " s";
    if (s < 3600) return Math.round(s / 60 * 10) / 10 + " min";
    return Math.round(s / 3600 * 10) / 10 + " h";
  }

  // Messages are whole: ticks at whole numbers only.
  function countAxis() {
    return LockstepTheme.axis({
      incrs: LockstepTheme.wholeSteps,
      values: function (u, splits) { return splits.map(function (v) { return compactFormat.format(v); }); },
    });
  }

  // ---- the charts ----------------------------------------------------------------------

  // One value per hour of the day from the report's hourly rows; hours without a row are
  // gaps (null), not zeros: no sample is not "no lag".
  function perHour(rows, field) {
    const byHour = new Map(rows.map(function (r) { return [r.hour, r[field]]; }));
    return HOURS.map(function (h) { return byHour.has(h) ? byHour.get(h) : null; });
  }

  function hourAxis() {
    return LockstepTheme.axis({
      incrs: [1, 2, 3, 6],
      values: function (u, splits) { return splits.map(hourLabel); },
    });
  }

  // Hours without a row stay gaps, but every hour with one is a filled dot, always drawn:
  // an hour alone between gaps is a line of no length, which only its dot shows.
  function line(label, colour, extra) {
    return Object.assign({ label: label, stroke: colour, width: 2, spanGaps: false,
      points: { show: true, size: 7, width: 1, fill: colour, stroke: colour } }, extra || {});
  }

  function lagSeries(prefix, unit) {
    const value = unit === "s" ? function (u, v) { return fmt.seconds(v); }
      : function (u, v) { return fmt.count(v); };
    return ["p50", "p95", "p99", "max"].map(function (p) {
      return line(p, COLOURS[p], { value: value, width: p === "p99" ? 2.5 : 1.5,
        dash: p === "max" ? [4, 4] : undefined });
    });
  }

  function specs(rows) {
    const threshold = data.lag_threshold_s;
    const bars = window.uPlot.paths && window.uPlot.paths.bars;
    return {
      "lag-chart": {
        series: lagSeries("lag", "messages"),
        columns: ["lag_p50", "lag_p95", "lag_p99", "lag_max"].map(function (f) { return perHour(rows, f); }),
        axis: countAxis(),
      },
      "time-lag-chart": {
        series: lagSeries("time_lag", "s").concat([
          line("threshold", color("warn"), { width: 1, dash: [6, 4], points: { show: false },
            value: function () { return fmt.seconds(threshold); } }),
        ]),
        columns: ["time_lag_p50", "time_lag_p95", "time_lag_p99", "time_lag_max"]
          .map(function (f) { return perHour(rows, f); })
          .concat([HOURS.map(function () { return threshold; })]),
        axis: LockstepTheme.axis({ incrs: SECOND_STEPS, values: function (u, splits) { return splits.map(secondsTick); }, size: 60 }),
      },
      "throughput-chart": {
        series: [
          { label: "produced", stroke: color("chart-1"), fill: color("chart-1-fill"), width: 1,
            paths: bars ? bars({ size: [0.38, 40], align: -1 }) : undefined, points: { show: false },
            value: function (u, v) { return fmt.count(v); } },
          { label: "consumed", stroke: color("ok"), fill: color("ok-fill"), width: 1,
            paths: bars ? bars({ size: [0.38, 40], align: 1 }) : undefined, points: { show: false },
            value: function (u, v) { return fmt.count(v); } },
        ],
        columns: [perHour(rows, "produced"), perHour(rows, "consumed")],
        axis: countAxis(),
        zero: true,
      },
    };
  }

  function width(el) { return Math.max(280, el.clientWidth); }

  function draw() {
    if (!window.uPlot) return;
    const rows = (data.hourly || {}).rows || [];
    const all = specs(rows);
    for (const id of Object.keys(all)) {
      const el = document.getElementById(id);
      if (!el) continue;
      const spec = all[id];
      const cols = [HOURS].concat(spec.columns);
      if (charts[id]) charts[id].destroy();
      charts[id] = new window.uPlot({
        width: width(el), height: CHART_HEIGHT,
        scales: {
          x: { time: false, range: [-0.5, 23.5] },
          y: spec.zero ? { range: function (u, min, max) { return [0, Math.max(1, max) * 1.1]; } } : {},
        },
        series: [{ label: "hour (" + LockstepTime.zone + ")", value: function (u, v) { return v === null ? "—" : hourLabel(v); } }]
          .concat(spec.series),
        axes: [hourAxis(), Object.assign({}, spec.axis)],
        legend: { live: true },
      }, cols, el);
      const points = spec.columns[0].filter(function (v) { return v !== null; }).length;
      el.dataset.points = String(points);
    }
  }

  window.addEventListener("resize", function () {
    for (const id of Object.keys(charts)) {
      const el = document.getElementById(id);
      charts[id].setSize({ width: width(el), height: CHART_HEIGHT });
    }
  });

  // ---- the queue selector --------------------------------------------------------------

  const queueSelect = document.getElementById("queue-select");

  function reportUrl(queue) {
    const url = new URL(root.dataset.apiUrl, window.location.href);
    if (queue === "") url.searchParams.delete("queue");
    else url.searchParams.set("queue", queue);
    return url;
  }

  function pageUrl(queue) {
    const url = new URL(window.location.href);
    if (queue === "") url.searchParams.delete("queue");
    else url.searchParams.set("queue", queue);
    return url;
  }

  if (queueSelect) {
    queueSelect.addEventListener("change", function () {
      const queue = queueSelect.value;
      root.dataset.loading = "true";
      fetch(reportUrl(queue), { headers: { Accept: "application/json" }, credentials: "same-origin" })
        .then(function (response) {
          if (response.status === 401) { window.location.href = root.dataset.loginUrl; return null; }
          return response.json().then(function (body) {
            if (!response.ok) throw new Error(body.error || response.statusText);
            return body;
          });
        })
        .then(function (body) {
          if (!body) return;
          data = body;
          draw();
          const label = body.hourly.queue === null ? "whole group" : "queue " + body.hourly.queue;
          document.querySelectorAll(".series-of").forEach(function (e) { e.textContent = label; });
          window.history.replaceState(null, "", pageUrl(queue));
          root.dataset.seriesQueue = body.hourly.queue === null ? "" : String(body.hourly.queue);
        })
        .catch(function (error) { showRunError("Could not load the queue's series: " + error.message); })
        .finally(function () { delete root.dataset.loading; });
    });
  }

  // ---- Run now and the run's progress ----------------------------------------------------

  const runForm = document.getElementById("run-now");
  const runButton = document.getElementById("run-now-button");
  const runState = document.getElementById("run-state");
  let polling = null;

  function csrfToken() {
    const cookie = document.cookie.split("; ").find(function (c) { return c.indexOf("csrftoken=") === 0; });
    if (cookie) return decodeURIComponent(cookie.slice("csrftoken=".length));
    const input = runForm.querySelector("input[name=csrfmiddlewaretoken]");
    return input ? input.value : "";
  }

  function showRunError(message) {
    let box = document.getElementById("run-message");
    if (!box) {
      box = document.createElement("p");
      box.id = "run-message";
      box.className = "run-error";
      box.setAttribute("role", "alert");
      document.getElementById("run-panel").append(box);
    }
    box.textContent = message;
  }

  function showRun(run) {
    runState.hidden = false;
    runState.dataset.status = run.status;
    runState.dataset.runId = String(run.id);
    runState.dataset.stateUrl = run.links.state;
    const badge = document.getElementById("run-status");
    badge.textContent = run.status;
    badge.className = "badge run-status run-" + run.status;
    document.getElementById("run-id").textContent = String(run.id);
    document.getElementById("run-progress").value = run.progress;
    document.getElementById("run-percent").textContent = run.progress + "%";
    document.getElementById("run-stage").textContent = run.stage || "waiting for a worker";
    if (runButton) {
      runButton.disabled = run.active;
      runButton.title = run.active ? "a run of this day is under way" : "";
    }
  }

  function poll(url) {
    if (polling) clearTimeout(polling);
    polling = setTimeout(function () {
      fetch(url, { headers: { Accept: "application/json" }, credentials: "same-origin" })
        .then(function (response) {
          if (response.status === 401) { window.location.href = root.dataset.loginUrl; return null; }
          return response.json().then(function (body) {
            if (!response.ok) throw new Error(body.error || response.statusText);
            return body;
          });
        })
        .then(function (run) {
          if (!run) return;
          root.dataset.polls = String(Number(root.dataset.polls || 0) + 1);
          showRun(run);
          // Finished (a report, no data, or failed): the page shows what it left.
          if (!run.active) window.location.reload();
          else poll(url);
        })
        // A missed poll (the server restarting) is tried again; the run goes on regardless.
        .catch(function () { poll(url); });
    }, POLL_MS);
  }

  if (runForm && runButton && !runButton.disabled) {
    runForm.addEventListener("submit", function (event) {
      event.preventDefault();
      runButton.disabled = true;
      fetch(root.dataset.startUrl, {
        method: "POST",
        credentials: "same-origin",
        headers: { "Content-Type": "application/json", Accept: "application/json", "X-CSRFToken": csrfToken() },
        body: JSON.stringify({ day: data.day }),
      })
        .then(function (response) {
          if (response.status === 401) { window.location.href = root.dataset.loginUrl; return; }
          return response.json().then(function (body) {
            if (response.status === 202) {
              showRun(body);
              poll(body.links.state);
            } else if (response.status === 409 && body.run) {
              // Someone (or the nightly task) is already at it: follow that run instead.
              showRun(body.run);
              showRunError("A run of this day is already " + body.run.status + ": run " + body.run.id + ".");
              poll(body.run.links.state);
            } else {
              runButton.disabled = false;
              showRunError(body.error || "The run could not be started (" + response.status + ").");
            }
          });
        })
        .catch(function (error) {
          runButton.disabled = false;
          showRunError("The run could not be started: " + error.message);
        });
    });
  }

  draw();
  if (data.attempt && data.attempt.active) poll(data.attempt.links.state);
})();
