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
    element.lastMarks = marks;
    return first;
  }

  function openAncestors(element) {
    for (var node = element; node; node = node.parentElement) {
      if (node.tagName === "DETAILS") node.open = true;
    }
  }

  /* A stored session or an opened file is found in on the server, across all of it:
     the answer is the positions of the entries that match; stepping to one not on the
     page loads the entries around it in place of those shown. */

  var server = { query: "", positions: [], more: false, index: -1, marks: [], mark: -1, asked: 0, move: 0, landed: 0 };

  function serverConversation() {
    var conv = document.querySelector(".conversation[data-find-url]");
    return conv && window.fetch ? conv : null;
  }

  function setStatus(text) {
    var status = document.querySelector(".find-status");
    if (status) status.textContent = text;
    showButtons();
  }

  function showButtons() {
    var buttons = document.querySelectorAll(".find-prev, .find-next");
    for (var i = 0; i < buttons.length; i++) buttons[i].hidden = hits.length < 2 && server.positions.length < 2;
  }

  function serverFind(conv, query) {
    clearMarks();
    var needle = (query || "").trim();
    server = { query: needle.toLowerCase(), positions: [], more: false, index: -1, marks: [], mark: -1,
               asked: server.asked + 1, move: 0, landed: 0 };
    if (!needle) { setStatus(""); return; }
    var asked = server.asked;
    var url = conv.getAttribute("data-find-url") + "?q=" + encodeURIComponent(needle);
    var show = conv.getAttribute("data-show");
    if (show) url += "&show=" + encodeURIComponent(show);
    setStatus("finding…");
    window.fetch(url, { credentials: "same-origin", headers: { "Accept": "application/json" } })
      .then(function (response) { return response.json(); })
      .then(function (found) {
        if (asked !== server.asked) return; // a newer search went out meanwhile
        server.positions = found.positions || [];
        server.more = !!found.more;
        if (!server.positions.length) { setStatus("no matches in this session"); return; }
        goToMatch(conv, firstMatchOnScreen(conv), 1);
      })
      .catch(function () { if (asked === server.asked) setStatus("the search failed; try again"); });
  }

  function firstMatchOnScreen(conv) {
    // The first match at or after the entry at the top of the screen, else the first.
    var top = currentEntry(conv);
    var at = top ? parseInt(top.getAttribute("data-entry"), 10) : 0;
    for (var i = 0; i < server.positions.length; i++) if (server.positions[i] >= at) return i;
    return 0;
  }

  function entryElement(conv, position) {
    return document.getElementById((conv.getAttribute("data-prefix") || "") + "e" + position);
  }

  function loadAround(conv, position, current) {
    // The page of entries around `position`, with links to those before and after it.
    var start = Math.max(0, position - 2);
    var url = conv.getAttribute("data-entries-url") + "?start=" + start + "&earlier=1";
    var show = conv.getAttribute("data-show");
    if (show) url += "&show=" + encodeURIComponent(show);
    return window.fetch(url, { credentials: "same-origin", headers: { "HX-Request": "true" } })
      .then(function (response) {
        if (!response.ok) throw new Error("entries " + response.status);
        return response.text();
      })
      .then(function (markup) {
        if (!current()) return null; // a later step went elsewhere meanwhile
        var holder = conv.querySelector(".entries");
        holder.innerHTML = markup;
        if (window.htmx) window.htmx.process(holder);
        applyFolds(holder);
        return entryElement(conv, position);
      });
  }

  function goToMatch(conv, index, direction) {
    var count = server.positions.length;
    server.index = ((index % count) + count) % count;
    var position = server.positions[server.index];
    var asked = server.asked;
    var move = server.move = (server.move || 0) + 1; // only the latest step lands
    var element = entryElement(conv, position);
    var ready = element ? Promise.resolve(element) : loadAround(conv, position, function () {
      return asked === server.asked && move === server.move;
    });
    ready.then(function (section) {
      if (asked !== server.asked || move !== server.move || !section) return;
      clearMarks();
      markText(section, server.query);
      server.marks = section.lastMarks || [];
      section.classList.add("hit");
      hits = server.marks.length ? server.marks.slice() : [section];
      server.mark = direction < 0 ? hits.length - 1 : 0;
      server.landed = move;
      showServerMark();
    }).catch(function () { setStatus("could not load that part of the session"); });
  }

  function showServerMark() {
    var target = hits[server.mark];
    if (!target) return;
    var old = document.querySelectorAll(".hit-current");
    for (var i = 0; i < old.length; i++) old[i].classList.remove("hit-current");
    target.classList.add("hit-current");
    scrollBelowBars(target, true);
    var text = (server.index + 1).toLocaleString() + " of " + server.positions.length.toLocaleString() +
      (server.more ? "+" : "") + " matching entries";
    if (hits.length > 1) text += " · " + (server.mark + 1) + "/" + hits.length + " in this entry";
    setStatus(text);
  }

  function serverStep(conv, direction) {
    if (!server.positions.length) return;
    if (server.landed !== server.move) { goToMatch(conv, server.index + direction, direction); return; }
    var next = server.mark + direction;
    if (next >= 0 && next < hits.length && server.marks.length) {
      server.mark = next;
      showServerMark();
    } else {
      goToMatch(conv, server.index + direction, direction);
    }
  }

  function find(query) {
    var conv = serverConversation();
    if (conv) { serverFind(conv, query); return; }
    clearMarks();
    var needle = (query || "").trim().toLowerCase();
    var status = document.querySelector(".find-status");
    if (!needle) {
      setStatus("");
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
    var conv = serverConversation();
    if (conv) { serverStep(conv, direction); return; }
    if (!hits.length) return;
    if (current >= 0 && hits[current]) {
      var old = hits[current].closest(".hit") || hits[current];
      old.classList.remove("hit-current");
    }
    current = (current + direction + hits.length) % hits.length;
    var target = hits[current];
    (target.closest(".hit") || target).classList.add("hit-current");
    scrollBelowBars(target, true);
    showButtons();
  }

  /* -- moving about: below the sticky bars, j/k between turns, anchors ---------------- */

  function barsBottom() {
    // How far down the screen the bars that stay on it reach once the page scrolls
    // (a sticky bar sits at its own `top` then, wherever it is drawn now).
    var bottom = 0;
    var bars = document.querySelectorAll(".top, .toolbar");
    for (var i = 0; i < bars.length; i++) {
      var style = window.getComputedStyle(bars[i]);
      if (style.position !== "sticky" && style.position !== "fixed") continue;
      var top = parseFloat(style.top) || 0;
      bottom = Math.max(bottom, top + bars[i].getBoundingClientRect().height);
    }
    return bottom;
  }

  function scrollBelowBars(element, centre) {
    var box = element.getBoundingClientRect();
    var bars = barsBottom();
    var room = window.innerHeight - bars;
    var y = window.scrollY + box.top - bars - 8;
    if (centre && box.height < room / 2) y -= (room - box.height) / 3;
    window.scrollTo(0, Math.max(0, y));
  }

  function currentEntry(root) {
    var sections = (root || document).querySelectorAll("main section.entry");
    var line = barsBottom() + 12;
    var found = null;
    for (var i = 0; i < sections.length; i++) {
      if (sections[i].getBoundingClientRect().top <= line) found = sections[i];
      else break;
    }
    return found || sections[0] || null;
  }

  function stepTurn(direction) {
    var sections = Array.prototype.slice.call(document.querySelectorAll("main section.entry"));
    if (!sections.length) return;
    var line = barsBottom() + 12;
    var current = currentEntry(document);
    var at = sections.indexOf(current);
    if (direction < 0 && current && current.getBoundingClientRect().top < line - 20) at += 1; // back to its own top
    var next = at + direction;
    if (next >= sections.length || next < 0) {
      var link = document.querySelector(direction > 0 ? ".conversation .more .load-more" : ".conversation .load-earlier");
      if (link && window.htmx) {
        window.htmx.ajax("GET", link.getAttribute("hx-get"),
                         { target: link.closest(direction > 0 ? ".more" : ".earlier"), swap: "outerHTML" })
          .then(function () { stepTurn(direction); });
      }
      return;
    }
    var target = sections[next];
    var old = document.querySelectorAll("section.entry.current-turn");
    for (var i = 0; i < old.length; i++) old[i].classList.remove("current-turn");
    target.classList.add("current-turn");
    scrollBelowBars(target, false);
  }

  function showAnchor() {
    // An anchor (an entry, a message, a content a problem points at) lands below the bars.
    var id = decodeURIComponent(window.location.hash.slice(1));
    if (!id) return;
    var target = document.getElementById(id);
    if (!target) return;
    if (target.classList.contains("seg-anchor") && target.nextElementSibling) target = target.nextElementSibling;
    openAncestors(target);
    var old = document.querySelectorAll(".target-flash");
    for (var i = 0; i < old.length; i++) old[i].classList.remove("target-flash");
    target.classList.add("target-flash");
    scrollBelowBars(target, false);
  }

  window.addEventListener("hashchange", showAnchor);

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
    var plain = !typing && !event.ctrlKey && !event.metaKey && !event.altKey;
    if ((event.key === "j" || event.key === "k") && plain && document.querySelector("main section.entry")) {
      event.preventDefault();
      stepTurn(event.key === "j" ? 1 : -1);
    } else if (event.key === "/" && plain) {
      var box = document.querySelector(".find");
      if (box) {
        event.preventDefault();
        box.focus();
        box.select();
      }
    } else if (event.key === "Enter" && target && target.classList && target.classList.contains("find")) {
      event.preventDefault();
      window.clearTimeout(debounce);
      var asked = serverConversation() ? server.query !== target.value.trim().toLowerCase() : !hits.length;
      if (asked) find(target.value);
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
    else if (t.classList.contains("nav-toggle") || t.classList.contains("toolbar-toggle")) {
      // The menu and the view options fold away on a phone; the button says which way they are.
      var open = t.getAttribute("aria-expanded") !== "true";
      t.setAttribute("aria-expanded", open ? "true" : "false");
      var panel = document.getElementById(t.getAttribute("aria-controls"));
      if (panel) panel.classList.toggle("unfolded", open);
    }
    else if (t.classList.contains("find-next")) step(1);
    else if (t.classList.contains("find-prev")) step(-1);
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

  document.addEventListener("click", function (event) {
    var link = event.target.closest ? event.target.closest("a.pointer-link") : null;
    if (!link) return;
    var hash = link.getAttribute("href").split("#")[1];
    if (hash && document.getElementById(decodeURIComponent(hash))) {
      event.preventDefault();
      if (window.location.hash === "#" + hash) showAnchor();
      else window.location.hash = hash;
    }
  });

  document.addEventListener("change", function (event) {
    var select = event.target;
    if (select.classList && select.classList.contains("show-filter") && select.form) select.form.submit();
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
    document.documentElement.classList.add("js");
    if (window.location.hash) window.setTimeout(showAnchor, 0);
    document.documentElement.setAttribute("data-viewer-ready", "1");
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
