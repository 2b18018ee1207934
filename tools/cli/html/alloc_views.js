/* alloc_views.js — the page's allocator views over the run, from run.history (html_history.c
   serialises what tools/analysis/alloc_history.c computes; embedded into report.html at build
   time by tools/cli/CMakeLists.txt): memory_viz's active memory timeline (a band per block,
   stacked in allocation order, coloured by its top frame) with the allocated / reserved /
   inactive-split lines, the segments at any moment (a scrubber; the OOMs and the peaks as
   buttons) and an icicle of the bytes allocated at the peak by stack. The x axis is the
   allocator's event number, as memory_viz's. Drawing only: the figures come with the data. */
"use strict";
const HIST_LINES = [["allocated", "#1a1a1a", []], ["reserved", "#c2185b", [5, 3]],
                    ["inactive_split", "#e08e0b", [2, 2]]];
const REST_COLOR = "#c8c8c8";
function frameColor(frame) {
  let h = 0; for (const ch of frame || "") h = (h * 31 + ch.charCodeAt(0)) >>> 0;
  return frame ? COLORS[h % COLORS.length] : OTHER_COLOR;
}
const siteOf = (H, st) => (st >= 0 ? H.sites[st] || H.stacks[st][0] || "" : "");
const evText = k => "event " + Math.round(k);
const endOf = v => (v < 0 ? Infinity : v);
function whenText(H, seq, t) {
  return seq < 0 ? "never (still live at the end)" : "event " + seq + " (" + fmtDur(t) + ")";
}

/* A tooltip over box's parts: content(target) gives its children, or null for none. The
   allocator view (report.html) uses it too. */
function boxTip(box, tip, content) {
  box.addEventListener("mousemove", e => {
    const kids = content(e.target);
    if (!kids) { tip.style.display = "none"; return; }
    tip.replaceChildren(...kids);
    const r = box.getBoundingClientRect();
    tip.style.display = "block";
    tip.style.left = Math.min(e.clientX - r.left + 14, r.width - 380) + "px";
    tip.style.top = (e.clientY - r.top + 14) + "px";
  });
  box.addEventListener("mouseleave", () => { tip.style.display = "none"; });
}

/* Each band's bottom edge over its life: [seq, base] points, held until the next. */
function layoutBands(bands, N) {
  const moments = new Map(), at = k => moments.get(k) || (moments.set(k, {add: [], del: []}), moments.get(k));
  bands.forEach((b, i) => { const a = b[3], f = endOf(b[4]);
    if (f <= a) return;
    at(a).add.push(i); if (f < Infinity) at(f).del.push(i); });
  const keys = [...moments.keys()].sort((x, y) => x - y), live = [], pts = bands.map(() => []);
  for (const k of keys) {
    const m = moments.get(k);
    let from = live.length;
    if (m.del.length) {
      const gone = new Set(m.del);
      for (let p = 0; p < live.length; p++) if (gone.has(live[p])) { from = Math.min(from, p); }
      for (let p = live.length - 1; p >= 0; p--) if (gone.has(live[p])) live.splice(p, 1);
    }
    m.add.sort((x, y) => bands[x][3] - bands[y][3] || x - y);
    for (const i of m.add) live.push(i);
    let base = 0;
    for (let p = 0; p < live.length; p++) {
      if (p >= from || pts[live[p]].length === 0) pts[live[p]].push([k, base]);
      base += bands[live[p]][1];
    }
  }
  return pts;
}
function baseAt(pts, k) {
  let lo = 0, hi = pts.length;
  while (lo < hi) { const m = (lo + hi) >> 1; if (pts[m][0] <= k) lo = m + 1; else hi = m; }
  return lo ? pts[lo - 1][1] : null;
}

function activeTimeline(parent, run, H, dv, ri) {
  const bands = dv.blocks.slice(0, dv.bands), N = Math.max(H.events, 1), pts = layoutBands(bands, N);
  const S = dv.series, top = i => siteOf(H, bands[i][6]);
  /* the rest lies on top of the bands: its bottom is the bands' sum */
  const sumAt = new Map();
  bands.forEach((b, i) => pts[i].forEach(([k, base]) => {
    const v = base + b[1]; if (v > (sumAt.get(k) || 0)) sumAt.set(k, v); }));
  const bandsSum = k => { let best = 0;
    bands.forEach((b, i) => { if (b[3] <= k && k < endOf(b[4]) && b[4] !== b[3]) {
      const base = baseAt(pts[i], k); if (base != null) best = Math.max(best, base + b[1]); } });
    return best; };
  const bandAt = (k, v) => { for (let i = 0; i < bands.length; i++) { const b = bands[i];
    if (b[3] > k || k >= endOf(b[4])) continue;
    const base = baseAt(pts[i], k); if (base != null && v >= base && v < base + b[1]) return i; }
    return -1; };
  const R = dv.rest, restBase = R.s.map(bandsSum), ob = outsideBand(H, dv, S); /* outside_views.js */
  const ymax = Math.max(1, ...S.reserved, ...S.allocated, ob ? ob.top : 0) * 1.08;
  /* the reserved bytes can dwarf the allocated ones: a button fits the scale to these */
  const chart = new Chart(parent, {tmax: N, ymax, ymaxFit: Math.max(1, ...S.allocated) * 1.08, fmtX: evText, minSpan: 4, height: 320,
    draw(c, g) {
      const k0 = c.t0, k1 = c.t1;
      bands.forEach((b, i) => {
        const P = pts[i], a = b[3], f = Math.min(endOf(b[4]), N);
        if (!P.length || f < k0 || a > k1) return;
        g.fillStyle = frameColor(top(i)); g.globalAlpha = i % 2 ? 0.8 : 1; g.beginPath();
        g.moveTo(c.x(a), c.y(P[0][1] + b[1]));
        for (let p = 0; p < P.length; p++) { const x1 = c.x(p + 1 < P.length ? P[p + 1][0] : f);
          g.lineTo(c.x(P[p][0]), c.y(P[p][1] + b[1])); g.lineTo(x1, c.y(P[p][1] + b[1])); }
        for (let p = P.length - 1; p >= 0; p--) { const x1 = c.x(p + 1 < P.length ? P[p + 1][0] : f);
          g.lineTo(x1, c.y(P[p][1])); g.lineTo(c.x(P[p][0]), c.y(P[p][1])); }
        g.closePath(); g.fill();
      });
      g.globalAlpha = 1;
      if (R.s.length) c.stepArea(g, R.s, j => restBase[j], j => restBase[j] + R.allocated[j], REST_COLOR);
      if (ob) outsideDraw(c, g, ob);
      HIST_LINES.forEach(([key, color, dash]) => c.stepLine(g, S.s, j => S[key][j], color, dash));
      dv.ooms.forEach((o, i) => c.marker(g, o.seq, "OOM", {oom: i}));
    },
    hover(c, t, v) {
      const k = Math.floor(t), j = lastAtOrBefore(S.s, k);
      const head = el("div", {class: "muted"}, evText(k) + (j >= 0 ? ": allocated " + fmtBytes(S.allocated[j]) +
        ", reserved " + fmtBytes(S.reserved[j]) + ", inactive split " + fmtBytes(S.inactive_split[j]) : ""));
      const i = bandAt(k, v), out = ob && outsideHover(ob, H, k, v);
      if (out) return [...out, head];
      if (i < 0) { const q = lastAtOrBefore(R.s, k);
        return q >= 0 && v >= restBase[q] && v < restBase[q] + R.allocated[q] ? [el("b", null, "other: " +
          fmtBytes(R.allocated[q])), el("div", {class: "muted"}, "the smaller blocks, summed"), head] : [head]; }
      const b = bands[i], st = b[6] >= 0 ? H.stacks[b[6]] : null;
      return [el("b", null, fmtBytes(b[1]) + " (" + b[1] + " bytes)"),
        el("div", null, "requested " + fmtBytes(b[2]) + " at 0x" + b[0].toString(16)),
        el("div", null, "allocated at " + whenText(H, b[3], b[7])),
        el("div", null, "freed at " + whenText(H, b[4], b[8])), head, stackList(st, 16)];
    }});
  chart.bands = bands; chart.pts = pts; chart.bandAt = bandAt; chart.outside = ob;
  const legend = el("div", {class: "legend"});
  const tops = new Map();
  bands.forEach((b, i) => tops.set(top(i), (tops.get(top(i)) || 0) + b[1]));
  [...tops.entries()].sort((x, y) => y[1] - x[1]).slice(0, 10).forEach(([f]) => legend.append(el("span",
    {title: f}, el("span", {class: "sw", style: "background:" + frameColor(f)}), (f || "(no stack)").slice(0, 60))));
  if (dv.rest.s.length) legend.append(el("span", null, el("span", {class: "sw", style: "background:" + REST_COLOR}),
    "other: the " + (dv.blocks_total - dv.bands) + " smaller blocks, summed"));
  outsideLegend(legend, H, ob);
  HIST_LINES.forEach(([key, color, dash]) => legend.append(el("span", null, el("span", {class: "ln",
    style: "border-top: 2px " + (dash.length ? "dashed " : "solid ") + color}), key.replace("_", " "))));
  parent.append(legend);
  return chart;
}

/* ---- the segments at a moment ---- */
function segmentView(parent, run, H, dv, ri) {
  const N = Math.max(H.events, 1), box = el("div", {class: "aview hseg", id: "hseg-" + ri + "-" + dv.dev});
  const label = el("span", {class: "muted"}), slider = el("input", {type: "range", min: 0, max: N - 1, value: N - 1,
    style: "width: 420px"});
  const bar = el("div", {class: "toolbar"}, el("span", null, "after "), slider, label);
  const go = k => { slider.value = k; draw(+k); };
  dv.ooms.forEach((o, i) => bar.append(el("button", {class: "hs-oom", onclick: () => go(o.seq)},
    "OOM" + (o.episode >= 0 ? " #" + (o.episode + 1) : ""))));
  if (dv.peak) bar.append(el("button", {class: "hs-peak", onclick: () => go(dv.peak.seq)}, "allocated peak"));
  if (dv.reserved_peak) bar.append(el("button", {class: "hs-rpeak", onclick: () => go(dv.reserved_peak.seq)}, "reserved peak"));
  bar.append(el("button", {onclick: () => go(N - 1)}, "end"));
  slider.addEventListener("input", () => draw(+slider.value));
  const rows = el("div"), tip = el("div", {class: "tip"});
  box.append(rows, tip);
  const legend = el("div", {class: "legend"});
  for (const k of ["active", "pending", "free", "split"])
    legend.append(el("span", {title: BLOCK_KINDS[k]}, el("span", {class: "sw blk " + k, style: "position: static; " +
      "border: 1px solid #888" + (k === "active" ? "; background: " + COLORS[0] : "")}),
      k === "active" ? "allocated (a colour per call site)" : BLOCK_KINDS[k]));
  const outside = el("div", {class: "outside-list"});
  parent.append(bar, box, legend, outside);
  function draw(k) {
    outsideList(outside, H, dv, k); /* outside_views.js */
    const segs = dv.segments.filter(s => s[2] <= k && k < endOf(s[3])).sort((a, b) => a[0] - b[0]);
    const inSeg = segs.map(() => []);
    let allocated = 0, t = 0;
    for (const b of dv.blocks) {
      if (b[3] > k || k >= endOf(b[5])) continue;
      if (b[3] <= k) t = Math.max(t, b[7]);
      let lo = 0, hi = segs.length;
      while (lo < hi) { const m = (lo + hi) >> 1; if (segs[m][0] <= b[0]) lo = m + 1; else hi = m; }
      const s = lo - 1;
      if (k < endOf(b[4])) allocated += b[1];
      if (s >= 0 && b[0] < segs[s][0] + segs[s][1]) inSeg[s].push(b);
    }
    const reserved = segs.reduce((a, s) => a + s[1], 0), largest = Math.max(1, ...segs.map(s => s[1]));
    box.dataset.reserved = reserved; box.dataset.segments = segs.length; box.dataset.seq = k;
    label.textContent = " event " + k + " of " + N + ": reserved " + fmtBytes(reserved) + " in " + segs.length +
      " segment" + (segs.length === 1 ? "" : "s") + ", allocated " + fmtBytes(allocated) + " (in the blocks drawn)" +
      (dv.blocks_total > dv.blocks.length ? "; the " + (dv.blocks_total - dv.blocks.length) + " smallest blocks are not drawn" : "");
    rows.replaceChildren(...segs.map((s, si) => {
      const sb = el("div", {class: "bar", style: "width: calc((100% - 160px) * " + (s[1] / largest) + ")"});
      const blocks = inSeg[si].sort((a, b) => a[0] - b[0]), live = blocks.length > 0;
      let at = s[0];
      const span = (off, size, kind, info) => { const e = el("div", {class: "blk " + kind, style: "left:" +
        (100 * (off - s[0]) / s[1]) + "%;width:" + Math.max(100 * size / s[1], 0.15) + "%"});
        e.blockInfo = info; sb.append(e); return e; };
      for (const b of blocks) {
        if (b[0] > at) span(at, b[0] - at, live ? "split" : "free", {seg: s, size: b[0] - at, kind: live ? "split" : "free"});
        const kind = k < endOf(b[4]) ? "active" : "pending";
        const e = span(b[0], b[1], kind, {seg: s, size: b[1], kind, b});
        if (kind === "active") e.style.background = frameColor(siteOf(H, b[6]));
        at = Math.max(at, b[0] + b[1]);
      }
      if (at < s[0] + s[1]) span(at, s[0] + s[1] - at, live ? "split" : "free", {seg: s, size: s[0] + s[1] - at, kind: live ? "split" : "free"});
      return el("div", {class: "seg"}, el("span", {class: "lab", title: "0x" + s[0].toString(16)},
        fmtBytes(s[1]) + (s[5] & 1 ? " exp." : "") + (s[5] & 2 ? " small" : "")), sb);
    }));
  }
  boxTip(box, tip, target => {
    const b = target.blockInfo;
    if (!b) return null;
    const kids = [el("b", null, fmtBytes(b.size) + " " + b.kind), el("div", {class: "muted"}, BLOCK_KINDS[b.kind]),
      el("div", null, "in a " + fmtBytes(b.seg[1]) + " segment at 0x" + b.seg[0].toString(16) + " (stream " + b.seg[4] + ")")];
    if (b.b) kids.push(el("div", null, "allocated at " + whenText(H, b.b[3], b.b[7]) + ", freed at " +
      whenText(H, b.b[4], b.b[8])), stackList(b.b[6] >= 0 ? H.stacks[b.b[6]] : null, 16));
    return kids;
  });
  go(dv.ooms.length ? dv.ooms[0].seq : dv.peak ? dv.peak.seq : N - 1);
  return {box, go, outside};
}

/* ---- the icicle: bytes allocated at the peak by stack, from the outermost caller ---- */
function icicle(parent, dv, ri) {
  const T = dv.icicle;
  if (!T.length) return null;
  const kids = T.map(() => []);
  T.forEach((n, i) => { if (n[0] >= 0) kids[n[0]].push(i); });
  const box = el("div", {class: "icicle", id: "icicle-" + ri + "-" + dv.dev}), tip = el("div", {class: "tip"});
  box.dataset.root = T[0][1];
  let depth = 0;
  const place = (i, left, width, d) => {
    depth = Math.max(depth, d);
    if (width < 0.05) return;
    const n = T[i], e = el("div", {class: "icn", style: "left:" + left + "%;width:" + width + "%;top:" + d * 19 + "px;background:" +
      (i ? frameColor(n[3]) : "#bbb")}, width > 4 ? n[3] : "");
    e.node = n; e.idx = i; box.append(e);
    let x = left;
    kids[i].sort((a, b) => T[b][1] - T[a][1]).forEach(c => { const w = width * T[c][1] / n[1];
      place(c, x, w, d + 1); x += w; });
  };
  /* a click on a frame makes it the full width (its callers above it), on a caller goes back */
  const draw = focus => {
    box.querySelectorAll(".icn").forEach(e => e.remove());
    const path = [];
    for (let i = focus; i > 0; i = T[i][0]) path.unshift(i);
    depth = 0;
    (focus ? [0, ...path.slice(0, -1)] : []).forEach((i, d) => place1(i, d));
    place(focus, 0, 100, path.length);
    box.style.height = (depth + 1) * 19 + "px";
    box.dataset.focus = focus;
  };
  const place1 = (i, d) => { const e = el("div", {class: "icn", style: "left:0;width:100%;top:" + d * 19 +
    "px;opacity:.7;background:" + (i ? frameColor(T[i][3]) : "#bbb")}, T[i][3]);
    e.node = T[i]; e.idx = i; box.append(e); };
  box.addEventListener("click", e => { if (e.target.idx != null) draw(e.target.idx); });
  draw(0);
  box.append(tip);
  boxTip(box, tip, target => {
    const n = target.node;
    return n ? [el("b", null, n[3]), el("div", null, fmtBytes(n[1]) + " (" + n[1] + " bytes, " +
      (100 * n[1] / T[0][1]).toFixed(1) + "% of the peak) in " + n[2] + " block" + (n[2] === 1 ? "" : "s"))] : null;
  });
  parent.append(box);
  return box;
}

const histViews = [];
/* added when the page renders: el() is defined by the page's script, after this one */
const histStyle = () => document.head.append(el("style", null, ".icicle { position: relative; margin: 6px 0 14px; font-size: 11px; }" +
  ".icn { position: absolute; height: 18px; overflow: hidden; white-space: nowrap; text-overflow: ellipsis;" +
  " padding: 1px 3px; color: #111; border-right: 1px solid #fff; box-sizing: border-box; }" +
  ".hseg { max-height: 640px; overflow-y: auto; } .outside-list { margin: 4px 0 14px; }"));
function historyPanel(parent, run) {
  const H = run.history, ri = runIndex(run);
  if (!H) return;
  if (!histViews.length) histStyle();
  H.stacks = H.stacks.map(s => s.map(f => H.frames[f])); /* frames are given once */
  for (const dv of H.devices) {
    const sec = el("section", {id: "hist-active-" + ri + "-" + dv.dev});
    parent.append(sec);
    sec.append(el("h3", null, "Active memory timeline: " + dv.device),
      el("div", {class: "muted"}, "Each allocator block a band from its allocation to its free, stacked in allocation order " +
        "and coloured by its call site (its first Python frame, else its first outside the allocator); x: the allocator's " + H.events + " events. " + (dv.bands < dv.blocks_total ?
        "Drawn: the " + dv.bands + " largest of " + dv.blocks_total + " blocks; the other " + (dv.blocks_total - dv.bands) +
        " are summed in grey." : "All " + dv.blocks_total + " blocks drawn.") + (H.truncated ? " The trace had more blocks than the history keeps." : "")));
    sec.append(outsideNote(H, dv));
    const chart = activeTimeline(sec, run, H, dv, ri);
    const seg = el("section", {id: "hist-segments-" + ri + "-" + dv.dev});
    parent.append(seg);
    seg.append(el("h3", null, "Segments at a moment: " + dv.device), el("div", {class: "muted"},
      "Drag the slider over the allocator's events; each segment a bar, its blocks: allocated (a colour per call site), " +
      "freed pending, free, split (free in a segment holding a live block)" +
      (dv.segments_left_out ? "; " + dv.segments_left_out + " segments not drawn" : "")));
    const sv = segmentView(seg, run, H, dv, ri);
    const ic = el("section", {id: "hist-icicle-" + ri + "-" + dv.dev});
    parent.append(ic);
    if (dv.peak) ic.append(el("h3", null, "Allocated at the peak by stack: " + fmtBytes(dv.peak.bytes) + " at event " +
      dv.peak.seq + " (" + fmtDur(dv.peak.t_ns) + ")"), el("div", {class: "muted"},
      "An icicle: the outermost callers on top, each frame as wide as the bytes allocated under it; hover for the figures, " +
      "click a frame to widen it (its callers stay above it), click a caller to go back"));
    histViews.push({run, dv, chart, sv, icicle: icicle(ic, dv, ri)});
  }
}

/* The self-test's checks of these views, on the first run's first device with a history. */
function historySelftest(r) {
  const v = histViews.find(h => h.run === DATA.runs[0]);
  if (!v) return true;
  const {dv, chart, sv} = v;
  r.hist_bands = chart.bands.length; r.hist_blocks_total = dv.blocks_total;
  /* hover the largest band half-way through its life, half-way up */
  /* the largest band at least 3 pixels tall, else the first of the largest that lies under a
     whole pixel (a band thinner than a pixel may lie beside another, or under none): half-way
     through its life, in the middle of one event's step, half-way up */
  const aim = i => {
    const b = chart.bands[i], k = Math.floor((b[3] + Math.min(endOf(b[4]), chart.tmax)) / 2) + 0.5;
    const base = baseAt(chart.pts[i], Math.floor(k));
    chart.setRange(Math.max(0, b[3] - 2), Math.min(chart.tmax, endOf(b[4]) + 2));
    const rect = chart.canvas.getBoundingClientRect(); /* a mouse event's coordinates are whole */
    const cx = Math.trunc(rect.left + chart.x(k)), y = Math.trunc(rect.top + chart.y(base + b[1] / 2));
    const under = cy => chart.bandAt(Math.floor(chart.tAt(cx - rect.left)), chart.vAt(cy - rect.top));
    const cy = [y, y + 1, y - 1, y + 2, y - 2].find(c => under(c) >= 0);
    return cy === undefined ? {cx, cy: y, under: -1} : {cx, cy, under: under(cy)};
  };
  const fit = [...chart.box.previousSibling.querySelectorAll("button")].find(b => b.textContent.startsWith("fit"));
  if (fit) fit.click(); /* bands are drawn to the allocated bytes' scale */
  const lives = chart.bands.map((b, i) => i).filter(i => endOf(chart.bands[i][4]) > chart.bands[i][3]);
  let i = lives.find(i => chart.bands[i][1] / chart.ymax * chart.plotH >= 3), at = null;
  if (i === undefined) i = lives.slice(0, 200).find(j => (at = aim(j)).under >= 0);
  if (i !== undefined) {
    at = aim(i);
    chart.canvas.dispatchEvent(new MouseEvent("mousemove", {clientX: at.cx, clientY: at.cy, bubbles: true}));
    const m = /\((\d+) bytes\)/.exec(chart.tip.textContent), ub = chart.bands[at.under >= 0 ? at.under : i];
    r.hist_hover_bytes = m ? +m[1] : null; r.hist_band_bytes = ub[1]; r.hist_hover_is_largest = at.under === i;
    r.hist_hover_ok = chart.tip.style.display === "block" && at.under >= 0 && r.hist_hover_bytes === ub[1] &&
      (ub[6] < 0 || chart.tip.textContent.includes(DATA.runs[0].history.stacks[ub[6]][0]));
    chart.canvas.dispatchEvent(new MouseEvent("mouseleave"));
    chart.reset();
  } else if (lives.length) r.hist_hover_ok = false;
  if (fit) fit.click();
  const click = cls => { const b = sv.box.parentNode.querySelector("button." + cls);
    if (!b) return null; b.click(); return +sv.box.dataset.reserved; };
  r.hist_reserved_at_oom = click("hs-oom");
  r.hist_reserved_at_peak = click("hs-rpeak");
  r.hist_segments_at_peak = +sv.box.dataset.segments;
  r.hist_reserved_peak = dv.reserved_peak ? dv.reserved_peak.bytes : null;
  r.icicle_root = v.icicle ? +v.icicle.dataset.root : null;
  r.icicle_nodes_drawn = v.icicle ? v.icicle.querySelectorAll(".icn").length : 0;
  const child = v.icicle && [...v.icicle.querySelectorAll(".icn")].find(e => e.idx > 0);
  if (child) { /* a click widens the frame: it alone below its callers, as wide as the root */
    const idx = child.idx;
    child.click();
    const now = [...v.icicle.querySelectorAll(".icn")].filter(e => e.idx === idx);
    r.icicle_zoom_ok = +v.icicle.dataset.focus === idx && now.length === 1 && now[0].style.width === "100%";
    v.icicle.querySelector(".icn").click(); /* the root: back */
    r.icicle_back_ok = +v.icicle.dataset.focus === 0;
  }
  r.outside_ok = outsideSelftest(r, v); /* outside_views.js */
  sv.go(dv.ooms.length ? dv.ooms[0].seq : dv.peak ? dv.peak.seq : 0);
  return r.outside_ok && r.hist_hover_ok !== false && r.hist_reserved_at_peak === r.hist_reserved_peak &&
    (!dv.peak || r.icicle_root === dv.peak.bytes) && r.icicle_zoom_ok !== false && r.icicle_back_ok !== false;
}

/* #shot-active, #shot-segments, #shot-icicle: only that view of the first run, for a screenshot */
function shotMode() {
  const m = /^#shot-(active|segments|icicle)$/.exec(location.hash);
  if (!m) return;
  const keep = document.querySelector("[id^=\"hist-" + m[1] + "-0-\"]");
  if (!keep) return;
  const root = document.getElementById("report");
  root.replaceChildren(el("h1", null, "cumemtrace report"), keep);
}
