/* chart_levels.js — the device chart's levels of detail and its fast hover (embedded into
   report.html's script after the chart layer by tools/cli/CMakeLists.txt). The data carry the
   coarse series over the whole run and, per device, finer levels in windows around the peak
   and the first OOMs (tools/analysis/site_levels.c: each bucket keeps the state at its highest
   live bytes, so a peak is exact at every level); the chart draws the finest level whose span
   holds the visible range and says how fine that is and where detail ends. */

/* A finer level as the coarse series is (stackedSeries): its entry state at its start. */
function levelSeries(l) {
  const T = [l.t_lo], V = [l.entry_g];
  for (let i = 0; i < l.t.length; i++) {
    T.push(l.t[i]); V.push(l.g[i]);
    if (l.lt[i] !== l.t[i] || l.llive[i] !== l.live[i]) { T.push(l.lt[i]); V.push(l.lg[i]); }
  }
  const U = V.map(v => { let s = 0; return v.map(x => (s += x)); });
  return {T, V, U};
}

/* The device's levels, coarsest first; each builds its series and others' band on first use. */
function deviceLevels(dev, ng, S0) {
  const lazy = (o, make) => { let v = null; o.series = () => (v = v || make()); return o; };
  const levels = [lazy({lo: 0, hi: Infinity, bucket: dev.bucket_ns, window: -1}, () => S0)];
  for (const l of dev.levels || [])
    levels.push(lazy({lo: l.t_lo, hi: l.t_hi, bucket: l.bucket_ns, window: l.window}, () => levelSeries(l)));
  for (const lv of levels) {
    let b = null;
    /* the others band lies on top of this process's memory: over the union of both times */
    lv.band = () => {
      if (b) return b;
      const S = lv.series(), BT = [...new Set(S.T.concat(S0.OT))].sort((x, y) => x - y);
      const procAt = t => { const u = valueAt(S.T, S.U, t); return u ? u[ng - 1] : 0; };
      const BL = BT.map(procAt);
      return (b = {BT, BL, BU: BT.map((t, j) => BL[j] + (valueAt(S0.OT, S0.OV, t) || 0))});
    };
  }
  return levels;
}

/* The finest level whose span holds the chart's visible range. */
function pickLevel(levels, c) {
  let best = levels[0];
  for (const lv of levels)
    if (lv.lo <= c.t0 && c.t1 <= lv.hi && lv.bucket < best.bucket) best = lv;
  return best;
}

/* What the chart drew of level lv (its pixel-column maxima drawn here): its points in view and
   their highest total (the self-test reads them), and the range text's note on the detail. */
function noteLevel(c, g, lv, levels, ng) {
  drawEnvelope(c, g, lv, ng);
  const S = lv.series(), [a, b] = c.visible(S.T);
  let max = 0;
  for (let j = a; j <= b; j++) max = Math.max(max, S.U[j][ng - 1]);
  c.drawn = {points: S.T.length ? b - a + 1 : 0, max, bucket: lv.bucket, level: levels.indexOf(lv)};
  const finest = !levels.some(o => o.window === lv.window && o.bucket < lv.bucket);
  c.detailText = "; buckets of " + fmtDur(lv.bucket) +
    (levels.length < 2 ? "" : lv.window < 0 ? " (finer detail only near the peak and the first OOMs)"
     : finest ? (lv.bucket <= 1 ? " (single events)" : " (the finest kept)") : "");
}

/* Where several points fall into one pixel column the stack's top there is their highest:
   a dark tick from that maximum down to the column's last value, so a peak narrower than a
   pixel is drawn (and the peak's dot sits on it). */
function drawEnvelope(c, g, lv, ng) {
  const S = lv.series(), [a, b] = c.visible(S.T);
  g.fillStyle = "rgba(30,30,30,.75)";
  let col = null, hi = 0, last = 0, n = 0;
  const flush = () => { if (n > 1) { const y0 = c.y(hi); g.fillRect(col, y0, 1, Math.max(1, c.y(last) - y0)); } };
  for (let j = a; j <= b; j++) {
    const x = Math.floor(c.x(S.T[j])), v = S.U[j][ng - 1];
    if (x !== col) { flush(); col = x; hi = v; n = 0; }
    hi = Math.max(hi, v); last = v; n++;
  }
  flush();
}

/* Hover redraws only the cursor's line over a copy of the last full drawing. */
const chartFullRender = Chart.prototype.render, chartHoverAt = Chart.prototype.hoverAt;
Chart.prototype.hoverAt = function (mx, my) {
  this.fromHover = true;
  try { chartHoverAt.call(this, mx, my); } finally { this.fromHover = false; }
};
Chart.prototype.render = function () {
  const dpr = window.devicePixelRatio || 1, hx = this.hoverX;
  const key = [this.t0, this.t1, this.ymax, this.box.clientWidth, dpr].join();
  if (!(this.fromHover && this.cacheKey === key && this.cache)) {
    this.detailText = "";
    chartFullRender.call(this);
    this.rangeText.textContent += this.detailText || "";
    this.cache = this.cache || document.createElement("canvas");
    this.cache.width = this.canvas.width; this.cache.height = this.canvas.height;
    this.cache.getContext("2d").drawImage(this.canvas, 0, 0);
    this.cacheKey = key;
    if (hx == null) return;
  }
  const g = this.canvas.getContext("2d");
  g.setTransform(1, 0, 0, 1, 0, 0); g.drawImage(this.cache, 0, 0);
  if (hx == null) return;
  g.setTransform(dpr, 0, 0, dpr, 0, 0); g.strokeStyle = "rgba(0,0,0,.35)"; g.setLineDash([]);
  g.beginPath(); g.moveTo(hx, this.o.top); g.lineTo(hx, this.o.top + this.plotH); g.stroke();
};

/* #selftest: zoomed into the peak the drawn maximum is still the peak and more points are
   drawn than in the whole run's view; hover and zoom-step times (the bench reads them). */
function levelSelftest(r, c) {
  const ms = a => a.sort((x, y) => x - y), q = (a, f) => a.length ? a[Math.min(a.length - 1, Math.floor(f * a.length))] : 0;
  const round = v => Math.round(v * 10) / 10;
  c.reset();
  r.levels = c.levels.length; r.full_points = c.drawn.points; r.full_bucket_ns = c.drawn.bucket;
  /* more detail exists where the run has more events than the whole run's view draws */
  r.detail_expected = r.levels > 1 && c.run.events > 4 * r.full_points;
  const rect = c.canvas.getBoundingClientRect(), hover = [];
  for (let i = 0; i < 60; i++) {
    const x = c.o.left + (i + 0.5) * c.plotW / 60, h0 = performance.now();
    c.canvas.dispatchEvent(new MouseEvent("mousemove", {clientX: rect.left + x, clientY: rect.top + c.o.top + c.plotH * 0.7, bubbles: true}));
    hover.push(performance.now() - h0);
  }
  c.canvas.dispatchEvent(new MouseEvent("mouseleave"));
  ms(hover); r.hover_ms_median = round(q(hover, 0.5)); r.hover_ms_p95 = round(q(hover, 0.95)); r.hover_ms_max = round(hover[hover.length - 1]);
  const steps = [], peak = c.dev.peak_t_ns, coarse = c.levels[0].series();
  let maxOk = true;
  while (c.t1 - c.t0 > (c.o.minSpan || 1000) * 1.01 && steps.length < 64) {
    /* halves the span (down to the chart's smallest), the peak in its middle */
    const z0 = performance.now(), half = Math.max(c.t1 - c.t0, 2 * (c.o.minSpan || 1000)) / 4;
    c.setRange(Math.round(peak - half), Math.round(peak + half)); steps.push(performance.now() - z0);
    maxOk = maxOk && c.drawn.max === c.dev.peak_bytes;
    if (c.drawn.level > 0 && r.zoom_points == null) { /* the first finer level: what it adds */
      const [a, b] = c.visible(coarse.T);
      r.zoom_points = c.drawn.points; r.zoom_points_coarse = b - a + 1; r.zoom_span_ns = c.t1 - c.t0;
    }
  }
  r.zoom_steps = steps.length; r.finest_points = c.drawn.points; r.finest_bucket_ns = c.drawn.bucket;
  r.zoom_plotted_max = c.drawn.max; r.zoom_max_every_step = maxOk;
  r.zoom_detail = c.rangeText.textContent.split("; ")[1] || "";
  ms(steps); r.zoom_step_ms_median = round(q(steps, 0.5)); r.zoom_step_ms_max = round(steps[steps.length - 1] || 0);
  r.zoom_detail_ok = r.zoom_plotted_max === c.dev.peak_bytes && maxOk &&
    (!r.detail_expected || r.zoom_points > r.zoom_points_coarse);
  c.reset();
  return r.zoom_detail_ok;
}
