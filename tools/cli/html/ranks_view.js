/* ranks_view.js — the "Ranks" view of a page over several traces (`cumemtrace html DIR`, or three
   traces or more; embedded into report.html in place of its ranks marker by
   tools/cli/CMakeLists.txt). Every rank's device memory on one time axis, a line per rank: the
   allocator's reserved (solid) and allocated (dashed) bytes where its trace has allocator
   records, else the driver's live bytes, of its busiest device; its out-of-memory failures as
   markers, its peak labelled. Hover names the rank under the cursor, the time and its bytes; a
   click on a line or a row of the table says how to open that rank's own page. The data are
   DATA.ranks (tools/cli/html/html_ranks.c); the page below is the rank DATA.ranks.shown. */
"use strict";

/* a path as a shell reads it back */
function shellWord(s) {
  return /^[\w.\/@%+=:,-]+$/.test(s) ? s : "'" + s.replace(/'/g, "'\\''") + "'";
}

/* a step line over T, V from T[0] to tEnd (the rank's end; its last value held until then) */
function rankLine(c, g, T, V, tEnd, color, dash) {
  if (!T.length) return;
  const [a, b] = c.visible(T);
  g.strokeStyle = color; g.lineWidth = dash.length ? 1.2 : 1.8; g.setLineDash(dash); g.beginPath();
  g.moveTo(c.x(T[a]), c.y(V[a]));
  for (let j = a + 1; j <= b; j++) { const x = c.x(T[j]); g.lineTo(x, c.y(V[j - 1])); g.lineTo(x, c.y(V[j])); }
  const x1 = Math.max(c.x(tEnd), c.x(T[b]) + (tEnd > T[b] ? 0 : 8)); /* a 0 ns run: a short tick */
  g.lineTo(x1, c.y(V[b])); g.stroke(); g.setLineDash([]);
}

/* Each rank's lines on the shared axis, with its colour. */
function rankSeries(R) {
  return R.ranks.map((rk, i) => ({rk, i, color: COLORS[i % COLORS.length],
    end: rk.offset_ns + rk.duration_ns,
    L: rk.lines.map(l => ({name: l.name, T: l.t.map(t => t + rk.offset_ns), V: l.v}))}));
}

/* the bytes of a rank's lines at t ("reserved 1.00 GiB, allocated 512.00 MiB"), null outside its run */
function rankBytesAt(s, t) {
  if (!s.L.length || t < s.rk.offset_ns || t > s.end) return null;
  return s.L.map(l => l.name + " " + fmtBytes(valueAt(l.T, l.V, t) || 0)).join(", ");
}

function ranksSection(parent) {
  const R = DATA.ranks, S = rankSeries(R), shown = R.ranks[R.shown];
  parent.append(el("h2", {id: "ranks"}, "Ranks: " + R.ranks.length + " traces on one time axis"));
  parent.append(el("p", {class: "muted"}, (R.aligned ? "On the wall clock (the runs overlap): 0 is the earliest start. "
    : "Each run from its own start (the runs do not overlap in time, or a start is unknown). ") +
    "A line per rank: the allocator's reserved (solid) and allocated (dashed) bytes where its trace has them, " +
    "else the driver's live bytes, of its busiest device. The page below is " + shown.label + "'s (" + R.shown_why + ")."));
  const tmax = Math.max(1, ...S.map(s => s.end)), ymax = Math.max(1, ...R.ranks.map(rk => rk.peak_bytes)) * 1.12;
  const open = el("div", {id: "rank-open", class: "summary"}, "Click a rank's line or its row for how to open its own page.");
  const mainAt = (s, t) => (s.L.length && t >= s.rk.offset_ns && t <= s.end ? valueAt(s.L[0].T, s.L[0].V, t) : null);
  const nearest = (t, v) => S.reduce((m, s) => { const x = mainAt(s, t);
    return x == null || (m && Math.abs(mainAt(m, t) - v) <= Math.abs(x - v)) ? m : s; }, null);
  const chart = new Chart(parent, {tmax, ymax, minSpan: Math.min(1000, tmax / 8),
    draw(c, g) {
      for (const s of S) s.L.forEach((l, k) => rankLine(c, g, l.T, l.V, s.end, s.color, k ? [5, 3] : []));
      for (const s of S) s.rk.ooms.forEach(o => c.marker(g, s.rk.offset_ns + o.t_ns, s.rk.label + ": OOM " + o.verdict, {rank: s.i}));
      const boxes = c.markers.map(m => [m.lx, c.o.top - 10 + m.row * 13, m.lx + m.lw, c.o.top + 3 + m.row * 13]);
      c.peaks = [];
      for (const s of S) { /* the peak's dot and label, where it meets no other label */
        if (!s.rk.peak_bytes) continue;
        const px = c.x(s.rk.offset_ns + s.rk.peak_t_ns), py = c.y(s.rk.peak_bytes);
        const label = s.rk.label + " peak " + fmtBytes(s.rk.peak_bytes), w = g.measureText(label).width;
        g.fillStyle = s.color; g.beginPath(); g.arc(px, py, 3.5, 0, 7); g.fill();
        /* beside the dot, else further along the line (a reserved peak is often held a while) */
        const spots = [-15, 4, -29, 18].flatMap(dy => [[px + 6, py + dy], [px - 6 - w, py + dy]])
          .concat([...Array(24).keys()].flatMap(k => [[px + 46 + 40 * k, py - 15], [px + 46 + 40 * k, py + 4]]));
        const free = ([x, y]) => x >= c.o.left && x + w <= c.o.left + c.plotW &&
          !boxes.some(b => x < b[2] && b[0] < x + w && y < b[3] && b[1] < y + 13);
        const [lx, ly] = spots.find(free) || spots[0];
        boxes.push([lx, ly, lx + w, ly + 13]);
        g.textAlign = "left"; g.textBaseline = "top"; g.fillText(label, lx, ly);
        c.peaks.push({rank: s.i, bytes: s.rk.peak_bytes, x: px, y: py});
      }
    },
    hover(c, t, v) {
      const s = nearest(t, v);
      if (!s) return [el("div", {class: "muted"}, fmtDur(t) + ": no rank is running")];
      const others = S.filter(x => x !== s && rankBytesAt(x, t) != null).slice(0, 12)
        .map(x => el("div", {style: "color:" + x.color}, x.rk.label + ": " + rankBytesAt(x, t)));
      return [el("b", null, s.rk.label + (s.rk.label === s.rk.file ? "" : " (" + s.rk.file + ")")),
        el("div", null, fmtDur(t) + ": " + rankBytesAt(s, t)), ...others];
    }});
  const say = i => { /* how to open rank i's own page */
    const rk = R.ranks[i];
    open.replaceChildren(el("b", null, rk.label + ": "), i === R.shown ? "its page is the one below; on its own: "
      : "its own page: ", el("code", null, "cumemtrace html " + shellWord(rk.file)));
    open.dataset.rank = i;
  };
  let down = null;
  chart.canvas.addEventListener("mousedown", e => { down = [e.clientX, e.clientY]; });
  chart.canvas.addEventListener("click", e => {
    if (down && Math.hypot(e.clientX - down[0], e.clientY - down[1]) > 3) return; /* a drag */
    const r = chart.canvas.getBoundingClientRect(), s = nearest(chart.tAt(e.clientX - r.left), chart.vAt(e.clientY - r.top));
    if (s) say(s.i);
  });
  const t = el("table", {id: "ranks-table"}, el("tr", null, ...["rank", "trace", "peak", "OOMs", "failure", "memory drawn"]
    .map((h, k) => el("th", k === 2 || k === 3 ? {class: "n"} : null, h))));
  S.forEach(s => t.append(el("tr", {style: "cursor:pointer", onclick: () => say(s.i)},
    el("td", null, el("span", {style: "display:inline-block;width:11px;height:11px;margin-right:4px;background:" + s.color}),
      s.rk.label + (s.i === R.shown ? " (this page)" : "")),
    el("td", null, s.rk.file), el("td", {class: "n"}, fmtBytes(s.rk.peak_bytes)), el("td", {class: "n"}, s.rk.ooms.length),
    el("td", null, s.rk.failure === "none" ? "" : s.rk.failure.replace(/_/g, " ")),
    el("td", {class: "muted"}, s.rk.error ? "could not be read: " + s.rk.error
      : s.rk.source === "allocator" ? "allocator, device " + s.rk.dev : s.rk.source === "driver" ? "driver, device " + s.rk.dev : "no device memory"))));
  parent.append(open, t);
  chart.series = S; chart.say = say; chart.open = open;
  return chart;
}

/* #selftest: each rank's drawn maximum and peak label, its OOM markers mapped back to its trace's
   times (within a pixel), hover at the shown rank's peak and a click on another rank's line. */
function ranksSelftest(r) {
  const c = typeof ranksChart === "undefined" ? null : ranksChart;
  if (!c) return true;
  c.reset();
  const R = DATA.ranks, px = (c.t1 - c.t0) / c.plotW;
  r.ranks = R.ranks.length; r.ranks_shown = R.ranks[R.shown].file; r.ranks_aligned = R.aligned;
  r.ranks_check = c.series.map(s => {
    const drawn = s.L.length ? maxOf(s.L[0].V) : 0, peak = c.peaks.find(p => p.rank === s.i);
    const marks = c.markers.filter(m => m.rank === s.i);
    const at = marks.every((m, k) => Math.abs(c.tAt(m.x) - s.rk.offset_ns - s.rk.ooms[k].t_ns) <= px);
    const ok = marks.length === s.rk.ooms.length && at && (peak ? peak.bytes : 0) === drawn;
    return [s.rk.file, s.rk.source, drawn, s.rk.ooms.map(o => o.t_ns).join(" "), ok].join("|");
  });
  const rect = c.canvas.getBoundingClientRect(), hot = c.peaks.find(p => p.rank === R.shown) || c.peaks[0];
  if (hot) { /* the tip names the rank, the time and its bytes then */
    const x = Math.ceil(hot.x), t = c.tAt(x), s = c.series[hot.rank];
    c.canvas.dispatchEvent(new MouseEvent("mousemove", {clientX: rect.left + x, clientY: rect.top + hot.y, bubbles: true}));
    const text = c.tip.textContent;
    r.ranks_hover = text.slice(0, 160);
    r.ranks_hover_ok = c.tip.style.display === "block" && text.startsWith(s.rk.label) &&
      text.includes(fmtDur(t) + ": " + rankBytesAt(s, t));
    c.canvas.dispatchEvent(new MouseEvent("mouseleave"));
  }
  const other = c.peaks.find(p => p.rank !== R.shown);
  if (other) {
    c.canvas.dispatchEvent(new MouseEvent("click", {clientX: rect.left + Math.ceil(other.x), clientY: rect.top + other.y, bubbles: true}));
    r.ranks_click = c.open.textContent;
    r.ranks_click_ok = c.open.dataset.rank === String(other.rank) && r.ranks_click.includes(shellWord(R.ranks[other.rank].file));
  }
  r.ranks_ok = r.ranks_check.every(x => x.endsWith("|true")) && r.ranks_hover_ok !== false && r.ranks_click_ok !== false;
  return r.ranks_ok;
}
