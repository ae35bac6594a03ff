/* agentfolio viewer: folding that sticks, Rendered/Raw, "/" to find, drop to open.
   Plain JavaScript, no inline handlers (the pages' Content-Security-Policy forbids them).
   Also inlined into the self-contained HTML export, where htmx is absent. */
(function () {
  "use strict";

  var store = (function () {
    try {
      var probe = "agentfolio.probe";
      window.localStorage.setItem(probe, "1");
      window.localStorage.removeItem(probe);
      return window.localStorage;
    } catch (e) {
      var memory = {};
      return {
        getItem: function (k) { return Object.prototype.hasOwnProperty.call(memory, k) ? memory[k] : null; },
        setItem: function (k, v) { memory[k] = String(v); }
      };
    }
  })();

  var FOLD = "agentfolio.fold.";
  var RAW = "agentfolio.raw";

  /* -- folding: the user's last choice for a kind is how that kind opens on every page -- */

  function applyFolds(root) {
    var nodes = (root || document).querySelectorAll("details[data-kind]");
    for (var i = 0; i < nodes.length; i++) {
      var pref = store.getItem(FOLD + nodes[i].getAttribute("data-kind"));
      if (pref === "open") nodes[i].open = true;
      else if (pref === "closed") nodes[i].open = false;
    }
  }

  document.addEventListener("click", function (event) {
    var summary = event.target.closest ? event.target.closest("summary") : null;
    if (!summary || summary.closest("a") || event.target.closest("button")) return;
    var details = summary.parentElement;
    if (!details || details.tagName !== "DETAILS" || !details.hasAttribute("data-kind")) return;
    // The toggle happens after the click; record where it ends up.
    window.setTimeout(function () {
      store.setItem(FOLD + details.getAttribute("data-kind"), details.open ? "open" : "closed");
    }, 0);
  });

  function setAll(open) {
    var nodes = document.querySelectorAll("main details");
    for (var i = 0; i < nodes.length; i++) nodes[i].open = open;
  }

  /* -- Rendered / Raw ---------------------------------------------------------------- */

  function setRaw(raw) {
    document.body.classList.toggle("raw", raw);
    var buttons = document.querySelectorAll(".toggle-raw");
    for (var i = 0; i < buttons.length; i++) {
      buttons[i].setAttribute("aria-pressed", raw ? "true" : "false");
      // The button names the state the page is in, not the one a click leads to.
      buttons[i].textContent = raw ? "Raw: on" : "Raw: off";
      buttons[i].title = raw ? "Text is shown as written, newlines kept; click to render markdown"
                             : "Markdown is rendered; click to show the text as written";
    }
    store.setItem(RAW, raw ? "1" : "0");
  }

  /* -- find in the page ---------------------------------------------------------------- */

  var hits = [];
  var current = -1;

  function clearMarks() {
    var marks = document.querySelectorAll("mark.find-hit");
    for (var i = 0; i < marks.length; i++) {
      var mark = marks[i];
      var parent = mark.parentNode;
      parent.replaceChild(document.createTextNode(mark.textContent), mark);
      parent.normalize();
    }
    var old = document.querySelectorAll(".hit");
    for (var j = 0; j < old.length; j++) old[j].classList.remove("hit", "hit-current");
    hits = [];
    current = -1;
  }

  function markText(element, needle) {
    var walker = document.createTreeWalker(element, NodeFilter.SHOW_TEXT, null);
    var texts = [];
    while (walker.nextNode()) texts.push(walker.currentNode);
    var first = null;
    var marks = [];
    for (var i = 0; i < texts.length; i++) {
      var node = texts[i];
      var parent = node.parentNode;
      if (!parent || parent.closest("script, style, .raw-text") && !document.body.classList.contains("raw")) continue;
      if (parent.closest(".rendered") && document.body.classList.contains("raw")) continue;
      var text = node.nodeValue;
      var lower = text.toLowerCase();
      var at = lower.indexOf(needle);
      if (at < 0) continue;
      var fragment = document.createDocumentFragment();
      var from = 0;
      while (at >= 0) {
        fragment.appendChild(document.createTextNode(text.slice(from, at)));
        var mark = document.createElement("mark");
        mark.className = "find-hit";
        mark.textContent = text.slice(at, at + needle.length);
        fragment.appendChild(mark);
        marks.push(mark);
        if (!first) first = mark;
        from = at + needle.length;
        at = lower.indexOf(needle, from);
      }
      fragment.appendChild(document.createTextNode(text.slice(from)));
      parent.replaceChild(fragment, node);
    }
    for (var m = 0; m < marks.length; m++) openAncestors(marks[m]);
    return first;
  }

  function openAncestors(element) {
    for (var node = element; node; node = node.parentElement) {
      if (node.tagName === "DETAILS") node.open = true;
    }
  }

  function find(query) {
    clearMarks();
    var needle = (query || "").trim().toLowerCase();
    var status = document.querySelector(".find-status");
    if (!needle) {
      if (status) status.textContent = "";
      return;
    }
    var units = document.querySelectorAll("main .seg, main .msg-head, main .span-row, main .tool-item");
    for (var i = 0; i < units.length; i++) {
      var unit = units[i];
      if (unit.parentElement && unit.parentElement.closest(".seg, .span-row")) continue; // counted by its outer unit
      if (unit.textContent.toLowerCase().indexOf(needle) < 0) continue;
      var mark = markText(unit, needle);
      unit.classList.add("hit");
      openAncestors(unit);
      if (unit.tagName === "DETAILS") unit.open = true;
      hits.push(mark || unit);
    }
    if (status) {
      var text = hits.length + (hits.length === 1 ? " match" : " matches");
      var conv = document.querySelector(".conversation");
      var loaded = document.querySelectorAll("main section.entry").length;
      var total = conv ? parseInt(conv.getAttribute("data-total-entries"), 10) : loaded;
      if (conv && loaded < total) text += " in the first " + loaded + " of " + total + " entries";
      status.textContent = text;
      var more = document.querySelector(".find-load-all");
      if (conv && loaded < total && window.htmx) {
        if (!more) {
          more = document.createElement("button");
          more.type = "button";
          more.className = "find-load-all";
          more.textContent = "Load all and find again";
          status.parentNode.appendChild(more);
        }
      } else if (more) {
        more.remove();
      }
    }
    step(1);
  }

  function step(direction) {
    if (!hits.length) return;
    if (current >= 0 && hits[current]) {
      var old = hits[current].closest(".hit") || hits[current];
      old.classList.remove("hit-current");
    }
    current = (current + direction + hits.length) % hits.length;
    var target = hits[current];
    (target.closest(".hit") || target).classList.add("hit-current");
    target.scrollIntoView({ block: "center" });
  }

  function loadAll(done) {
    var more = document.querySelector(".conversation .more[hx-get]");
    if (!more || !window.htmx) { done(); return; }
    var url = more.getAttribute("hx-get") + "&page=1000";
    window.htmx.ajax("GET", url, { target: more, swap: "outerHTML" }).then(function () { loadAll(done); });
  }

  var debounce = null;
  document.addEventListener("input", function (event) {
    if (!event.target.classList || !event.target.classList.contains("find")) return;
    window.clearTimeout(debounce);
    var value = event.target.value;
    debounce = window.setTimeout(function () { find(value); }, 150);
  });

  document.addEventListener("keydown", function (event) {
    var target = event.target;
    var typing = target && (target.tagName === "INPUT" || target.tagName === "TEXTAREA" || target.isContentEditable);
    if (event.key === "/" && !typing && !event.ctrlKey && !event.metaKey && !event.altKey) {
      var box = document.querySelector(".find");
      if (box) {
        event.preventDefault();
        box.focus();
        box.select();
      }
    } else if (event.key === "Enter" && target && target.classList && target.classList.contains("find")) {
      event.preventDefault();
      if (!hits.length) find(target.value);
      else step(event.shiftKey ? -1 : 1);
    } else if (event.key === "Escape" && target && target.classList && target.classList.contains("find")) {
      target.value = "";
      find("");
    }
  });

  document.addEventListener("click", function (event) {
    var t = event.target;
    if (!t.classList) return;
    if (t.classList.contains("toggle-raw")) setRaw(!document.body.classList.contains("raw"));
    else if (t.classList.contains("expand-all")) setAll(true);
    else if (t.classList.contains("collapse-all")) setAll(false);
    else if (t.classList.contains("find-load-all")) {
      t.disabled = true;
      t.textContent = "Loading…";
      loadAll(function () {
        var box = document.querySelector(".find");
        find(box ? box.value : "");
      });
    }
  });

  /* -- JSON trees: long strings behind "show", copy a value, a subtree, an id, a link ----- */

  function treeValue(node) {
    if (node.tagName === "DETAILS") {
      var isObject = node.getAttribute("data-type") === "object";
      var result = isObject ? {} : [];
      var children = node.querySelector(":scope > .jt-children").children;
      for (var i = 0; i < children.length; i++) {
        var child = children[i];
        var value = treeValue(child);
        if (isObject) {
          var key = child.querySelector(":scope > summary > .jt-key, :scope > .jt-key");
          result[key ? JSON.parse(key.textContent) : String(i)] = value;
        } else {
          result.push(value);
        }
      }
      return result;
    }
    var leaf = node.querySelector(":scope > [data-type]");
    if (!leaf) return null;
    var type = leaf.getAttribute("data-type");
    if (type === "string") {
      var parts = leaf.querySelectorAll(".jt-v");
      var text = "";
      for (var j = 0; j < parts.length; j++) text += parts[j].textContent;
      return text;
    }
    return JSON.parse(leaf.textContent);
  }

  function copyText(text, button) {
    function done() {
      if (!button) return;
      button.classList.add("copied");
      window.setTimeout(function () { button.classList.remove("copied"); }, 1500);
    }
    function fallback() {
      var area = document.createElement("textarea");
      area.value = text;
      area.setAttribute("readonly", "");
      area.className = "visually-hidden";
      document.body.appendChild(area);
      area.select();
      try { document.execCommand("copy"); } catch (e) { /* nothing more to try */ }
      area.remove();
      done();
    }
    if (navigator.clipboard && window.isSecureContext) navigator.clipboard.writeText(text).then(done, fallback);
    else fallback();
  }

  function entryLink(anchor) {
    var conv = document.querySelector(".conversation");
    var page = conv && conv.getAttribute("data-page-url");
    var index = parseInt(anchor.replace(/^.*e/, ""), 10);
    var first = conv ? parseInt(conv.getAttribute("data-page-entries") || "0", 10) : 0;
    if (!page) return window.location.href.split("#")[0] + "#" + anchor;
    var url = new URL(page, window.location.href);
    if (index >= first) url.searchParams.set("start", String(index));
    url.hash = anchor;
    return url.toString();
  }

  document.addEventListener("click", function (event) {
    var button = event.target.closest ? event.target.closest("button") : null;
    if (!button) return;
    // A button inside a <summary> acts alone: its click must not fold or unfold the details.
    if (button.closest("summary") && (button.classList.contains("copy") || button.classList.contains("jt-show"))) {
      event.preventDefault();
    }
    if (button.classList.contains("jt-show")) {
      var rest = button.previousElementSibling && button.previousElementSibling.querySelector(".jt-rest");
      if (!rest) return;
      rest.hidden = !rest.hidden;
      button.setAttribute("aria-expanded", rest.hidden ? "false" : "true");
      if (!button.getAttribute("data-label")) button.setAttribute("data-label", button.textContent);
      button.textContent = rest.hidden ? button.getAttribute("data-label") : "hide";
    } else if (button.classList.contains("copy-value")) {
      var value = treeValue(button.closest(".jt-leaf"));
      copyText(typeof value === "string" ? value : JSON.stringify(value), button);
    } else if (button.classList.contains("copy-json")) {
      var top = button.parentElement.querySelector(":scope > details.jt-node");
      if (top) copyText(JSON.stringify(treeValue(top), null, 2), button);
    } else if (button.classList.contains("copy-link")) {
      copyText(entryLink(button.getAttribute("data-anchor")), button);
    } else if (button.classList.contains("copy") && button.hasAttribute("data-copy")) {
      copyText(button.getAttribute("data-copy"), button);
    }
  });

  /* -- open a file by dropping it ------------------------------------------------------ */

  function wireDropzones(root) {
    var zones = (root || document).querySelectorAll("[data-dropzone]");
    for (var i = 0; i < zones.length; i++) {
      (function (zone) {
        if (zone.getAttribute("data-wired")) return;
        zone.setAttribute("data-wired", "1");
        var input = zone.querySelector("input[type=file]");
        zone.addEventListener("dragover", function (e) { e.preventDefault(); zone.classList.add("dragging"); });
        zone.addEventListener("dragleave", function () { zone.classList.remove("dragging"); });
        zone.addEventListener("drop", function (e) {
          e.preventDefault();
          zone.classList.remove("dragging");
          if (!e.dataTransfer || !e.dataTransfer.files.length || !input) return;
          input.files = e.dataTransfer.files;
          zone.submit();
        });
        if (input) input.addEventListener("change", function () { if (input.files.length) zone.submit(); });
      })(zones[i]);
    }
  }

  /* -- start ------------------------------------------------------------------------- */

  function start() {
    applyFolds(document);
    wireDropzones(document);
    if (store.getItem(RAW) === "1") setRaw(true);
    var query = new URLSearchParams(window.location.search).get("find");
    var box = document.querySelector(".find");
    if (query && box) {
      box.value = query;
      find(query);
    }
    document.body.addEventListener("htmx:load", function (event) {
      applyFolds(event.detail && event.detail.elt ? event.detail.elt : document);
    });
    document.documentElement.setAttribute("data-viewer-ready", "1");
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
