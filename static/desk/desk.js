/* Desk behaviours that need a script (no inline script: a Content Security
 * Policy allows only our own static files). Pages work without it.
 *
 * Bulk selection (a form marked data-bulk, e.g. /queue/): the submit button
 * shows how many rows are selected and is disabled while none is; the
 * "select all" box (data-pick-all) ticks every row and shows a partial
 * selection. Event delegation, so rows swapped in by htmx need nothing. */
(function () {
  "use strict";

  function boxes(form) {
    return Array.prototype.slice.call(form.querySelectorAll('input[type="checkbox"][name="jobs"]'));
  }

  function update(form) {
    var all = boxes(form);
    var n = all.filter(function (b) { return b.checked; }).length;
    form.querySelectorAll("[data-bulk-count]").forEach(function (el) {
      el.textContent = " (" + n + ")";
      el.hidden = false;
    });
    form.querySelectorAll("[data-bulk-submit]").forEach(function (button) {
      button.disabled = n === 0;
      button.setAttribute("aria-label", n === 0 ? "Re-run selected: none selected"
        : "Re-run the " + n + " selected range" + (n === 1 ? "" : "s"));
    });
    form.querySelectorAll("[data-bulk-status]").forEach(function (el) {
      el.textContent = n === 0 ? "Select the ranges to re-run." : n + " of " + all.length + " selected";
    });
    var pickAll = form.querySelector("[data-pick-all]");
    if (pickAll) {
      pickAll.checked = all.length > 0 && n === all.length;
      pickAll.indeterminate = n > 0 && n < all.length;
    }
  }

  function updateAll() {
    document.querySelectorAll("form[data-bulk]").forEach(update);
  }

  document.addEventListener("change", function (event) {
    var target = event.target;
    var form = target.closest ? target.closest("form[data-bulk]") : null;
    if (!form) return;
    if (target.matches("[data-pick-all]")) {
      boxes(form).forEach(function (b) { b.checked = target.checked; });
    }
    update(form);
  });

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", updateAll);
  } else {
    updateAll();
  }
  // Filtering, paging and the kept rows' polling swap rows in and out.
  document.addEventListener("htmx:afterSettle", updateAll);
})();
