// Charts: thin helpers over Chart.js (loaded by index.html from web/node_modules as the global
// `Chart`) and the decimation that keeps them fast with 100,000 trials: a chart never gets more
// than a few thousand points, chosen so that the shape (the best, the worst, the failures and the
// best-so-far steps) survives.

export const PALETTE = ["#2563eb", "#dc2626", "#16a34a", "#9333ea", "#ea580c", "#0891b2", "#be185d", "#65a30d", "#475569", "#ca8a04"];
export const FAIL_COLOR = "#dc2626";
const MAX_SCATTER = 4000;
const MAX_FAILED = 800;

export function color(i, alpha = 1) {
  const c = PALETTE[i % PALETTE.length];
  if (alpha >= 1) return c;
  const n = parseInt(c.slice(1), 16);
  return `rgba(${n >> 16},${(n >> 8) & 255},${n & 255},${alpha})`;
}

function baseOptions({ xTitle, yTitle, logY, logX, xLabels, yPercent, label, xMin, xMax }) {
  const x = { type: logX ? "logarithmic" : "linear", title: { display: !!xTitle, text: xTitle } };
  // A fixed end (the job's evaluation budget): the axis says how much of the budget was searched.
  if (Number.isFinite(xMin)) x.min = xMin;
  if (Number.isFinite(xMax)) x.max = xMax;
  if (xLabels) x.ticks = { stepSize: 1, autoSkip: true, callback: (v) => (Number.isInteger(v) ? xLabels[v] ?? "" : "") };
  const y = { type: logY ? "logarithmic" : "linear", title: { display: !!yTitle, text: yTitle } };
  if (yPercent) y.ticks = { callback: (v) => Math.round(v * 1000) / 10 + "%" };
  return {
    animation: false,
    responsive: true,
    maintainAspectRatio: false,
    parsing: false,
    normalized: true,
    interaction: { mode: "nearest", intersect: false },
    plugins: {
      legend: { position: "bottom", labels: { boxWidth: 12, usePointStyle: true } },
      tooltip: { enabled: true, callbacks: label ? { label } : {} },
    },
    scales: { x, y },
  };
}

export function makeChart(canvas, datasets, opts) {
  return new window.Chart(canvas, { type: "scatter", data: { datasets }, options: baseOptions(opts) });
}

// Applies new datasets and axis settings and redraws without animation.
export function updateChart(chart, datasets, opts) {
  chart.data.datasets = datasets;
  const o = baseOptions(opts);
  chart.options.scales = o.scales;
  chart.options.plugins.tooltip = o.plugins.tooltip;
  chart.update("none");
}

export function destroyChart(chart) {
  if (chart) chart.destroy();
}

// x of row i: its search evaluation number (final-pick re-measurements are not evaluations), or
// seconds since t0.
function xOf(ts, i, mode, t0) {
  return mode === "time" ? ts.finished[i] - t0 : ts.evalNo ? ts.evalNo[i] : i + 1;
}

// A row of the search (not a final-pick re-measurement).
function isSearch(ts, i) {
  return !ts.finalRound || !ts.finalRound[i];
}

// Best-so-far steps of the search: one point per improvement, plus its last trial (the line runs
// to the end of the search; the final pick's rounds are drawn apart).
export function convergencePoints(ts, mode = "evals", t0 = 0) {
  const pts = [];
  let prev = NaN, last = -1;
  for (let i = 0; i < ts.n; i++) {
    if (!isSearch(ts, i)) continue;
    last = i;
    const b = ts.best[i];
    if (b === b && b !== prev) {
      pts.push({ x: xOf(ts, i, mode, t0), y: b });
      prev = b;
    }
  }
  if (last >= 0 && pts.length) pts.push({ x: xOf(ts, last, mode, t0), y: ts.best[last] });
  return pts;
}

// Every trial as a point, decimated by buckets of consecutive trials (the fastest and slowest ok
// trial of each bucket), failures as a second series drawn above the slowest time.
export function trialPoints(ts, mode = "evals", t0 = 0, maxPoints = MAX_SCATTER) {
  const ok = [];
  const failed = [];
  let maxT = 0;
  const bucket = Math.max(1, Math.ceil(ts.n / (maxPoints / 2)));
  for (let start = 0; start < ts.n; start += bucket) {
    let lo = -1, hi = -1;
    const end = Math.min(ts.n, start + bucket);
    for (let i = start; i < end; i++) {
      const t = ts.time[i];
      if (t !== t || !isSearch(ts, i)) continue;
      if (lo < 0 || t < ts.time[lo]) lo = i;
      if (hi < 0 || t > ts.time[hi]) hi = i;
    }
    if (lo >= 0) ok.push({ x: xOf(ts, lo, mode, t0), y: ts.time[lo], i: lo });
    if (hi >= 0 && hi !== lo) ok.push({ x: xOf(ts, hi, mode, t0), y: ts.time[hi], i: hi });
    if (hi >= 0 && ts.time[hi] > maxT) maxT = ts.time[hi];
  }
  let nFailed = 0;
  for (let i = 0; i < ts.n; i++) if (ts.time[i] !== ts.time[i] && isSearch(ts, i)) nFailed++;
  const stride = Math.max(1, Math.ceil(nFailed / MAX_FAILED));
  const failY = maxT > 0 ? maxT * 1.15 : 1;
  let k = 0;
  for (let i = 0; i < ts.n; i++) {
    if (ts.time[i] === ts.time[i] || !isSearch(ts, i)) continue;
    if (k++ % stride === 0) failed.push({ x: xOf(ts, i, mode, t0), y: failY, i, status: ts.status[i] });
  }
  return { ok, failed, nFailed };
}

// Time against one parameter's value. Numbers keep a numeric axis; anything else becomes
// categories in first-seen order. Per value: the fastest and slowest trial always, others by stride
// so that the total stays near maxPoints; plus the fastest time per value as a line.
export function paramPoints(ts, param, maxPoints = MAX_SCATTER) {
  const groups = new Map();
  let numeric = true;
  for (let i = 0; i < ts.n; i++) {
    const t = ts.time[i];
    if (t !== t) continue;
    const cfg = ts.configs[i];
    const v = cfg ? cfg[param] : undefined;
    if (v === undefined) continue;
    if (typeof v !== "number") numeric = false;
    const key = typeof v === "number" ? v : JSON.stringify(v);
    let g = groups.get(key);
    if (!g) groups.set(key, (g = { value: v, rows: [] }));
    g.rows.push(i);
  }
  const total = [...groups.values()].reduce((s, g) => s + g.rows.length, 0);
  const stride = Math.max(1, Math.ceil(total / maxPoints));
  const labels = numeric ? null : [...groups.keys()].map((k) => (typeof groups.get(k).value === "string" ? groups.get(k).value : k));
  const points = [];
  const bestLine = [];
  let gi = 0;
  const ordered = numeric ? [...groups.values()].sort((a, b) => a.value - b.value) : [...groups.values()];
  for (const g of ordered) {
    const x = numeric ? g.value : gi;
    let lo = g.rows[0], hi = g.rows[0];
    for (const i of g.rows) {
      if (ts.time[i] < ts.time[lo]) lo = i;
      if (ts.time[i] > ts.time[hi]) hi = i;
    }
    g.rows.forEach((i, k) => {
      if (i === lo || i === hi || k % stride === 0) points.push({ x, y: ts.time[i], i });
    });
    bestLine.push({ x, y: ts.time[lo], i: lo });
    gi++;
  }
  return { points, bestLine, labels, numeric };
}
