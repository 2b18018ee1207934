/* outside_views.js — device memory outside the allocator on the page's allocator views, from
   run.history.devices[].outside (html_outside.c serialises what tools/analysis/alloc_outside.c
   computes; embedded after alloc_views.js by tools/cli/CMakeLists.txt): the driver's
   allocations no allocator segment covers (NCCL buffers, cuBLAS workspaces, a library's own
   cuMemAlloc) as a band per driver call site stacked on the reserved line of the active memory
   timeline (its top is the device memory the process holds), and listed in the segment view at
   its moment. A trace without driver-level records (a snapshot alone) says so in one line. */
"use strict";
const OUTSIDE_COLORS = ["#5b3a8e", "#8e5b3a", "#2e6f8e", "#6f8e2e", "#8e2e4f", "#3a8e7a"];
const OUTSIDE_NONE = "This file has no driver-level records, so memory outside the allocator is not known.";
const outsideSite = (H, s) => H.outside_sites[s] || "(no stack)";
const outsideColor = s => OUTSIDE_COLORS[s % OUTSIDE_COLORS.length];

/* The band's steps: at each moment T[j] the reserved bytes under it (base) and the bytes of
   each of the device's sites (sites: their indices, bottom first), summed upwards (cum). */
function outsideBand(H, dv, S) {
  const O = dv.outside;
  if (!O || !O.lives.length) return null;
  const sites = [...new Set(O.lives.map(l => l[4]))].sort((a, b) => a - b), row = new Map(sites.map((s, i) => [s, i]));
  const deltas = [];
  for (const l of O.lives) { deltas.push([l[2], row.get(l[4]), l[1]]); if (l[3] >= 0) deltas.push([l[3], row.get(l[4]), -l[1]]); }
  const T = [...new Set([...S.s, ...deltas.map(d => d[0])])].sort((a, b) => a - b);
  deltas.sort((a, b) => a[0] - b[0]);
  const now = sites.map(() => 0), cum = [], base = [];
  let d = 0, top = 0;
  for (const k of T) {
    while (d < deltas.length && deltas[d][0] <= k) { now[deltas[d][1]] += deltas[d][2]; d++; }
    const j = lastAtOrBefore(S.s, k), c = [];
    now.reduce((a, v) => (c.push(a + v), a + v), 0);
    cum.push(c); base.push(j >= 0 ? S.reserved[j] : 0);
    top = Math.max(top, base[base.length - 1] + c[c.length - 1]);
  }
  return {O, sites, T, cum, base, top};
}
/* @return the bytes outside at event k (every site), from the band's own steps. */
function outsideTotalAt(ob, k) {
  const j = lastAtOrBefore(ob.T, k);
  return j >= 0 ? ob.cum[j][ob.cum[j].length - 1] : 0;
}
function outsideDraw(c, g, ob) {
  ob.sites.forEach((s, i) => c.stepArea(g, ob.T, j => ob.base[j] + (i ? ob.cum[j][i - 1] : 0),
    j => ob.base[j] + ob.cum[j][i], outsideColor(s)));
}
const outsideLive = (O, k) => O.lives.filter(l => l[2] <= k && k < endOf(l[3]));
function outsideLifeText(H, l) {
  return "0x" + l[0].toString(16) + ": " + fmtBytes(l[1]) + " (" + l[7] + "), allocated at " +
    whenText(H, l[2], l[5]) + (l[3] < 0 ? ", still live at the end" : ", freed at " + whenText(H, l[3], l[6]));
}
/* The tip over the band at event k, bytes v: its site's bytes, the site, the allocations. */
function outsideHover(ob, H, k, v) {
  const j = lastAtOrBefore(ob.T, k);
  if (j < 0) return null;
  const i = ob.cum[j].findIndex((c, n) => v >= ob.base[j] + (n ? ob.cum[j][n - 1] : 0) && v < ob.base[j] + c);
  if (i < 0) return null;
  const s = ob.sites[i], bytes = ob.cum[j][i] - (i ? ob.cum[j][i - 1] : 0);
  if (!bytes) return null;
  const lives = outsideLive(ob.O, k).filter(l => l[4] === s);
  return [el("b", null, "outside the allocator: " + fmtBytes(bytes) + " (" + bytes + " bytes)"),
    el("div", null, "driver call site: " + outsideSite(H, s)),
    ...lives.slice(0, 6).map(l => el("div", null, outsideLifeText(H, l))),
    lives.length > 6 ? el("div", {class: "muted"}, "and " + (lives.length - 6) + " more") : null,
    el("div", {class: "muted"}, "all outside: " + fmtBytes(ob.cum[j][ob.cum[j].length - 1]) +
      ", stacked on the reserved " + fmtBytes(ob.base[j]))];
}
function outsideLegend(legend, H, ob) {
  if (!ob) return;
  ob.sites.slice(0, 8).forEach(s => legend.append(el("span", {title: outsideSite(H, s)}, el("span",
    {class: "sw", style: "background:" + outsideColor(s)}), "outside the allocator: " + outsideSite(H, s).slice(0, 50))));
}
/* The line under the timeline's title: what the band is, or that it cannot be known. */
function outsideNote(H, dv) {
  if (!H.outside_known) return el("div", {class: "muted outside-none"}, OUTSIDE_NONE);
  const O = dv.outside;
  return el("div", {class: "muted outside-note"}, !O.lives.length ? "No driver memory lay outside the allocator." :
    "Above the reserved line: device memory outside the allocator (driver allocations in no segment), a band per driver call site" +
    (O.lives_total > O.lives.length ? "; the " + O.lives.length + " largest of " + O.lives_total + " allocations drawn" : "") + ".");
}

/* The segment view's list at event k: the allocations outside live then. */
function outsideList(box, H, dv, k) {
  if (!H.outside_known || !dv.outside) { box.replaceChildren(); return; }
  const live = outsideLive(dv.outside, k), bytes = live.reduce((a, l) => a + l[1], 0);
  box.dataset.outside = bytes; box.dataset.count = live.length;
  box.replaceChildren(el("div", {class: "muted"}, "Outside the allocator at event " + k + ": " + fmtBytes(bytes) + " in " +
    live.length + " driver allocation" + (live.length === 1 ? "" : "s") + (live.length ? ":" : "")),
    ...live.slice(0, 50).map(l => el("div", {class: "seg"}, el("span", {class: "lab"}, fmtBytes(l[1])),
      el("span", {style: "display: inline-block; width: 10px; height: 10px; background:" + outsideColor(l[4])}),
      el("span", null, outsideSite(H, l[4]) + " — " + outsideLifeText(H, l)))));
}

/* The self-test's checks: at the first OOM the band drawn holds the bytes the data gives there
   (`oom --json`'s outside_bytes, the browser test compares), its tip says so, and the segment
   view lists them; a trace without driver records shows the one line. */
function outsideSelftest(r, v) {
  const {run, dv, chart, sv} = v, H = run.history;
  r.outside_known = !!H.outside_known;
  const note = document.querySelector(".outside-none");
  r.outside_message = note ? note.textContent : null;
  if (!H.outside_known) return r.outside_message === OUTSIDE_NONE;
  const ob = chart.outside;
  if (!dv.ooms.length) return true;
  const k = dv.ooms[0].seq;
  r.outside_at_oom = dv.outside.at_oom[0];
  r.outside_band_at_oom = ob ? outsideTotalAt(ob, k) : 0;
  const b = sv.box.parentNode.querySelector("button.hs-oom");
  if (b) { b.click(); r.outside_listed_at_oom = +sv.outside.dataset.outside; }
  if (ob && r.outside_band_at_oom) {
    chart.setRange(Math.max(0, k - 2), Math.min(chart.tmax, k + 3));
    const rect = chart.canvas.getBoundingClientRect(), cx = Math.trunc(rect.left + chart.x(k + 0.5));
    const kk = Math.floor(chart.tAt(cx - rect.left)), j = lastAtOrBefore(ob.T, kk);
    const cy = Math.trunc(rect.top + chart.y(ob.base[j] + ob.cum[j][0] / 2));
    chart.canvas.dispatchEvent(new MouseEvent("mousemove", {clientX: cx, clientY: cy, bubbles: true}));
    const m = /outside the allocator: [^(]*\((\d+) bytes\)/.exec(chart.tip.textContent);
    r.outside_hover_bytes = m ? +m[1] : null;
    r.outside_hover_ok = chart.tip.style.display === "block" && r.outside_hover_bytes === ob.cum[j][0] &&
      chart.tip.textContent.includes(outsideSite(H, ob.sites[0]));
    chart.canvas.dispatchEvent(new MouseEvent("mouseleave"));
    chart.reset();
  }
  return r.outside_band_at_oom === r.outside_at_oom && r.outside_listed_at_oom === r.outside_at_oom &&
    r.outside_hover_ok !== false;
}
