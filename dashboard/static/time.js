// Every time a page's script shows goes through here, as the server's go through the
// `when` template filter (monitor/templatetags/lockstep.py): 24-hour `YYYY-MM-DD HH:MM:SS`
// in the viewer's zone (<body data-time-zone>, the user's choice, UTC by default), with
// the UTC time in the element's title. Plain script, no modules: window.LockstepTime.
(function () {
  "use strict";

  const zone = (document.body && document.body.dataset.timeZone) || "UTC";
  const formats = {};

  function formatter(tz) {
    if (!formats[tz]) {
      formats[tz] = new Intl.DateTimeFormat("en-GB", {
        timeZone: tz, hourCycle: "h23", year: "numeric", month: "2-digit", day: "2-digit",
        hour: "2-digit", minute: "2-digit", second: "2-digit",
      });
    }
    return formats[tz];
  }

  // "2026-11-25 18:19:05" (precision "s"), "…:05.123" ("ms"), "2026-11-25 18:19" ("min"),
  // "18:19:05" ("clock"), "18:19" ("hm") of epoch milliseconds in zone `tz`.
  function format(ms, precision, tz) {
    const p = {};
    formatter(tz || zone).formatToParts(new Date(ms)).forEach(function (part) { p[part.type] = part.value; });
    const clock = p.hour + ":" + p.minute;
    if (precision === "hm") return clock;
    if (precision === "clock") return clock + ":" + p.second;
    const day = p.year + "-" + p.month + "-" + p.day;
    if (precision === "min") return day + " " + clock;
    const text = day + " " + clock + ":" + p.second;
    return precision === "ms" ? text + "." + String(Math.floor(ms) % 1000).padStart(3, "0") : text;
  }

  // A <time> element of `ms`, as the `when` filter renders it; `node` (optional) is
  // filled in place instead of a new element (its content replaced).
  function element(ms, precision, node) {
    const time = node || document.createElement("time");
    if (ms === null || ms === undefined || !isFinite(ms) || ms <= 0) {
      time.textContent = "—";
      time.removeAttribute("datetime");
      time.removeAttribute("title");
      return time;
    }
    time.textContent = format(ms, precision);
    time.setAttribute("datetime", new Date(ms).toISOString());
    time.title = format(ms, precision === "ms" ? "ms" : "s", "UTC") + " UTC";
    return time;
  }

  // uPlot's labels of a time axis in the viewer's zone, 24-hour (seconds on the x axis).
  function axisValues(u, splits) {
    const span = splits.length > 1 ? splits[splits.length - 1] - splits[0] : 0;
    const precision = span > 2 * 86400 ? "min" : splits.length > 1 && splits[1] - splits[0] < 60 ? "clock" : "hm";
    return splits.map(function (s) { return s === null ? "" : format(s * 1000, precision); });
  }

  // Room between the time axis's labels (uPlot's axis `space`, CSS px): the widest label
  // the span can get in the axis's font, and a gap, so that no two labels ever touch
  // ("02:37:0002:37:30"). A 24-hour clock label is the widest below two days.
  const LABEL_GAP = 16;

  function axisSpace(u, axisIdx, min, max) {
    const widest = max - min > 2 * 86400 ? "0000-00-00 00:00" : "00:00:00";
    return Math.ceil(window.LockstepTheme.labelWidth(u, axisIdx, widest)) + LABEL_GAP;
  }

  function legendValue(u, s) { return s === null || s === undefined ? "—" : format(s * 1000, "s"); }

  window.LockstepTime = {
    zone: zone,
    format: format,
    element: element,
    axisValues: axisValues,
    axisSpace: axisSpace,
    legendValue: legendValue,
  };
})();
