// What the browser tests of every page look at, injected into each page (add_init_script):
// window.lockstepPageChecks.{problems, colours, covered}. Each returns plain data.
window.lockstepPageChecks = {
  // What is wrong with the page's layout and times: a list of sentences, plus how many
  // times and charts were looked at.
  problems: function (patterns) {
    const TIME = new RegExp(patterns.time);
    const UTC_TITLE = new RegExp(patterns.utcTitle);
    const AXIS_TIME = new RegExp(patterns.axisTime);
    const problems = [];
    const name = function (e) {
      const cls = typeof e.className === "string" ? e.className.trim().split(/\s+/).join(".") : "";
      const heading = e.querySelector("h2");
      return e.tagName.toLowerCase() + (e.id ? "#" + e.id : "") + (cls ? "." + cls : "") +
        (heading ? " (" + heading.textContent.trim().slice(0, 40) + ")" : "");
    };
    const root = document.documentElement;
    if (root.scrollWidth > window.innerWidth + 1) {
      problems.push("the page is wider than the window: " + root.scrollWidth);
    }
    const boxes = "main .panel, main .card, main .figure, main .alerts, main table";
    for (const box of document.querySelectorAll(boxes)) {
      if (box.closest("[hidden]") || box.getClientRects().length === 0) continue;
      if (box.scrollWidth > box.clientWidth + 1) {
        problems.push(name(box) + " overflows: " + box.scrollWidth + " > " + box.clientWidth);
      }
    }
    // A header is cut when its text overflows its cell, or when the cell lies (partly)
    // beyond its panel's visible width (a panel that scrolls hides it: "LAST ERRO").
    for (const th of document.querySelectorAll("main th")) {
      if (th.getClientRects().length === 0) continue;
      const label = JSON.stringify(th.textContent.trim());
      if (th.scrollWidth > th.clientWidth + 1) problems.push("header cut: " + label);
      const box = th.closest(".panel, .card, .figure");
      if (!box) continue;
      const edge = box.getBoundingClientRect().left + box.clientLeft + box.clientWidth;
      if (th.getBoundingClientRect().right > edge + 1) problems.push("header cut off by its panel: " + label);
    }
    // The rendered text, and the charts' legends (whose cells innerText may skip).
    const legends = [...document.querySelectorAll(".u-legend td, .u-legend th")].map(function (c) { return c.textContent; });
    const text = document.body.innerText + "\n" + legends.join("\n");
    for (const m of text.matchAll(/\b\d{1,2}:\d{2}(:\d{2})?\s*(am|pm)\b/gi)) problems.push("12-hour time " + m[0]);
    for (const m of text.matchAll(/\b\d{1,2}\/\d{1,2}\/\d{2,4}\b/g)) problems.push("US date " + m[0]);
    const localeInputs = "input[type=date], input[type=datetime-local], input[type=time]";
    for (const input of document.querySelectorAll(localeInputs)) {
      problems.push("locale-formatted input " + input.name);
    }
    const times = document.querySelectorAll("main time, #updated-at time");
    for (const t of times) {
      if (!TIME.test(t.textContent.trim())) problems.push("time " + JSON.stringify(t.textContent));
      if (!UTC_TITLE.test(t.title)) problems.push("time title " + JSON.stringify(t.title));
    }
    const charts = [window.lockstepQueueChart]
      .concat(Object.values(window.lockstepReportCharts || {}))
      .filter(Boolean);
    for (const chart of charts) {
      for (const v of chart.axes[0]._values || []) {
        if (v && !AXIS_TIME.test(String(v))) problems.push("axis label " + JSON.stringify(v));
      }
    }
    // The legend's time (the pointer is over the first chart): as on the axis.
    const legend = document.querySelector(".uplot .u-legend .u-series:first-child .u-value");
    if (legend && !AXIS_TIME.test(legend.textContent.trim())) {
      problems.push("legend time " + JSON.stringify(legend.textContent));
    }
    return { problems: problems, times: times.length, charts: charts.length };
  },

  // Relative luminance of the body's background and text, and contrasts (WCAG 2) of the
  // text on the body, on the first panel, and of a table header on that panel.
  colours: function () {
    const rgb = function (c) { return c.match(/[\d.]+/g).slice(0, 3).map(Number); };
    const lum = function (c) {
      const [r, g, b] = rgb(c).map(function (v) {
        v /= 255;
        return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4);
      });
      return 0.2126 * r + 0.7152 * g + 0.0722 * b;
    };
    const contrast = function (a, b) {
      const [x, y] = [lum(a), lum(b)].sort(function (p, q) { return q - p; });
      return (x + 0.05) / (y + 0.05);
    };
    const body = getComputedStyle(document.body);
    const out = { bg: lum(body.backgroundColor), fg: lum(body.color), body: contrast(body.color, body.backgroundColor) };
    const panel = document.querySelector("main .panel, main .card");
    if (panel) {
      const s = getComputedStyle(panel);
      out.panel = contrast(s.color, s.backgroundColor);
      const header = panel.querySelector("th");
      if (header) out.header = contrast(getComputedStyle(header).color, s.backgroundColor);
    }
    return out;
  },

  // What of the page's content a toast's box overlaps: "main" when it lies over the
  // visible part of the content at all, and each link, button or field under it.
  covered: function () {
    const hit = function (a, b) {
      return a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom;
    };
    const main = document.querySelector("main").getBoundingClientRect();
    const visible = { left: main.left, right: main.right, top: Math.max(0, main.top),
      bottom: Math.min(window.innerHeight, main.bottom) };
    const controls = document.querySelectorAll("main a, main button, main input, main select, main textarea");
    const covered = [];
    for (const toast of document.querySelectorAll(".alert-toast")) {
      const t = toast.getBoundingClientRect();
      if (hit(t, visible)) covered.push("main");
      for (const e of controls) {
        const r = e.getBoundingClientRect();
        if (r.width > 0 && hit(t, r)) covered.push(e.outerHTML.slice(0, 80));
      }
    }
    return covered;
  },
};
