// The colours of the current scheme (lockstep.css's variables, light or dark by
// prefers-color-scheme) for what CSS cannot colour: uPlot's canvas. Plain script, no
// modules: window.LockstepTheme.
(function () {
  "use strict";

  function color(name) {
    return getComputedStyle(document.documentElement).getPropertyValue("--" + name).trim();
  }

  // uPlot axis options drawn in the scheme's colours.
  function axis(extra) {
    return Object.assign({ stroke: color("muted"), grid: { stroke: color("grid") }, ticks: { stroke: color("grid") } }, extra || {});
  }

  window.LockstepTheme = { color: color, axis: axis };
})();
