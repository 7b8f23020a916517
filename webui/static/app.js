// gitsync web view: live content and keyboard navigation. The server
// renders every page; this script only swaps a live page's content when
// the server reports a change, and moves focus with the keyboard.
(function () {
  "use strict";
  var main = document.getElementById("content");
  if (!main) return;

  function filterRows() {
    var input = document.getElementById("filter");
    if (!input) return;
    var q = input.value.trim().toLowerCase();
    document.querySelectorAll("tr[data-row]").forEach(function (row) {
      var hit = q === "" || (row.getAttribute("data-search") || "").toLowerCase().indexOf(q) >= 0;
      row.hidden = !hit;
    });
  }

  // refresh fetches the page's content again and swaps it in, keeping the
  // focused element (by id) and the filter's text.
  var busy = false, again = null;
  // shown is the version the content on screen was read at.
  var shown = main.getAttribute("data-version");
  function refresh(version) {
    if (busy) { again = version; return; }
    busy = true;
    var focused = document.activeElement && document.activeElement.id;
    var filter = document.getElementById("filter");
    var text = filter ? filter.value : "";
    // The same address (an action's notice stays), content only.
    var url = location.pathname + (location.search ? location.search + "&" : "?") + "fragment=1";
    fetch(url, { headers: { "Accept": "text/html" }, cache: "no-store" })
      .then(function (r) { return r.ok || r.status === 404 ? r.text() : Promise.reject(r.status); })
      .then(function (html) {
        main.innerHTML = html;
        var f = document.getElementById("filter");
        if (f) { f.value = text; filterRows(); }
        var el = focused && document.getElementById(focused);
        if (el) el.focus();
        document.body.setAttribute("data-version", version);
        shown = version;
      })
      .catch(function () {})
      .finally(function () {
        busy = false;
        if (again !== null) { var next = again; again = null; refresh(next); }
      });
  }

  if (main.hasAttribute("data-live") && window.EventSource) {
    var timer = null;
    var es = new EventSource(main.getAttribute("data-live"));
    // The stream's first word is the current version: a change between
    // the page's read and this connection is fetched now, not missed.
    es.addEventListener("hello", function (e) {
      document.body.setAttribute("data-live-since", e.data);
      if (e.data !== shown) refresh(e.data);
    });
    es.onmessage = function (e) {
      clearTimeout(timer);
      timer = setTimeout(function () { refresh(e.data); }, 100);
    };
  }

  main.addEventListener("input", function (e) {
    if (e.target && e.target.id === "filter") filterRows();
  });

  function navItems() {
    return Array.prototype.filter.call(document.querySelectorAll("[data-nav]"), function (el) {
      var row = el.closest("[data-row]");
      return !row || !row.hidden;
    });
  }

  function move(step) {
    var items = navItems();
    if (items.length === 0) return;
    var i = items.indexOf(document.activeElement);
    i = i < 0 ? (step > 0 ? 0 : items.length - 1) : Math.min(items.length - 1, Math.max(0, i + step));
    items[i].focus();
    items[i].scrollIntoView({ block: "nearest" });
  }

  document.addEventListener("keydown", function (e) {
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    var t = e.target;
    var typing = t && (t.tagName === "INPUT" || t.tagName === "TEXTAREA" || t.isContentEditable);
    if (e.key === "Escape") {
      if (typing) { if (t.id === "filter") { t.value = ""; filterRows(); } t.blur(); return; }
      if (main.getAttribute("data-page") !== "list") location.href = "/";
      return;
    }
    if (typing) return;
    if (e.key === "j" || (e.key === "ArrowDown" && t && t.hasAttribute && t.hasAttribute("data-nav"))) { e.preventDefault(); move(1); }
    else if (e.key === "k" || (e.key === "ArrowUp" && t && t.hasAttribute && t.hasAttribute("data-nav"))) { e.preventDefault(); move(-1); }
    else if (e.key === "/") {
      var f = document.getElementById("filter");
      if (f) { e.preventDefault(); f.focus(); }
    }
  });
})();
