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

  // The width (CSS px) of `text` as axis `axisIdx` of chart `u` draws it: uPlot keeps its
  // font as [font scaled to the screen, that size in px, the size in CSS px].
  const measure = document.createElement("canvas").getContext("2d");

  function labelWidth(u, axisIdx, text) {
    const font = u.axes[axisIdx].font;
    measure.font = font ? font[0].replace(/[\d.]+px/, font[2] + "px") : "12px sans-serif";
    return measure.measureText(text).width;
  }

  // uPlot's `size` of a side axis that fits its widest label (offsets run to "41,250" and
  // beyond, wider than uPlot's fixed 50 px, which cut them): ticks, a gap, the label.
  function fitLabels(u, values, axisIdx) {
    const axis = u.axes[axisIdx];
    const widest = Math.max(0, ...(values || []).map(function (v) { return labelWidth(u, axisIdx, String(v)); }));
    return Math.ceil(widest) + (axis.ticks && axis.ticks.show !== false ? axis.ticks.size || 10 : 0) + (axis.gap || 5) + 4;
  }

  // Tick steps of an axis of whole things (messages, offsets): 1, 2, 5, 10, 20, 50, …
  // never uPlot's default 2.5, which puts ticks at 2.5 and 12.5 messages.
  const WHOLE_STEPS = [];
  for (let p = 1; p <= 1e15; p *= 10) WHOLE_STEPS.push(p, 2 * p, 5 * p);

  window.LockstepTheme = {
    color: color, axis: axis, labelWidth: labelWidth, fitLabels: fitLabels, wholeSteps: WHOLE_STEPS,
  };
})();
