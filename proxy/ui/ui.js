// mcpkeep live page (docs/design.md §28): follows /ui/events, a stream of
// the whole view at every transition, and updates the page in place.
// Without this script the page is a snapshot that refreshes itself.
"use strict";
(() => {
  const $ = (sel, el = document) => el.querySelector(sel);
  const $$ = (sel, el = document) => Array.from(el.querySelectorAll(sel));
  const chart = $("svg.chart");
  const list = $("#servers");
  let view = null;
  let skew = 0; // server clock minus ours, in ms
  let focused = null; // the server followed on the chart

  // Scripted: the snapshot's refresh is not needed (the <noscript> meta
  // is inert with scripting on).
  const live = $("#live");
  const liveText = $("#live-text");
  const setLive = (state, text) => { live.dataset.live = state; liveText.textContent = text; };
  setLive("off", "connecting…");

  const plural = (n, w) => `${n} ${w}${n === 1 ? "" : "s"}`;
  const clock = (iso) => {
    const d = new Date(iso);
    const p = (n, l = 2) => String(n).padStart(l, "0");
    return `${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}.${p(d.getMilliseconds(), 3)}`;
  };
  const retryText = (next) => {
    if (!next) return "—";
    const ms = Date.parse(next) - (Date.now() + skew);
    return ms <= 0 ? "now" : `in ${(ms / 1000).toFixed(1)} s`;
  };
  const field = (row, f) => $(`[data-f="${f}"]`, row);

  function newRow(name) {
    const row = $("#row-tpl").content.firstElementChild.cloneNode(true);
    row.dataset.server = name;
    for (const form of $$("form.act", row)) {
      form.action = `/ui/servers/${encodeURIComponent(name)}/${form.dataset.act}`;
    }
    bindRow(row);
    return row;
  }

  function fill(row, s) {
    row.dataset.state = s.state;
    field(row, "name").textContent = s.name;
    field(row, "state").textContent = s.state;
    field(row, "start").textContent = s.start + (s.cached ? " · cached" : "") + (s.idleable ? " · idle stop" : "");
    field(row, "gen").textContent = s.gen;
    field(row, "inflight").textContent = s.inFlight;
    field(row, "attempt").textContent = `${s.attempt} of ${s.maxAttempts}`;
    const retry = field(row, "retry");
    retry.dataset.next = s.nextRetry || "";
    retry.textContent = retryText(s.nextRetry);
    retry.classList.toggle("ticking", !!s.nextRetry);
    field(row, "catalog").textContent =
      `${plural(s.tools, "tool")} · ${plural(s.prompts, "prompt")} · ${plural(s.resources, "resource")} · ${plural(s.templates, "template")}`;
    field(row, "error").hidden = !s.lastError;
    field(row, "error-text").textContent = s.lastError || "";
    field(row, "tail-box").hidden = !s.stderrTail;
    field(row, "tail").textContent = s.stderrTail || "";
    const ol = field(row, "recent");
    ol.replaceChildren(...(s.recent || []).map((t) => {
      const li = document.createElement("li");
      li.dataset.from = t.from; li.dataset.to = t.to; li.dataset.event = t.event;
      const time = document.createElement("time"); time.textContent = clock(t.at);
      const tr = document.createElement("span"); tr.className = "tr";
      const a = document.createElement("b"); a.dataset.state = t.from; a.textContent = t.from;
      const b = document.createElement("b"); b.dataset.state = t.to; b.textContent = t.to;
      const ev = document.createElement("span"); ev.className = "ev"; ev.textContent = t.event;
      if (t.err) li.title = t.err;
      tr.append(a, " → ", b, " ", ev);
      const g = document.createElement("span"); g.className = "g"; g.textContent = `gen ${t.gen}`;
      li.append(time, tr, g);
      return li;
    }));
    for (const csrf of $$('input[name="csrf"]', row)) if (view.csrf) csrf.value = view.csrf;
    const form = field(row, "form");
    if (form) form.hidden = !view.actions;
    // Stop: a server with an idle stop; offered while it serves.
    const stop = field(row, "stop-form");
    if (stop) {
      stop.hidden = !view.actions || !s.idleable;
      $("button", stop).disabled = s.state !== "established";
    }
  }

  function render(v) {
    view = v;
    skew = Date.parse(v.now) - Date.now();
    const ready = $("#ready");
    ready.textContent = v.ready ? "ready" : "not ready";
    ready.className = "pill " + (v.ready ? "ok" : "bad");
    ready.title = v.reason || "";
    const reason = $("#reason");
    reason.textContent = v.reason || "";
    reason.hidden = v.ready || !v.reason;
    $("#inflight").textContent = v.inFlight;
    $("#count").textContent = v.servers.length;
    const empty = $("#empty");
    if (empty) empty.hidden = v.servers.length > 0;
    const seen = new Set();
    for (const s of v.servers) {
      seen.add(s.name);
      let row = $$(".server", list).find((r) => r.dataset.server === s.name);
      if (!row) { row = newRow(s.name); list.append(row); }
      fill(row, s);
    }
    for (const row of $$(".server", list)) if (!seen.has(row.dataset.server)) row.remove();
    paintChart();
  }

  // The chart: every state some server is in is lit; the followed
  // server's state is outlined and its recent transitions traced.
  function paintChart() {
    if (!chart || !view) return;
    const lit = new Set(view.servers.map((s) => s.state));
    for (const g of $$("g.node", chart)) g.classList.toggle("lit", lit.has(g.dataset.state));
    const s = focused && view.servers.find((x) => x.name === focused);
    chart.classList.toggle("focused", !!s);
    for (const g of $$("g.node", chart)) g.classList.toggle("focus", !!s && g.dataset.state === s.state);
    const recent = s ? s.recent || [] : [];
    const last = recent[recent.length - 1];
    for (const e of $$("g.edge", chart)) {
      const hit = (t) => t.from === e.dataset.from && t.to === e.dataset.to && t.event === e.dataset.event;
      e.classList.toggle("trail", recent.some(hit));
      e.classList.toggle("last", !!last && hit(last));
    }
    for (const row of $$(".server", list)) row.classList.toggle("focus", row.dataset.server === focused);
  }

  let pinned = null; // clicked: stays until clicked again
  function bindRow(row) {
    row.addEventListener("mouseenter", () => { if (!pinned) { focused = row.dataset.server; paintChart(); } });
    row.addEventListener("mouseleave", () => { if (!pinned) { focused = null; paintChart(); } });
    row.addEventListener("focus", () => { if (!pinned) { focused = row.dataset.server; paintChart(); } });
    row.addEventListener("click", (ev) => {
      if (ev.target.closest("form, details")) return;
      pinned = pinned === row.dataset.server ? null : row.dataset.server;
      focused = pinned;
      paintChart();
    });
    for (const form of $$("form.act", row)) {
      form.addEventListener("submit", (ev) => { ev.preventDefault(); act(form, row.dataset.server); });
    }
  }

  let toastTimer;
  function toast(text, bad) {
    const t = $("#toast");
    t.textContent = text; t.className = "toast" + (bad ? " bad" : ""); t.hidden = false;
    clearTimeout(toastTimer);
    toastTimer = setTimeout(() => { t.hidden = true; }, 4000);
  }

  async function act(form, name) {
    const btn = $("button", form);
    btn.disabled = true;
    try {
      const csrf = (view && view.csrf) || document.body.dataset.csrf;
      const res = await fetch(form.action, { method: "POST", credentials: "same-origin",
        headers: { "X-CSRF-Token": csrf } });
      let body = {};
      try { body = await res.json(); } catch (_) { /* not JSON */ }
      if (res.ok) toast(`${name}: ${form.dataset.doing}`);
      else toast(`${name}: ${body.error || res.status + " " + res.statusText}`, true);
    } catch (err) {
      toast(`${name}: ${err.message}`, true);
    } finally {
      // Stop stays disabled until the server serves again (fill).
      const s = view && view.servers.find((x) => x.name === name);
      btn.disabled = form.dataset.act === "stop" && !!s && s.state !== "established";
    }
  }

  for (const row of $$(".server", list)) bindRow(row);
  setInterval(() => {
    for (const el of $$('[data-f="retry"]', list)) {
      if (el.dataset.next) el.textContent = retryText(el.dataset.next);
    }
  }, 100);

  // The stream: EventSource reconnects by itself (the server asks for a
  // second between tries), also to the next mcpkeep after a restart. A
  // refusal (the token changed) closes it: reload to sign in again.
  function connect() {
    const es = new EventSource("/ui/events");
    es.addEventListener("state", (ev) => {
      setLive("on", "live");
      render(JSON.parse(ev.data));
    });
    es.addEventListener("error", () => {
      if (es.readyState === EventSource.CLOSED) {
        setLive("off", "disconnected · reloading");
        setTimeout(() => location.reload(), 2000);
      } else {
        setLive("off", "reconnecting…");
      }
    });
  }
  connect();
})();
