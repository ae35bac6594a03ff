/* agentfolio trace page: select a span (its id in the URL, its detail read on selection),
   j/k between spans, collapse subtrees, zoom the timeline, read more spans as the list
   scrolls.  Plain JavaScript, no inline handlers (the Content-Security-Policy forbids them). */
(function () {
  "use strict";

  var grid = document.querySelector(".trace-grid");
  if (!grid) return;
  var body = grid.querySelector(".trace-rows");
  var scroller = document.querySelector(".trace-scroll");
  var detail = document.querySelector(".trace-detail");
  var windowLabel = document.querySelector(".trace-window");
  var base = grid.getAttribute("data-base");
  var total = Math.max(parseFloat(grid.getAttribute("data-total")) || 1, 1);
  var zoom = [0, total];
  var selected = null;
  var detailRequest = 0;
  var observer = null;
  // At most this many rows stay in the page: reading on past them drops rows from the far
  // end (read again when scrolled back to), so a trace of any size costs what this many do.
  var MAX_ROWS = 1200;
  var collapsed = {};  // ids of collapsed spans, kept when their rows leave the page and come back

  function rowOf(id) { return id ? document.getElementById("span-" + id) : null; }
  function isRow(el) { return el && el.classList && el.classList.contains("span-row") && !el.classList.contains("span-head"); }
  function depth(el) { return parseInt(el.getAttribute("data-depth") || "0", 10); }
  function q(value) { return encodeURIComponent(value); }

  /* -- labels (as the server writes them) --------------------------------------------- */

  function duration(us) {
    if (us < 1000) return Math.round(us) + " µs";
    if (us < 100000) return (us / 1000).toFixed(1) + " ms";
    if (us < 1000000) return Math.round(us / 1000) + " ms";
    if (us < 60000000) return (us / 1000000).toFixed(2) + " s";
    var minutes = Math.floor(us / 60000000);
    var seconds = Math.floor(us / 1000000) % 60;
    if (minutes < 60) return minutes + "m " + (seconds < 10 ? "0" : "") + seconds + "s";
    return Math.floor(minutes / 60) + "h " + (minutes % 60 < 10 ? "0" : "") + (minutes % 60) + "m";
  }

  function tickStep(span) {
    var raw = Math.max(span / 5, 1);
    var power = Math.pow(10, Math.floor(Math.log10(raw)));
    var nice = [1, 2, 5, 10];
    for (var i = 0; i < nice.length; i++) if (nice[i] * power >= raw) return nice[i] * power;
    return 10 * power;
  }

  /* -- which rows show: none under a collapsed span --------------------------------- */

  var folded = 0;  // rows hidden now: with none, nothing needs hiding (the common case)

  function refresh() {
    if (!folded && !body.querySelector('.span-row[aria-expanded="false"]')) return;
    var cut = -1;
    var hidden = 0;
    var children = body.children;
    for (var i = 0; i < children.length; i++) {
      var el = children[i];
      var d = depth(el);
      var hide = cut >= 0 && d > cut;
      if (el.hidden !== hide) el.hidden = hide;  // only changes touch the page's styles
      if (hide) { hidden++; continue; }
      cut = el.getAttribute("aria-expanded") === "false" ? d : -1;
    }
    folded = hidden;
  }

  /* -- the timeline ------------------------------------------------------------------ */

  function placeBars(root) {
    var span = Math.max(zoom[1] - zoom[0], 1);
    var rects = (root || body).querySelectorAll(".cell-bar rect");
    for (var i = 0; i < rects.length; i++) {
      var row = rects[i].closest(".span-row");
      var start = parseFloat(row.getAttribute("data-start"));
      var end = parseFloat(row.getAttribute("data-end"));
      if (isNaN(start)) continue;
      if (isNaN(end)) end = start;
      var x = (start - zoom[0]) / span * 100;
      var w = Math.max((end - start) / span * 100, 0.15);
      rects[i].setAttribute("x", x.toFixed(3) + "%");
      rects[i].setAttribute("width", w.toFixed(3) + "%");
    }
  }

  function drawAxis() {
    var ticks = grid.querySelector(".axis .ticks");
    if (!ticks) return;
    while (ticks.firstChild) ticks.removeChild(ticks.firstChild);
    var span = Math.max(zoom[1] - zoom[0], 1);
    var step = tickStep(span);
    var first = Math.ceil(zoom[0] / step) * step;
    var ns = "http://www.w3.org/2000/svg";
    var last = -100;
    for (var t = first; t <= zoom[1] + 1e-6; t += step) {
      var x = (t - zoom[0]) / span * 100;
      if (x - last < 9) continue;  // labels never crowd the one before (as the server draws them)
      last = x;
      var line = document.createElementNS(ns, "line");
      line.setAttribute("x1", x + "%"); line.setAttribute("x2", x + "%");
      line.setAttribute("y1", "12"); line.setAttribute("y2", "18");
      var text = document.createElementNS(ns, "text");
      text.setAttribute("x", x + "%"); text.setAttribute("y", "10");
      text.setAttribute("text-anchor", x < 3 ? "start" : (x > 92 ? "end" : "middle"));
      text.textContent = t === 0 ? "0" : duration(t);
      ticks.appendChild(line);
      ticks.appendChild(text);
    }
    if (windowLabel) {
      windowLabel.textContent = (zoom[0] === 0 && zoom[1] === total) ? "whole trace: " + duration(total)
        : duration(zoom[0]) + " – " + duration(zoom[1]) + " of " + duration(total);
    }
  }

  function setZoom(from, to) {
    var width = Math.max(to - from, Math.min(total, 1));
    from = Math.max(0, Math.min(from, total - width));
    zoom = [from, Math.min(total, from + width)];
    grid.setAttribute("data-zoom", zoom[0] + "," + zoom[1]);
    placeBars();
    drawAxis();
  }

  function zoomBy(factor) {
    var center = (zoom[0] + zoom[1]) / 2;
    if (selected && selected.hasAttribute("data-start")) {
      var s = parseFloat(selected.getAttribute("data-start"));
      var e = parseFloat(selected.getAttribute("data-end") || s);
      center = (s + e) / 2;
    }
    var width = (zoom[1] - zoom[0]) * factor;
    setZoom(center - width / 2, center + width / 2);
  }

  /* -- reading more rows ------------------------------------------------------------- */

  function collapsedAncestor(row) {
    // The outermost collapsed span among the row and its loaded ancestors.
    var found = null;
    var current = row;
    var guard = 0;
    while (current && guard++ < 10000) {
      if (current.getAttribute("aria-expanded") === "false") found = current;
      current = rowOf(current.getAttribute("data-parent"));
    }
    return found;
  }

  function sentinelRow(attribute, id, label) {
    var sentinel = document.createElement("div");
    sentinel.className = "rows-more " + (attribute === "data-before" ? "rows-before" : "rows-after");
    sentinel.setAttribute("role", "row");
    sentinel.setAttribute(attribute, id);
    sentinel.setAttribute("data-depth", "0");
    sentinel.innerHTML = '<div class="cell" role="gridcell"><button type="button" class="load-more"></button></div>';
    sentinel.querySelector("button").textContent = label;
    return sentinel;
  }

  function trim(fromTop) {
    var rows = body.querySelectorAll(".span-row");
    var extra = rows.length - MAX_ROWS;
    if (extra <= 0) return;
    var i, old;
    if (fromTop) {
      var first = rows[extra];
      var top = first.offsetTop;
      old = body.querySelectorAll(".rows-before");
      for (i = 0; i < old.length; i++) old[i].remove();
      for (i = 0; i < extra; i++) rows[i].remove();
      var above = sentinelRow("data-before", first.getAttribute("data-id"), "Load earlier spans");
      first.before(above);
      scroller.scrollTop -= top - first.offsetTop;
      watch(above);
    } else {
      var last = rows[rows.length - 1 - extra];
      while (last.nextElementSibling) last.nextElementSibling.remove();
      var below = sentinelRow("data-after", last.getAttribute("data-id"), "Load more spans");
      last.after(below);
      watch(below);
    }
  }

  function insertFragment(text, sentinel, before) {
    var template = document.createElement("template");
    template.innerHTML = text;
    var added = template.content.querySelectorAll(".span-row, .rows-more");
    for (var i = 0; i < added.length; i++) {
      if (isRow(added[i]) && collapsed[added[i].getAttribute("data-id")]) setExpanded(added[i], false);
    }
    var anchor = before ? sentinel.nextElementSibling : null;
    var top = anchor ? anchor.offsetTop : 0;  // read only when rows go above what is seen
    sentinel.replaceWith(template.content);
    if (anchor) scroller.scrollTop += anchor.offsetTop - top;
    refresh();
    for (var j = 0; j < added.length; j++) {
      if (added[j].classList.contains("rows-more")) watch(added[j]);
      else if (isRow(added[j])) placeBars(added[j]);
    }
    trim(!before);
    return added;
  }

  function load(sentinel) {
    if (!sentinel || sentinel.getAttribute("data-loading")) return Promise.resolve(null);
    sentinel.setAttribute("data-loading", "1");
    var query;
    var before = sentinel.hasAttribute("data-before");
    if (before) {
      query = "before=" + q(sentinel.getAttribute("data-before"));
    } else {
      var after = sentinel.getAttribute("data-after");
      var within = sentinel.getAttribute("data-within");
      query = "after=" + q(after);
      if (within) {
        query += "&within=" + q(within);
      } else {
        var skip = collapsedAncestor(rowOf(after));
        if (skip) {
          // Past the collapsed subtree; what was not read of it is read when it opens again.
          skip.setAttribute("data-partial", after);
          query = "after=" + q(skip.getAttribute("data-id")) + "&descend=0";
        }
      }
    }
    return fetch(base + "/rows?" + query, { credentials: "same-origin", headers: { "Accept": "text/html" } })
      .then(function (response) {
        if (!response.ok) throw new Error("rows: " + response.status);
        return response.text();
      })
      .then(function (text) { return insertFragment(text, sentinel, before); })
      .catch(function () {
        sentinel.removeAttribute("data-loading");
        var button = sentinel.querySelector(".load-more");
        if (button) button.textContent = "Could not read more spans: try again";
        return null;
      });
  }

  function watch(sentinel) {
    if (observer) observer.observe(sentinel);
  }

  if ("IntersectionObserver" in window) {
    observer = new IntersectionObserver(function (entries) {
      for (var i = 0; i < entries.length; i++) {
        if (entries[i].isIntersecting && !entries[i].target.hidden) {
          observer.unobserve(entries[i].target);
          load(entries[i].target);
        }
      }
    }, { root: scroller, rootMargin: "600px 0px" });
  }

  /* -- collapse and expand ----------------------------------------------------------- */

  function setExpanded(row, open) {
    if (!row.hasAttribute("aria-expanded")) return;
    row.setAttribute("aria-expanded", open ? "true" : "false");
    if (open) delete collapsed[row.getAttribute("data-id")];
    else collapsed[row.getAttribute("data-id")] = true;
    var twisty = row.querySelector(".twisty");
    var name = row.querySelector(".span-name");
    if (twisty) twisty.setAttribute("aria-label", (open ? "Collapse " : "Expand ") + (name ? name.textContent : "span"));
    var partial = row.getAttribute("data-partial");
    if (open && partial) {
      row.removeAttribute("data-partial");
      var last = rowOf(partial);
      if (last) {
        var sentinel = document.createElement("div");
        sentinel.className = "rows-more rows-within";
        sentinel.setAttribute("role", "row");
        sentinel.setAttribute("data-after", partial);
        sentinel.setAttribute("data-within", row.getAttribute("data-id"));
        sentinel.setAttribute("data-depth", String(depth(row) + 1));
        sentinel.innerHTML = '<div class="cell" role="gridcell"><button type="button" class="load-more">Load the rest of this subtree</button></div>';
        last.after(sentinel);
        watch(sentinel);
      }
    }
  }

  function setAll(open) {
    var rows = body.querySelectorAll(".span-row[aria-expanded]");
    for (var i = 0; i < rows.length; i++) setExpanded(rows[i], open);
    refresh();
  }

  /* -- selection --------------------------------------------------------------------- */

  function showDetail(id) {
    var ticket = ++detailRequest;
    if (detail) detail.setAttribute("aria-busy", "true");
    return fetch(base + "/span?id=" + q(id), { credentials: "same-origin", headers: { "Accept": "text/html" } })
      .then(function (response) { return response.text().then(function (text) { return [response.ok, text]; }); })
      .then(function (answer) {
        if (ticket !== detailRequest || !detail) return;
        detail.innerHTML = answer[1];
        detail.removeAttribute("aria-busy");
        detail.scrollTop = 0;
        if (window.htmx) window.htmx.process(detail);
      })
      .catch(function () {
        if (ticket === detailRequest && detail) detail.textContent = "Could not read this span.";
      });
  }

  function select(row, options) {
    options = options || {};
    if (!isRow(row)) return;
    if (selected && selected !== row) {
      selected.setAttribute("aria-selected", "false");
      selected.setAttribute("tabindex", "-1");
    }
    selected = row;
    row.setAttribute("aria-selected", "true");
    row.setAttribute("tabindex", "0");
    if (options.focus !== false) row.focus({ preventScroll: true });
    row.scrollIntoView({ block: "nearest" });
    var id = row.getAttribute("data-id");
    if (options.push !== false) {
      var url = new URL(window.location.href);
      url.searchParams.set("span", id);
      if (url.toString() !== window.location.href) window.history.pushState({ span: id }, "", url.toString());
    }
    if (options.detail !== false) {
      var shown = detail && detail.querySelector(".span-detail-pane");
      if (!shown || shown.getAttribute("data-span") !== id) showDetail(id);
    }
  }

  function visibleRows() {
    var out = [];
    var children = body.children;
    for (var i = 0; i < children.length; i++) if (isRow(children[i]) && !children[i].hidden) out.push(children[i]);
    return out;
  }

  function step(direction) {
    if (selected && !selected.isConnected) selected = rowOf(selected.getAttribute("data-id"));
    var rows = visibleRows();
    if (!rows.length) return;
    var at = selected ? rows.indexOf(selected) : -1;
    var next = at < 0 ? (direction > 0 ? 0 : rows.length - 1) : at + direction;
    if (next >= 0 && next < rows.length) {
      select(rows[next]);
      return;
    }
    var sentinel = null;
    if (direction < 0) {
      sentinel = body.querySelector(".rows-before");
    } else {
      var all = body.querySelectorAll(".rows-more:not(.rows-before)");
      for (var i = all.length - 1; i >= 0 && !sentinel; i--) if (!all[i].hidden) sentinel = all[i];
    }
    if (sentinel) load(sentinel).then(function (added) { if (added) step(direction); });
  }

  /* -- events ------------------------------------------------------------------------ */

  grid.addEventListener("click", function (event) {
    var twisty = event.target.closest(".twisty");
    var row = event.target.closest(".span-row");
    if (twisty && row) {
      setExpanded(row, row.getAttribute("aria-expanded") === "false");
      refresh();
      return;
    }
    var more = event.target.closest(".rows-more");
    if (more) { load(more); return; }
    if (isRow(row)) select(row);
  });

  document.addEventListener("click", function (event) {
    var target = event.target;
    if (!target.closest) return;
    var link = target.closest("[data-select]");
    if (link) {
      var row = rowOf(link.getAttribute("data-select"));
      if (row) {
        event.preventDefault();
        select(row);
      }
      return;
    }
    if (target.closest(".trace-zoom-in")) zoomBy(0.5);
    else if (target.closest(".trace-zoom-out")) zoomBy(2);
    else if (target.closest(".trace-zoom-reset")) setZoom(0, total);
    else if (target.closest(".trace-expand-all")) setAll(true);
    else if (target.closest(".trace-collapse-all")) setAll(false);
    else if (target.closest(".trace-zoom-span")) {
      var button = target.closest(".trace-zoom-span");
      var s = parseFloat(button.getAttribute("data-start"));
      var e = parseFloat(button.getAttribute("data-end"));
      var pad = Math.max((e - s) * 0.1, 1);
      setZoom(s - pad, e + pad);
    } else if (target.closest(".copy-span-link")) {
      var copy = target.closest(".copy-span-link");
      var text = new URL(copy.getAttribute("data-copy-path"), window.location.href).toString();
      if (navigator.clipboard && window.isSecureContext) navigator.clipboard.writeText(text);
      copy.classList.add("copied");
      window.setTimeout(function () { copy.classList.remove("copied"); }, 1500);
    }
  });

  document.addEventListener("keydown", function (event) {
    var target = event.target;
    var typing = target && (target.tagName === "INPUT" || target.tagName === "TEXTAREA" || target.tagName === "SELECT"
                            || target.isContentEditable);
    if (typing || event.ctrlKey || event.metaKey || event.altKey) return;
    var inTree = target === document.body || target === grid || (target.closest && target.closest(".trace-grid"));
    if (event.key === "j") { event.preventDefault(); step(1); }
    else if (event.key === "k") { event.preventDefault(); step(-1); }
    else if (inTree && event.key === "ArrowDown") { event.preventDefault(); step(1); }
    else if (inTree && event.key === "ArrowUp") { event.preventDefault(); step(-1); }
    else if (inTree && selected && (event.key === "ArrowLeft" || event.key === "ArrowRight")) {
      event.preventDefault();
      var open = event.key === "ArrowRight";
      if (selected.hasAttribute("aria-expanded") && (selected.getAttribute("aria-expanded") === "true") !== open) {
        setExpanded(selected, open);
        refresh();
      } else if (!open) {
        var parent = rowOf(selected.getAttribute("data-parent"));
        if (parent) select(parent);
      }
    }
  });

  window.addEventListener("popstate", function () {
    var id = new URL(window.location.href).searchParams.get("span");
    if (!id) {
      if (selected) { selected.setAttribute("aria-selected", "false"); selected = null; }
      if (detail) detail.innerHTML = '<p class="dim trace-detail-empty">Select a span.</p>';
      return;
    }
    var row = rowOf(id);
    if (row) select(row, { push: false, focus: false });
    else window.location.reload();
  });

  /* -- start ------------------------------------------------------------------------- */

  var more = body.querySelectorAll(".rows-more");
  for (var i = 0; i < more.length; i++) watch(more[i]);
  var linked = new URL(window.location.href).searchParams.get("span");
  var start = rowOf(linked);
  if (start) select(start, { push: false, detail: false, focus: false });
  drawAxis();
  document.documentElement.setAttribute("data-trace-ready", "1");
})();
