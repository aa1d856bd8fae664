// The kapi atlas page: draws the atlas document (docs/atlas.md) and the
// review digest embedded in this page. Plain DOM and SVG; every text from
// the log goes in as a text node (textContent), never as markup.
"use strict";
(function () {
  performance.mark("atlas-script");
  const data = JSON.parse(document.getElementById("atlas-data").textContent);
  performance.mark("atlas-parsed");
  const atlas = data.atlas;
  const subjects = atlas.subjects;
  // The events, packed as columns (src/context/atlas_page.rs, PackedEvents).
  const packed = atlas.events;
  const nEvents = packed.id.length;
  const evAt = new Float64Array(nEvents);
  {
    let t = 0;
    for (let i = 0; i < nEvents; i++) { t += packed.at[i]; evAt[i] = t; }
  }
  const iso = (t) => new Date(t).toISOString();
  function event(i) {
    const s = packed.subject[i];
    return {
      id: packed.id[i], at: iso(evAt[i]), kind: packed.kinds[packed.kind[i]], actor: packed.actors[packed.actor[i]],
      subject: s >= 0 ? subjects[s].id : packed.other[i] || null, ignored: packed.ignored[i] || null,
      signed: packed.signed[i] || null,
    };
  }
  const windows = atlas.windows;
  const SVG = "http://www.w3.org/2000/svg";
  const STATUSES = ["suggested", "established", "contested", "withdrawn", "dropped", "reset"];
  const PAGE = 50;

  // ---- small helpers ----
  function el(tag, attrs, children) {
    const node = document.createElement(tag);
    if (attrs) {
      for (const k of Object.keys(attrs)) {
        if (k === "text") node.textContent = attrs[k];
        else if (k === "cls") node.className = attrs[k];
        else node.setAttribute(k, attrs[k]);
      }
    }
    if (children) for (const c of children) if (c !== null && c !== undefined) node.append(c);
    return node;
  }
  function sv(tag, attrs, text) {
    const node = document.createElementNS(SVG, tag);
    for (const k of Object.keys(attrs || {})) node.setAttribute(k, attrs[k]);
    if (text !== undefined) node.textContent = text;
    return node;
  }
  const byId = (id) => document.getElementById(id);
  const ms = (t) => Date.parse(t);
  function when(t) {
    if (!t) return "";
    return t.replace("T", " ").replace(/:\d\d\.\d{3}Z$/, "Z").replace(/\.\d{3}Z$/, "Z");
  }
  function statusBadge(s) { return el("span", { cls: "status " + s, text: s }); }
  function plural(n, one, many) { return n.toLocaleString("en") + " " + (n === 1 ? one : many); }

  // ---- what each subject says, who stated and who decided it ----
  const index = new Map();
  subjects.forEach((s, i) => index.set(s.id, i));
  // The event of an id: events are in log order, which is id order, so a
  // binary search finds it (a map of every id if the order is ever broken).
  let eventIndex = null;
  function eventOf(id) {
    const ids = packed.id;
    let lo = 0, hi = nEvents - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      if (ids[mid] === id) return event(mid);
      if (ids[mid] < id) lo = mid + 1; else hi = mid - 1;
    }
    if (!eventIndex) { eventIndex = new Map(); ids.forEach((x, i) => eventIndex.set(x, i)); }
    const i = eventIndex.get(id);
    return i === undefined ? null : event(i);
  }
  // The events on a subject, by its index.
  let touching = null;
  function eventsOn(id) {
    if (!touching) {
      touching = new Map();
      for (let i = 0; i < nEvents; i++) {
        const s = packed.subject[i];
        if (s < 0) continue;
        let list = touching.get(s);
        if (!list) touching.set(s, (list = []));
        list.push(i);
      }
    }
    return (touching.get(index.get(id)) || []).map(event);
  }
  function actorLabel(a) {
    if (!a) return "";
    if (typeof a === "string") return a.replace(":", " ");
    return a.kind + " " + a.name + (a.session ? " [" + a.session + "]" : "");
  }
  function says(s) {
    const sub = s.subject;
    if (s.family === "correction" && s.correction) return { use: s.correction.to, avoid: [s.correction.from] };
    if (!sub) return { use: "", avoid: [] };
    switch (sub.type) {
      case "term": return { use: sub.use, avoid: sub.avoid || [] };
      case "note": return { use: sub.text, avoid: [] };
      case "pair": return { use: sub.source + " \u2192 " + sub.target, avoid: [] };
      case "terms": {
        const terms = sub.terms || [];
        const uses = terms.filter((t) => t.use).slice(0, 3).map((t) => t.use);
        const avoid = [];
        for (const t of terms) { for (const a of t.avoid || []) { if (avoid.length < 6) avoid.push(a); } }
        return { use: plural(terms.length, "imported rule", "imported rules") + (uses.length ? ": " + uses.join(", ") + (terms.length > 3 ? ", \u2026" : "") : ""), avoid: avoid };
      }
      default: return { use: JSON.stringify(sub), avoid: [] };
    }
  }
  function whereText(s) {
    const parts = Object.keys(s.coordinates || {}).map((k) => k + "=" + s.coordinates[k]);
    let out = parts.length ? parts.join(", ") : "everywhere";
    const w = s.window;
    if (w && (w.valid_from || w.valid_to)) {
      out += " \u00B7 " + (w.valid_from ? "from " + w.valid_from : "") + (w.valid_from && w.valid_to ? " " : "") + (w.valid_to ? "until " + w.valid_to : "");
    }
    return out;
  }
  const decidedCache = new Map();
  function decided(s) {
    if (decidedCache.has(s.id)) return decidedCache.get(s.id);
    let out = null;
    const h = s.history || [];
    for (let i = h.length - 1; i >= 0; i--) {
      const c = h[i];
      if (c.by === s.id) continue;
      const e = eventOf(c.by);
      // Another rule stated (a disagreement) decides nothing.
      if (e && (e.kind === "observe" || e.kind === "correct")) continue;
      out = { who: e ? e.actor : "", signed: e ? e.signed : null, at: c.at, by: c.by, kind: e ? e.kind : "", to: c.to };
      break;
    }
    if (!out && s.status === "established") out = { who: s.derived.actor, at: s.recorded_at, by: s.id, kind: s.operation, to: "established" };
    decidedCache.set(s.id, out);
    return out;
  }
  const standing = (data.digest && data.digest.standing) || {};

  // ---- containment: every value an axis value lies within ----
  const withinOf = new Map(); // axis -> Map(value -> [within])
  for (const a of atlas.axes) {
    const m = new Map();
    for (const v of a.values || []) m.set(v.value, v.within || []);
    withinOf.set(a.name, m);
  }
  for (const p of atlas.places) {
    let m = withinOf.get(p.axis);
    if (!m) withinOf.set(p.axis, (m = new Map()));
    if (!m.has(p.id)) m.set(p.id, p.within || []);
  }
  function ancestors(axis, value) {
    const m = withinOf.get(axis);
    const seen = new Set([value]);
    if (!m) return seen;
    const stack = [value];
    while (stack.length && seen.size < 10000) {
      for (const up of m.get(stack.pop()) || []) {
        if (!seen.has(up)) { seen.add(up); stack.push(up); }
      }
    }
    return seen;
  }
  const placeName = new Map(atlas.places.map((p) => [p.axis + "=" + p.id, p]));

  // ---- header ----
  byId("title").textContent = "kapi atlas \u00B7 " + atlas.project;
  {
    const made = byId("made");
    const tip = data.tip || {};
    let text = "Made " + when(data.made_at) + " by kapi " + data.kapi;
    if (data.as_of) text += " \u00B7 the log as of " + when(data.as_of);
    text += " \u00B7 from refs/kapi/ops " + (tip.ops ? "at " + tip.ops.slice(0, 12) : "(none yet)");
    if (tip.last) text += " \u00B7 last operation #" + tip.last.id.slice(0, 10) + " at " + when(tip.last.at);
    made.textContent = text;
    const fam = (f) => subjects.filter((s) => s.family === f).length;
    byId("counts").textContent = [plural(fam("rule"), "rule", "rules"), plural(fam("note"), "note", "notes"), plural(fam("pair"), "pair", "pairs"), plural(fam("correction"), "correction", "corrections"), plural(nEvents, "operation", "operations"), plural(windows.length, "window boundary", "window boundaries"), plural(atlas.places.length, "place", "places")].join(" \u00B7 ");
  }

  // ---- tabs ----
  const tabs = ["rules", "history", "where", "review"];
  const drawn = {};
  function show(name, focus) {
    if (!tabs.includes(name)) name = "rules";
    for (const t of tabs) {
      const tab = byId("tab-" + t);
      const on = t === name;
      tab.setAttribute("aria-selected", on ? "true" : "false");
      tab.tabIndex = on ? 0 : -1;
      byId("view-" + t).hidden = !on;
    }
    if (!drawn[name]) { drawn[name] = true; draw[name](); }
    if (focus) byId("tab-" + name).focus();
    if (location.hash !== "#" + name) {
      try { history.replaceState(null, "", "#" + name); } catch (e) { /* a browser that keeps no history for files */ }
    }
  }
  byId("tabs").addEventListener("click", (ev) => {
    const tab = ev.target.closest("[role=tab]");
    if (tab) show(tab.id.slice(4), false);
  });
  byId("tabs").addEventListener("keydown", (ev) => {
    const current = tabs.findIndex((t) => byId("tab-" + t).getAttribute("aria-selected") === "true");
    let next = null;
    if (ev.key === "ArrowRight") next = (current + 1) % tabs.length;
    else if (ev.key === "ArrowLeft") next = (current + tabs.length - 1) % tabs.length;
    else if (ev.key === "Home") next = 0;
    else if (ev.key === "End") next = tabs.length - 1;
    if (next !== null) { ev.preventDefault(); show(tabs[next], true); }
  });
  window.addEventListener("hashchange", () => show(location.hash.slice(1), false));

  // ---- Rules in force ----
  const columns = [
    { key: "id", label: "Id", sort: (s) => s.id },
    { key: "status", label: "Status", sort: (s) => STATUSES.indexOf(s.status) },
    { key: "family", label: "Kind", sort: (s) => s.family },
    { key: "use", label: "Preferred", sort: (s) => says(s).use.toLowerCase() },
    { key: "avoid", label: "Avoided", sort: (s) => says(s).avoid.join(", ").toLowerCase() },
    { key: "where", label: "Where it holds", sort: (s) => whereText(s) },
    { key: "suggested", label: "Suggested by", sort: (s) => s.derived.actor },
    { key: "decided", label: "Decided by", sort: (s) => { const d = decided(s); return d ? d.who : "~"; } },
    { key: "standing", label: "Standing", sort: (s) => standing[s.id] || "~" },
  ];
  const state = { text: "", status: "", family: "", where: "", actor: "", sort: "id", dir: 1, page: 0, rows: [] };

  function fillSelect(select, values, label) {
    for (const [value, count] of values) {
      select.append(el("option", { value: value, text: (label ? label(value) : value) + " (" + count.toLocaleString("en") + ")" }));
    }
  }
  function counted(key) {
    const m = new Map();
    for (const s of subjects) for (const k of key(s)) m.set(k, (m.get(k) || 0) + 1);
    return [...m.entries()].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  }
  function matchesRow(s, where) {
    if (state.status && s.status !== state.status) return false;
    if (state.family && s.family !== state.family) return false;
    if (where) {
      if (where.everywhere) { if (Object.keys(s.coordinates).length) return false; }
      else {
        const v = s.coordinates[where.axis];
        if (v === undefined || !ancestors(where.axis, v).has(where.value)) return false;
      }
    }
    if (state.actor) {
      const d = decided(s);
      if (s.derived.actor !== state.actor && !(d && d.who === state.actor)) return false;
    }
    if (state.text) {
      const t = state.text;
      const w = says(s);
      const hay = (s.id + " " + w.use + " " + w.avoid.join(" ") + " " + whereText(s)).toLowerCase();
      if (!hay.includes(t)) return false;
    }
    return true;
  }
  function applyRules() {
    let where = null;
    if (state.where === "(everywhere)") where = { everywhere: true };
    else if (state.where) {
      const i = state.where.indexOf("=");
      where = { axis: state.where.slice(0, i), value: state.where.slice(i + 1) };
    }
    const rows = [];
    for (let i = 0; i < subjects.length; i++) if (matchesRow(subjects[i], where)) rows.push(i);
    const col = columns.find((c) => c.key === state.sort) || columns[0];
    const keys = new Map(rows.map((i) => [i, col.sort(subjects[i])]));
    rows.sort((a, b) => {
      const x = keys.get(a), y = keys.get(b);
      return (x < y ? -1 : x > y ? 1 : a - b) * state.dir;
    });
    state.rows = rows;
    state.page = Math.min(state.page, Math.max(0, Math.ceil(rows.length / PAGE) - 1));
    renderRules();
  }
  function renderRules() {
    const body = byId("rules-body");
    const rows = state.rows;
    const start = state.page * PAGE;
    const frag = document.createDocumentFragment();
    for (const i of rows.slice(start, start + PAGE)) {
      const s = subjects[i];
      const w = says(s);
      const d = decided(s);
      const open = el("button", { type: "button", "aria-label": "History of " + s.short, text: s.short });
      open.addEventListener("click", () => select(s.id));
      const decidedCell = d ? [actorLabel(d.who), ...(d.signed ? [" ", el("span", { cls: "signed", title: "signed by " + d.signed, text: "\u2713 " + d.signed })] : []), el("br"), el("span", { cls: "muted", text: d.to + " " + when(d.at) })] : [el("span", { cls: "muted", text: "\u2014" })];
      frag.append(el("tr", { "data-id": s.id }, [
        el("td", { cls: "id" }, [open]),
        el("td", null, [statusBadge(s.status), s.advisory ? el("span", { cls: "muted", text: " advisory" }) : null]),
        el("td", { text: s.family }),
        el("td", { cls: "use", text: w.use }),
        el("td", { cls: "avoid-cell" }, w.avoid.map((a, k) => el("span", { cls: "avoid", text: a + (k + 1 < w.avoid.length ? ", " : "") }))),
        el("td", { text: whereText(s) }),
        el("td", { text: actorLabel(s.actor) }),
        el("td", null, decidedCell),
        el("td", { text: standing[s.id] || "" }),
      ]));
    }
    body.replaceChildren(frag);
    const pages = Math.max(1, Math.ceil(rows.length / PAGE));
    byId("rules-summary").textContent = rows.length === subjects.length
      ? plural(rows.length, "subject", "subjects")
      : plural(rows.length, "subject matches", "subjects match") + " of " + subjects.length.toLocaleString("en");
    byId("page-of").textContent = rows.length ? "rows " + (start + 1).toLocaleString("en") + "\u2013" + Math.min(rows.length, start + PAGE).toLocaleString("en") + ", page " + (state.page + 1) + " of " + pages : "no rows";
    byId("page-prev").disabled = state.page === 0;
    byId("page-next").disabled = state.page + 1 >= pages;
    for (const th of byId("rules-head").children) {
      th.setAttribute("aria-sort", th.dataset.key === state.sort ? (state.dir > 0 ? "ascending" : "descending") : "none");
    }
  }
  function drawRules() {
    const head = byId("rules-head");
    for (const c of columns) {
      const b = el("button", { type: "button", text: c.label });
      b.addEventListener("click", () => {
        if (state.sort === c.key) state.dir = -state.dir; else { state.sort = c.key; state.dir = 1; }
        applyRules();
      });
      head.append(el("th", { scope: "col", "data-key": c.key, "aria-sort": "none" }, [b]));
    }
    fillSelect(byId("f-status"), counted((s) => [s.status]));
    fillSelect(byId("f-family"), counted((s) => [s.family]));
    const where = counted((s) => {
      const keys = Object.keys(s.coordinates);
      if (!keys.length) return ["(everywhere)"];
      const out = [];
      for (const k of keys) for (const v of ancestors(k, s.coordinates[k])) out.push(k + "=" + v);
      return out;
    });
    fillSelect(byId("f-where"), where, (v) => {
      const p = placeName.get(v);
      return p && p.name ? v + " (" + p.name + ")" : v;
    });
    // Who stated or decided each subject.
    fillSelect(byId("f-actor"), counted((s) => {
      const d = decided(s);
      return d && d.who && d.who !== s.derived.actor ? [s.derived.actor, d.who] : [s.derived.actor];
    }), (v) => v.replace(":", " "));
    let timer = 0;
    byId("f-text").addEventListener("input", (ev) => {
      clearTimeout(timer);
      timer = setTimeout(() => { state.text = ev.target.value.trim().toLowerCase(); state.page = 0; applyRules(); }, subjects.length > 5000 ? 120 : 0);
    });
    for (const [id, key] of [["f-status", "status"], ["f-family", "family"], ["f-where", "where"], ["f-actor", "actor"]]) {
      byId(id).addEventListener("change", (ev) => { state[key] = ev.target.value; state.page = 0; applyRules(); });
    }
    byId("filters").addEventListener("submit", (ev) => ev.preventDefault());
    byId("filters").addEventListener("reset", () => {
      Object.assign(state, { text: "", status: "", family: "", where: "", actor: "", page: 0 });
      setTimeout(applyRules, 0);
    });
    byId("page-prev").addEventListener("click", () => { state.page = Math.max(0, state.page - 1); renderRules(); });
    byId("page-next").addEventListener("click", () => { state.page += 1; renderRules(); });
    applyRules();
  }

  // ---- History ----
  let selected = null;
  const KIND = (k) => (["observe", "correct", "import", "edit"].includes(k) ? "statement" : ["signal", "check"].includes(k) ? "signal" : "decision");
  const COLORS = { statement: "#2f6fbf", decision: "#1f8a4c", signal: "#b7bfc9" };
  const STATUS_COLORS = { suggested: "#d4a514", established: "#1f8a4c", contested: "#c0392b", withdrawn: "#8a939e", dropped: "#4f5863", reset: "#7b4bc4" };
  // Two clocks, each on its own scale: the recorded clock (operations,
  // and a rule's statuses) and the effective clock (window boundaries).
  function scale(times, left, right) {
    let lo = Infinity, hi = -Infinity;
    for (const t of times) { if (t < lo) lo = t; if (t > hi) hi = t; }
    if (!isFinite(lo)) return null;
    if (hi - lo < 3600e3) { lo -= 1800e3; hi += 1800e3; }
    const pad = (hi - lo) * 0.02;
    lo -= pad; hi += pad;
    const at = (t) => left + ((t - lo) / (hi - lo)) * (right - left);
    return { lo: lo, hi: hi, at: at };
  }
  const W = 1000, LEFT = 120, RIGHT = 980;
  const now = data.as_of ? ms(data.as_of) : ms(data.made_at);
  let recorded = null, effective = null;
  function scales() {
    if (recorded) return;
    const rt = [now];
    if (nEvents) rt.push(evAt[0], evAt[nEvents - 1]);
    recorded = scale(rt, LEFT, RIGHT);
    const et = [now];
    if (windows.length) et.push(ms(windows[0].at), ms(windows[windows.length - 1].at));
    effective = scale(et, LEFT, RIGHT);
  }
  function label(t, sc) {
    const iso = new Date(t).toISOString();
    return sc.hi - sc.lo < 3 * 86400e3 ? iso.slice(5, 16).replace("T", " ") : iso.slice(0, 10);
  }
  function axis(root, sc, y) {
    for (let i = 0; i <= 5; i++) {
      const t = sc.lo + ((sc.hi - sc.lo) * i) / 5;
      const px = sc.at(t);
      root.append(sv("line", { x1: px, x2: px, y1: y, y2: y + 5, stroke: "#4f5863" }));
      root.append(sv("text", { x: px, y: y + 17, "text-anchor": i === 0 ? "start" : i === 5 ? "end" : "middle" }, label(t, sc)));
    }
  }
  function drawTimeline() {
    scales();
    const H = 270;
    const root = sv("svg", { viewBox: "0 0 " + W + " " + H, role: "img", "aria-labelledby": "tl-title tl-desc", id: "timeline-svg" });
    root.append(sv("title", { id: "tl-title" }, "Timeline of " + atlas.project));
    root.append(sv("desc", { id: "tl-desc" }, plural(nEvents, "operation", "operations") + " on the recorded clock, " + label(recorded.lo, recorded) + " to " + label(recorded.hi, recorded) + " (bars, by kind), and " + plural(windows.length, "window boundary", "window boundaries") + " on the effective clock, " + label(effective.lo, effective) + " to " + label(effective.hi, effective) + " (ticks)."));
    const lanes = [["Recorded clock", 10, 100], ["Selected rule", 114, 22], ["Effective clock", 176, 56]];
    for (const [name, y, h] of lanes) {
      root.append(sv("rect", { x: LEFT, y: y, width: RIGHT - LEFT, height: h, fill: "#ffffff", stroke: "#c9d1d9" }));
      root.append(sv("text", { x: 8, y: y + h / 2 + 4 }, name));
    }
    // Operations, binned by time and stacked by kind.
    const BINS = 150;
    const bins = [];
    for (let i = 0; i < BINS; i++) bins.push({ statement: 0, decision: 0, signal: 0 });
    const width = (recorded.hi - recorded.lo) / BINS;
    const kindOf = packed.kinds.map(KIND);
    for (let i = 0; i < nEvents; i++) {
      const b = Math.min(BINS - 1, Math.max(0, Math.floor((evAt[i] - recorded.lo) / width)));
      bins[b][kindOf[packed.kind[i]]]++;
    }
    let most = 1;
    for (const b of bins) most = Math.max(most, b.statement + b.decision + b.signal);
    const bw = (RIGHT - LEFT) / BINS;
    bins.forEach((b, i) => {
      const total = b.statement + b.decision + b.signal;
      if (!total) return;
      let y = 110;
      const g = sv("g", { "data-bin": i });
      g.append(sv("title", {}, label(recorded.lo + i * width, recorded) + ": " + plural(total, "operation", "operations") + " (" + b.statement + " statements, " + b.decision + " decisions, " + b.signal + " signals and checks)"));
      for (const k of ["signal", "decision", "statement"]) {
        if (!b[k]) continue;
        const h = Math.max(1.5, (b[k] / most) * 96);
        y -= h;
        g.append(sv("rect", { x: LEFT + i * bw, y: y, width: Math.max(1, bw - 0.5), height: h, fill: COLORS[k] }));
      }
      root.append(g);
    });
    axis(root, recorded, 140);
    // Window boundaries, one tick per pixel and bound.
    const wb = new Map();
    for (const w of windows) {
      const key = Math.round(effective.at(ms(w.at))) + ":" + w.bound;
      wb.set(key, (wb.get(key) || 0) + 1);
    }
    for (const [key, n] of wb) {
      const [px, bound] = key.split(":");
      const from = bound === "valid_from";
      const t = sv("line", { x1: px, x2: px, y1: from ? 180 : 204, y2: from ? 204 : 228, stroke: from ? "#0f766e" : "#c0392b", "stroke-width": 2, "data-bound": bound });
      t.append(sv("title", {}, plural(n, from ? "rule starts" : "rule stops", from ? "rules start" : "rules stop") + " holding"));
      root.append(t);
    }
    if (!windows.length) root.append(sv("text", { x: LEFT + 10, y: 208 }, "No rule has a window: each holds from when it is kept."));
    axis(root, effective, 236);
    // Now (or the instant read as of) on both clocks.
    for (const [sc, y1, y2] of [[recorded, 10, 136], [effective, 176, 232]]) {
      const px = sc.at(now);
      const line = sv("line", { x1: px, x2: px, y1: y1, y2: y2, stroke: "#c2410c", "stroke-dasharray": "4 3", "stroke-width": 1.5 });
      line.append(sv("title", {}, (data.as_of ? "as of " : "made ") + when(data.as_of || data.made_at)));
      root.append(line);
    }
    root.append(sv("g", { id: "track" }));
    const box = byId("timeline");
    box.replaceChildren(root, el("ul", { cls: "legend", "aria-label": "Legend" }, [
      el("li", { cls: "k-statement", text: "statements (observe, correct, import, edit)" }),
      el("li", { cls: "k-decision", text: "decisions (keep, drop, withdraw, widen, reset)" }),
      el("li", { cls: "k-signal", text: "signals and checks" }),
      el("li", { cls: "k-from", text: "a window starts" }),
      el("li", { cls: "k-to", text: "a window stops" }),
      el("li", { cls: "k-asof", text: data.as_of ? "as of " + when(data.as_of) : "when the page was made" }),
    ]));
  }
  function drawTrack(s) {
    const g = byId("track");
    if (!g) return;
    g.replaceChildren();
    const h = s.history || [];
    h.forEach((c, i) => {
      const from = recorded.at(ms(c.at));
      const to = recorded.at(i + 1 < h.length ? ms(h[i + 1].at) : Math.max(now, ms(c.at)));
      const r = sv("rect", { x: from, y: 116, width: Math.max(2, to - from), height: 18, fill: STATUS_COLORS[c.to] || "#888", "data-status": c.to });
      r.append(sv("title", {}, c.to + " from " + when(c.at)));
      g.append(r);
    });
    const wf = windows.find((b) => b.subject === s.id && b.bound === "valid_from");
    const wt = windows.find((b) => b.subject === s.id && b.bound === "valid_to");
    if (wf || wt) {
      const a = wf ? effective.at(ms(wf.at)) : LEFT;
      const b = wt ? effective.at(ms(wt.at)) : RIGHT;
      const r = sv("rect", { x: a, y: 180, width: Math.max(2, b - a), height: 48, fill: "#0f766e", "fill-opacity": "0.22", stroke: "#0f766e", "data-window": s.id });
      r.append(sv("title", {}, "#" + s.short + " holds " + whereText(s)));
      g.append(r);
    }
  }
  function select(id) {
    const i = index.get(id);
    if (i === undefined) return;
    selected = subjects[i];
    show("history", false);
    drawTrack(selected);
    drawChain(selected);
    byId("chain").querySelector("h3").focus();
  }
  function ruleButton(id, text) {
    const i = index.get(id);
    const s = i === undefined ? null : subjects[i];
    const b = el("button", { type: "button", text: text || (s ? "#" + s.short + " " + says(s).use : "#" + id.slice(0, 10)) });
    if (s) b.addEventListener("click", () => select(id));
    else b.disabled = true;
    return b;
  }
  function drawChain(s) {
    const w = says(s);
    const box = byId("chain");
    const h3 = el("h3", { tabindex: "-1" }, ["#" + s.short + " ", statusBadge(s.status), " " + w.use]);
    const parts = [h3];
    if (w.avoid.length) parts.push(el("p", null, ["Avoids: ", el("span", { cls: "avoid", text: w.avoid.join(", ") })]));
    parts.push(el("p", { text: "Holds " + whereText(s) + "; recorded " + when(s.recorded_at) + " by " + actorLabel(s.actor) + " (" + s.operation + ")." }));
    if (standing[s.id]) parts.push(el("p", { text: "Standing: " + standing[s.id] }));
    parts.push(el("h4", { text: "Every status it took" }));
    const ol = el("ol", { id: "chain-changes" });
    for (const c of s.history || []) {
      const e = eventOf(c.by);
      ol.append(el("li", { "data-to": c.to }, [
        when(c.at) + " ", statusBadge(c.to), (c.from ? " (was " + c.from + ")" : "") + " by #" + c.by.slice(0, 10) + (e ? " \u00B7 " + e.kind + " by " + actorLabel(e.actor) + (e.signed ? " \u2713 " + e.signed : "") : ""),
      ]));
    }
    parts.push(ol);
    const rivals = s.contested_by || [];
    const contesting = subjects.filter((o) => (o.contested_by || []).includes(s.id)).map((o) => o.id);
    const all = [...new Set(rivals.concat(contesting))];
    if (all.length) {
      parts.push(el("h4", { text: "It disagrees with" }));
      parts.push(el("ul", { cls: "matches" }, all.map((id) => el("li", null, [ruleButton(id)]))));
    }
    const ops = eventsOn(s.id);
    parts.push(el("h4", { text: "Operations on it (" + ops.length.toLocaleString("en") + ")" }));
    const list = el("ol", { id: "chain-ops" });
    for (const e of ops.slice(0, 100)) {
      list.append(el("li", { text: when(e.at) + " " + e.kind + " by " + actorLabel(e.actor) + " #" + e.id.slice(0, 10) + (e.signed ? " \u2713 " + e.signed : "") + (e.ignored ? " (ignored: " + e.ignored + ")" : "") }));
    }
    parts.push(list);
    if (ops.length > 100) parts.push(el("p", { cls: "muted", text: "and " + (ops.length - 100).toLocaleString("en") + " more (kapi context log --history lists them all)" }));
    box.replaceChildren(...parts);
  }
  function drawHistory() {
    scales();
    byId("history-summary").textContent = plural(nEvents, "operation", "operations") + " on the recorded clock (when the log accepted each) and " + plural(windows.length, "window boundary", "window boundaries") + " on the effective clock (when a rule starts or stops holding), each clock on its own scale. Choose a rule to draw its statuses and its window.";
    drawTimeline();
    if (selected) drawTrack(selected);
    const find = byId("h-find");
    const matches = byId("h-matches");
    find.addEventListener("input", () => {
      const t = find.value.trim().toLowerCase();
      matches.replaceChildren();
      if (!t) return;
      let n = 0;
      for (const s of subjects) {
        const w = says(s);
        if ((s.id + " " + w.use + " " + w.avoid.join(" ")).toLowerCase().includes(t)) {
          matches.append(el("li", null, [ruleButton(s.id)]));
          if (++n >= 20) break;
        }
      }
      if (!n) matches.append(el("li", { cls: "muted", text: "no rule matches" }));
    });
  }

  // ---- Where ----
  function drawWhere() {
    const at = new Map(); // "axis=value" -> [subject index]
    const everywhere = [];
    const used = new Map(); // axis -> Set(values)
    subjects.forEach((s, i) => {
      const keys = Object.keys(s.coordinates);
      if (!keys.length) everywhere.push(i);
      for (const k of keys) {
        const key = k + "=" + s.coordinates[k];
        let list = at.get(key);
        if (!list) at.set(key, (list = []));
        list.push(i);
        if (!used.has(k)) used.set(k, new Set());
        used.get(k).add(s.coordinates[k]);
      }
    });
    function ruleList(list) {
      const ul = el("ul", { cls: "tree-rules" });
      const shown = list.slice(0, 50);
      for (const i of shown) {
        const s = subjects[i];
        ul.append(el("li", null, [ruleButton(s.id), " ", statusBadge(s.status)]));
      }
      if (list.length > shown.length) ul.append(el("li", { cls: "muted", text: "and " + (list.length - shown.length).toLocaleString("en") + " more (filter Rules in force by this place)" }));
      return ul;
    }
    const tree = byId("tree");
    const top = el("details", { open: "" }, [el("summary", { text: "The whole project (everywhere) \u00B7 " + plural(everywhere.length, "rule stated", "rules stated") })]);
    if (everywhere.length) top.append(ruleList(everywhere));
    tree.append(top);
    const axes = atlas.axes.slice();
    for (const name of [...used.keys()].sort()) if (!axes.some((a) => a.name === name)) axes.push({ name: name, kind: "untyped", values: [...used.get(name)].sort().map((v) => ({ value: v, within: [] })) });
    for (const a of axes) {
      let values = a.values && a.values.length ? a.values : [...(used.get(a.name) || [])].sort().map((v) => ({ value: v, within: [] }));
      const known = new Set(values.map((v) => v.value));
      for (const v of used.get(a.name) || []) if (!known.has(v)) values = values.concat([{ value: v, within: [] }]);
      const children = new Map();
      const roots = [];
      for (const v of values) {
        const ups = (v.within || []).filter((u) => known.has(u));
        if (!ups.length) roots.push(v.value);
        for (const u of ups) { if (!children.has(u)) children.set(u, []); children.get(u).push(v.value); }
      }
      // The rules stated at a value or any value within it, each once (a
      // place within two places is reached twice).
      const below = new Map();
      function within(value) {
        if (below.has(value)) return below.get(value);
        const seen = new Set([value]);
        const stack = [value];
        let n = 0;
        while (stack.length) {
          const v = stack.pop();
          n += (at.get(a.name + "=" + v) || []).length;
          for (const c of children.get(v) || []) if (!seen.has(c)) { seen.add(c); stack.push(c); }
        }
        below.set(value, n);
        return n;
      }
      function node(value, path) {
        const here = at.get(a.name + "=" + value) || [];
        const p = placeName.get(a.name + "=" + value);
        const label = value + (p && p.name ? " \u2014 " + p.name + (p.kind ? ", " + p.kind : "") : "");
        const total = within(value);
        const d = el("details", { "data-value": value }, [el("summary", { text: label + " \u00B7 " + here.length + " stated here" + (total > here.length ? ", " + (total - here.length) + " within" : "") })]);
        let filled = false;
        const fill = () => {
          if (filled) return;
          filled = true;
          if (here.length) d.append(ruleList(here));
          if (!path.has(value)) {
            const next = new Set(path).add(value);
            for (const c of children.get(value) || []) d.append(node(c, next));
          }
        };
        d.addEventListener("toggle", () => { if (d.open) fill(); });
        // The branches that lead to rules open, a few levels deep.
        if (total > 0 && path.size < 4) { d.open = true; fill(); }
        return d;
      }
      const ad = el("details", { open: "", "data-axis": a.name }, [el("summary", { text: a.name + " (" + a.kind + ") \u00B7 " + plural(values.length, "value", "values") })]);
      for (const r of roots) ad.append(node(r, new Set()));
      tree.append(ad);
    }
    drawMap(at);
  }
  function drawMap(at) {
    const places = atlas.places.filter((p) => typeof p.lat === "number" && typeof p.lon === "number");
    if (!places.length) return;
    let x0 = Infinity, x1 = -Infinity, y0 = Infinity, y1 = -Infinity;
    for (const p of places) { x0 = Math.min(x0, p.lon); x1 = Math.max(x1, p.lon); y0 = Math.min(y0, p.lat); y1 = Math.max(y1, p.lat); }
    const pad = Math.max(1, (x1 - x0) * 0.15, (y1 - y0) * 0.15);
    x0 -= pad; x1 += pad; y0 -= pad; y1 += pad;
    const MW = 600, MH = 360;
    const root = sv("svg", { viewBox: "0 0 " + MW + " " + MH, role: "img", "aria-label": "Map of the " + plural(places.length, "place", "places") + " with coordinates (longitude and latitude, no base map)" });
    for (const p of places) {
      const cx = ((p.lon - x0) / (x1 - x0)) * MW;
      const cy = MH - ((p.lat - y0) / (y1 - y0)) * MH;
      const n = (at.get(p.axis + "=" + p.id) || []).length;
      const c = sv("circle", { cx: cx, cy: cy, r: 4 + Math.min(12, Math.sqrt(n) * 3), fill: n ? "#0b5cad" : "#8a939e", "fill-opacity": "0.7" });
      c.append(sv("title", {}, (p.name || p.id) + ": " + plural(n, "rule stated", "rules stated")));
      root.append(c, sv("text", { x: cx + 8, y: cy + 4 }, p.name || p.id));
    }
    byId("map").append(el("h3", { text: "Places with coordinates" }), root);
  }

  // ---- Disagreements and what awaits a person ----
  function copy(line) {
    const say = (t) => { byId("copied").textContent = t; };
    const fallback = () => {
      const area = el("textarea", { "aria-hidden": "true" });
      area.value = line;
      document.body.append(area);
      area.select();
      let ok = false;
      try { ok = document.execCommand("copy"); } catch (e) { ok = false; }
      area.remove();
      say(ok ? "Copied: " + line : "Select the command and copy it: " + line);
    };
    if (navigator.clipboard && navigator.clipboard.writeText) {
      navigator.clipboard.writeText(line).then(() => say("Copied: " + line), fallback);
    } else fallback();
  }
  function command(line, label) {
    const b = el("button", { type: "button", "aria-label": "Copy: " + line, text: "Copy" });
    b.addEventListener("click", () => copy(line));
    return el("div", { cls: "cmd" }, [el("span", { cls: "muted", text: label }), el("code", { text: line }), b]);
  }
  function drawReview() {
    const box = byId("digest");
    const d = data.digest;
    const parts = [];
    parts.push(el("h3", { id: "awaiting-title", text: d.awaiting.length ? plural(d.awaiting.length, "item awaits", "items await") + " a decision" : "Nothing awaits a decision" }));
    const list = el("div", { id: "awaiting", "aria-labelledby": "awaiting-title", role: "list" });
    const itemOf = (p) => {
      const where = p.where ? " [" + p.where + "]" : "";
      const card = el("article", { cls: "item", role: "listitem", "data-id": p.id }, [
        el("p", null, [el("strong", { cls: "mono", text: "#" + p.short }), " ", statusBadge(p.status), " ", el("span", { cls: "subject", text: p.subject }), where]),
        el("p", { cls: "muted", text: "recorded by " + p.actor + (p.standing ? " \u00B7 " + p.standing : "") + ((p.also || []).length ? " \u00B7 also " + p.also.join(", ") : "") }),
      ]);
      if ((p.contested_by || []).length) card.append(el("p", null, ["Disagrees with: "].concat(p.contested_by.map((id) => ruleButton(id))) ));
      card.append(el("p", null, [ruleButton(p.id, "See its history")]));
      for (const c of p.commands) card.append(command(c.line, c.decision));
      return card;
    };
    // Fifty at a time: a long log may await thousands of decisions.
    let shown = 0;
    const more = el("button", { type: "button", id: "awaiting-more" });
    const showMore = () => {
      const next = d.awaiting.slice(shown, shown + PAGE);
      const frag = document.createDocumentFragment();
      for (const p of next) frag.append(itemOf(p));
      list.append(frag);
      shown += next.length;
      const left = d.awaiting.length - shown;
      more.hidden = left === 0;
      more.textContent = "Show " + Math.min(PAGE, left) + " more (" + left.toLocaleString("en") + " not shown)";
    };
    more.addEventListener("click", () => {
      const first = shown;
      showMore();
      const next = list.children[first];
      if (next) { next.tabIndex = -1; next.focus(); }
    });
    showMore();
    parts.push(list, el("p", null, [more]));
    if (d.awaiting.length) parts.push(el("p", { cls: "muted", text: "Or walk them one by one in a terminal: kapi context review" }));
    parts.push(el("h3", { text: d.disagreeing.length ? plural(d.disagreeing.length, "pair of imported rules disagrees", "pairs of imported rules disagree") : "No imported rules disagree" }));
    if (d.disagreeing.length) {
      parts.push(el("p", { text: "Both report until one file changes: edit one of the files, or switch a rule off in .vale.ini, and import again." }));
      const ul = el("ul", { id: "disagreeing" });
      const side = (r) => (r.file ? r.file + ": " : "#" + String(r.id).slice(0, 10) + ": ") + r.rule;
      for (const x of d.disagreeing) ul.append(el("li", { text: side(x.first) + " and " + side(x.second) }));
      parts.push(ul);
    }
    parts.push(el("h3", { text: plural(d.in_force, "rule or note is", "rules and notes are") + " in force and await nothing" }));
    const b = el("button", { type: "button", text: "Show the established ones in Rules in force" });
    b.addEventListener("click", () => {
      show("rules", false);
      byId("f-status").value = "established";
      state.status = "established"; state.page = 0; applyRules();
      byId("f-status").focus();
    });
    parts.push(el("p", null, [b]));
    box.replaceChildren(...parts);
  }

  const draw = { rules: drawRules, history: drawHistory, where: drawWhere, review: drawReview };
  show(location.hash.slice(1) || "rules", false);
  document.documentElement.setAttribute("data-ready", "1");
  window.kapiAtlasReady = performance.now();
})();
