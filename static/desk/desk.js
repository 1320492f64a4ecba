// The desk's only script besides htmx (no inline script: the
// Content-Security-Policy allows only our static files). A checkbox with
// data-select-all="NAME" checks or clears every input[name=NAME] of its form;
// delegated, so it works on rows htmx swaps in too.
document.addEventListener("click", function (event) {
  var box = event.target;
  if (!(box instanceof HTMLInputElement) || !box.dataset.selectAll || !box.form) return;
  box.form.querySelectorAll('input[name="' + box.dataset.selectAll + '"]').forEach(function (c) {
    c.checked = box.checked;
  });
});
