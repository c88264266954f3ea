// One rule for every count a page's script writes: "1 dead letter", "2 dead letters",
// "0 retries", "4,030 rows". Plain script, load it (defer) before the page's own script.
//
//   lockstepCount(n, "dead letter")            -> "1 dead letter" / "3 dead letters"
//   lockstepCount(n, "retry", "retries")       -> irregular plurals given in full
(function () {
  "use strict";
  window.lockstepCount = function (n, singular, plural) {
    const number = Number(n) || 0;
    // The number as the server writes it ("4,030"): format.js, loaded by every page first.
    return LockstepFormat.count(number) + " " + (number === 1 ? singular : (plural || singular + "s"));
  };
})();
