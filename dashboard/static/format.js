// Every duration, count and rate a page's script writes, exactly as the server writes them
// (web/formatting.py: `seconds`, `duration`, `count`, `rate`), so a cell reads the same
// before and after a script re-renders it. Plain script, no modules: window.LockstepFormat.
//
//   LockstepFormat.seconds(4.25)   -> "4.2 s"      seconds(67) -> "1 min 7 s"   null -> "—"
//   LockstepFormat.duration(7980)  -> "2 h 13 min"
//   LockstepFormat.count(4030)     -> "4,030"      count(2.25) -> "2.2"         null -> "—"
//   LockstepFormat.rate(0.25)      -> "0.25/s"     rate(12)    -> "12.0/s"      null -> "—"
(function () {
  "use strict";

  const DASH = "—";

  // A number as Python's float() reads it, or null (what float() refuses: None, "", text).
  function number(value) {
    if (value === null || value === undefined || typeof value === "object") return null;
    if (typeof value === "string" && value.trim() === "") return null;
    const n = Number(value);
    return isFinite(n) ? n : null;
  }

  function negative(x) { return x < 0 || Object.is(x, -0); }

  // Python's f"{x:.{digits}f}": the nearest decimal, a tie (an exactly representable
  // half, such as 0.25 or 0.125) to the even digit; toFixed breaks ties upwards instead.
  function fixed(x, digits) {
    const sign = negative(x) ? "-" : "";
    const a = Math.abs(x);
    if (Number.isInteger(a)) {
      const whole = BigInt(a).toString();
      return sign + (digits ? whole + "." + "0".repeat(digits) : whole);
    }
    // Not whole, so below 2^53: 100 decimals hold every digit a tie could depend on.
    const [whole, fraction] = a.toFixed(100).split(".");
    let kept = BigInt(whole + fraction.slice(0, digits));
    const rest = fraction.slice(digits);
    const half = "5" + "0".repeat(rest.length - 1);
    if (rest > half || (rest === half && kept % 2n === 1n)) kept += 1n;
    const text = kept.toString().padStart(digits + 1, "0");
    return sign + (digits ? text.slice(0, -digits) + "." + text.slice(-digits) : text);
  }

  // Python's "," format option: a comma between each group of three whole digits.
  function grouped(text) {
    const [whole, fraction] = text.split(".");
    const digits = whole.replace(/\B(?=(\d{3})+(?!\d))/g, ",");
    return fraction === undefined ? digits : digits + "." + fraction;
  }

  // "42 s", "4 min 5 s", "5 min", "2 h 13 min", "1 h" (a zero last part left out). Whole
  // seconds as Python's int() cuts them, in BigInt so that no size loses a digit.
  function duration(value) {
    const s = BigInt(Math.trunc(Number(value)));
    if (s < 60n) return s + " s";
    if (s < 3600n) return s / 60n + " min" + (s % 60n ? " " + (s % 60n) + " s" : "");
    const minutes = (s % 3600n) / 60n;
    return s / 3600n + " h" + (minutes ? " " + minutes + " min" : "");
  }

  // A duration in seconds: "0.4 s" below ten seconds, else as `duration`; "—" when unknown.
  function seconds(value) {
    const s = number(value);
    if (s === null) return DASH;
    return s < 10 ? fixed(s, 1) + " s" : duration(s);
  }

  // A count with thousands separators ("12,345"), one decimal when not whole.
  function count(value) {
    const n = number(value);
    if (n === null) return DASH;
    return grouped(fixed(n, Number.isInteger(n) ? 0 : 1));
  }

  // Messages a second: below one, two decimals (a slow group must not read as 0.0/s).
  function rate(value) {
    const n = number(value);
    if (n === null) return DASH;
    return grouped(fixed(n, n > 0 && n < 1 ? 2 : 1)) + "/s";
  }

  window.LockstepFormat = { seconds: seconds, duration: duration, count: count, rate: rate };
})();
