// fencepost report: the page's one script (its hash is in the page's policy). It only reads the
// page: a wide picture opens scrolled to the failure; a click on a lease, a call or a row selects
// everything that names the same step or call and brings its row into view; the checkbox hides the
// uneventful steps. Without it the page is whole.
(function () {
  "use strict";
  document.documentElement.classList.add("js");
  var data = JSON.parse(document.getElementById("report-data").textContent);
  var selected = [];
  function select(attr, value, scroll) {
    selected.forEach(function (el) { el.classList.remove("selected"); });
    selected = Array.prototype.slice.call(document.querySelectorAll("[" + attr + "=\"" + value + "\"]"));
    var row = document.getElementById((attr === "data-s" ? "s" : "c") + value);
    if (row) { selected.push(row); }
    selected.forEach(function (el) { el.classList.add("selected"); });
    if (scroll && row) { row.scrollIntoView({ block: "center" }); }
  }
  document.addEventListener("click", function (event) {
    var target = event.target.closest("[data-s], [data-c], tr[id]");
    if (!target) { return; }
    if (target.hasAttribute("data-s")) { select("data-s", target.getAttribute("data-s"), true); }
    else if (target.hasAttribute("data-c")) { select("data-c", target.getAttribute("data-c"), true); }
    else if (/^[sc]\d+$/.test(target.id)) {
      select(target.id[0] === "s" ? "data-s" : "data-c", target.id.slice(1), false);
    }
  });
  var box = document.getElementById("only-notable");
  if (box) {
    box.addEventListener("change", function () {
      document.querySelector(".steps-table").classList.toggle("only-notable", box.checked);
    });
  }
  // A wide picture opens scrolled to what failed: the failing stretch, or the failing step's line.
  var failed = document.querySelector("#stretch-mark, .cursor");
  if (failed) {
    var lanes = failed.closest(".lanes");
    lanes.scrollLeft = Math.max(0, failed.getBBox().x - lanes.clientWidth / 3);
  }
  var history = data.kind === "history";
  var focus = history ? data.failing_call : (data.first_problem || data.recorded_divergence);
  if (focus !== null && focus !== undefined) { select(history ? "data-c" : "data-s", String(focus), false); }
}());
