/* Review mode of the segment page (issue 16): keyboard shortcuts, and the
   claim on the summary given up when the page is left. Loaded from our own
   static files (no inline script), and does nothing outside review mode. */
(function () {
  "use strict";

  function ready(fn) {
    if (document.readyState !== "loading") { fn(); } else { document.addEventListener("DOMContentLoaded", fn); }
  }

  ready(function () {
    var bar = document.getElementById("reviewbar");
    if (!bar) { return; }
    var keys = document.getElementById("keys");
    var keysButton = document.getElementById("show-keys");

    function byId(id) { return document.getElementById(id); }
    function note() { return byId("id_note"); }
    function typing(target) {
      if (!target) { return false; }
      var tag = target.tagName;
      return tag === "TEXTAREA" || tag === "INPUT" || tag === "SELECT" || target.isContentEditable;
    }
    function focusNote() {
      var field = note();
      if (field) { field.focus(); }
    }
    function pick(value) {
      var radio = document.querySelector('#verdict-form input[name="verdict"][value="' + value + '"]');
      if (radio) { radio.checked = true; focusNote(); }
    }
    function press(id) {
      var button = byId(id);
      if (button) { button.click(); }
    }
    function toggleKeys(show) {
      if (!keys) { return; }
      var open = show === undefined ? keys.hidden : show;
      keys.hidden = !open;
      if (keysButton) { keysButton.setAttribute("aria-expanded", open ? "true" : "false"); }
    }
    function saveAndNext() {
      var form = byId("verdict-form");
      var save = byId("save-next");
      if (form && save) {
        if (form.requestSubmit) { form.requestSubmit(save); } else { save.click(); }
      }
    }

    if (keysButton) { keysButton.addEventListener("click", function () { toggleKeys(); }); }

    document.addEventListener("keydown", function (event) {
      if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
        event.preventDefault();
        saveAndNext();
        return;
      }
      if (event.key === "Escape") {
        if (typing(event.target)) { event.target.blur(); }
        toggleKeys(false);
        return;
      }
      if (typing(event.target) || event.altKey || event.ctrlKey || event.metaKey) { return; }
      switch (event.key) {
        case "a": pick("approved"); break;
        case "w": pick("needs_work"); break;
        case "e": focusNote(); break;
        case "n": press("skip-next"); break;
        case "p": press("go-prev"); break;
        case "?": toggleKeys(); break;
        default: return;
      }
      event.preventDefault();
    });

    // Leaving the page gives its claim up at once (the server keeps it only
    // for a short while otherwise). Only this page's own taking of it: the
    // token, read when leaving, since the heartbeat may have renewed it.
    var leaving = false;
    document.addEventListener("submit", function () {
      leaving = true;
      // No heartbeat after this: the server moves the claim on; a late one
      // would only ask for a summary that may have its verdict now.
      var claim = byId("claim");
      if (claim && claim.parentNode) { claim.parentNode.removeChild(claim); }
    });
    window.addEventListener("pagehide", function () {
      var claim = byId("claim");
      var token = claim ? claim.getAttribute("data-token") : "";
      if (!token || !navigator.sendBeacon) { return; }
      if (leaving) { return; }  // a move through the queue: the server released it already
      var data = new FormData();
      data.append("generation", bar.getAttribute("data-generation"));
      data.append("token", token);
      var headers = document.body.getAttribute("hx-headers");
      try { data.append("csrfmiddlewaretoken", JSON.parse(headers)["X-CSRFToken"]); } catch (e) { return; }
      navigator.sendBeacon(bar.getAttribute("data-release-url"), data);
    });
  });
})();
