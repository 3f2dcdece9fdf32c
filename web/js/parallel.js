// Parallel coordinates on a plain canvas (Chart.js has no such chart): one vertical axis per
// parameter (its values evenly spaced in sorted order, smallest at the bottom) and the objective's
// last (log scale, fastest at the bottom); one line per trial, coloured by its objective.
// drawParallel(canvas, data, fmt) draws param_stats.parallelLines' result at the canvas's CSS
// width; call it again on resize. The canvas is the caller's.

// Viridis stops: the fastest trials dark, the slowest light.
export const RAMP = ["#440154", "#3b528b", "#21918c", "#5ec962", "#fde725"];
const RGB = RAMP.map((c) => [1, 3, 5].map((k) => parseInt(c.slice(k, k + 2), 16)));

// The colour of t in 0..1 on the ramp (0: fastest).
export function rampColor(t, alpha = 1) {
  const x = Math.min(1, Math.max(0, t)) * (RGB.length - 1);
  const k = Math.min(RGB.length - 2, Math.floor(x));
  const f = x - k;
  const c = RGB[k].map((v, j) => Math.round(v + (RGB[k + 1][j] - v) * f));
  return `rgba(${c[0]},${c[1]},${c[2]},${alpha})`;
}

// Labels of one axis: at most max of them, evenly picked, the first and last always.
function pickTicks(ticks, max) {
  if (ticks.length <= max) return ticks;
  const step = (ticks.length - 1) / (max - 1);
  return Array.from({ length: max }, (_, k) => ticks[Math.round(k * step)]);
}

function fit(ctx, text, width) {
  if (ctx.measureText(text).width <= width) return text;
  let s = text;
  while (s.length > 1 && ctx.measureText(s + "…").width > width) s = s.slice(0, -1);
  return s + "…";
}

// data: {axes: [{name, ticks: [{label, at}]}], lines: [{t, at: [0..1 | null]}], min, max};
// fmt(v) writes an objective value; title names the objective's axis.
export function drawParallel(canvas, data, fmt, title) {
  const dpr = window.devicePixelRatio || 1;
  const w = Math.max(200, canvas.clientWidth);
  const hgt = Math.max(160, canvas.clientHeight);
  canvas.width = Math.round(w * dpr);
  canvas.height = Math.round(hgt * dpr);
  const ctx = canvas.getContext("2d");
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  ctx.clearRect(0, 0, w, hgt);
  const n = data.axes.length + 1;
  const left = 14, right = 58, top = 30, bottom = 14;
  const gap = n > 1 ? (w - left - right) / (n - 1) : 0;
  const xs = Array.from({ length: n }, (_, k) => left + k * gap);
  const yOf = (at) => top + (1 - at) * (hgt - top - bottom);
  ctx.lineWidth = data.lines.length > 300 ? 1 : 1.5;
  const alpha = data.lines.length > 300 ? 0.35 : 0.75;
  for (const line of data.lines) {
    ctx.strokeStyle = rampColor(line.t, alpha);
    ctx.beginPath();
    let drawing = false;
    line.at.forEach((at, k) => {
      if (at === null) return void (drawing = false);
      if (drawing) ctx.lineTo(xs[k], yOf(at));
      else ctx.moveTo(xs[k], yOf(at));
      drawing = true;
    });
    if (drawing) ctx.lineTo(xs[n - 1], yOf(line.t));
    ctx.stroke();
  }
  // Axes over the lines, with their labels on a light backing so they stay readable.
  ctx.font = "11px system-ui, sans-serif";
  ctx.textBaseline = "middle";
  // Narrow gaps (a phone) get fewer labels: each label is as wide as the gap allows.
  const maxTicks = Math.max(2, Math.min(Math.floor((hgt - top - bottom) / 18), gap < 90 ? 3 : Infinity));
  const axes = [
    ...data.axes,
    {
      name: title,
      ticks: [0, 0.25, 0.5, 0.75, 1].map((at) => ({ at, label: fmt(data.min * (data.max / data.min) ** at) })),
    },
  ];
  axes.forEach((a, k) => {
    const x = xs[k];
    ctx.strokeStyle = "#334155";
    ctx.lineWidth = 1;
    ctx.beginPath();
    ctx.moveTo(x, yOf(0));
    ctx.lineTo(x, yOf(1));
    ctx.stroke();
    // Names must not run into the next axis's: a middle one centred in its gap, the first and
    // the last (aligned to the edges) in half a gap beside it.
    const room = k === n - 1 ? right + gap / 2 - 8 : k === 0 ? Math.max(24, gap / 2) : Math.max(30, gap - 8);
    ctx.fillStyle = "#0f172a";
    ctx.font = "600 12px system-ui, sans-serif";
    ctx.textAlign = k === 0 ? "left" : k === n - 1 ? "right" : "center";
    ctx.fillText(fit(ctx, a.name, room), k === n - 1 ? w - 2 : x, 12);
    ctx.font = "11px system-ui, sans-serif";
    ctx.textAlign = "left";
    for (const t of pickTicks(a.ticks, k === n - 1 ? 5 : maxTicks)) {
      const label = fit(ctx, t.label, k === n - 1 ? right - 6 : Math.max(24, gap - 12));
      const tw = ctx.measureText(label).width;
      ctx.fillStyle = "rgba(255,255,255,0.8)";
      ctx.fillRect(x + 3, yOf(t.at) - 7, tw + 4, 14);
      ctx.fillStyle = "#1e293b";
      ctx.fillText(label, x + 5, yOf(t.at));
      ctx.fillRect(x - 3, yOf(t.at), 6, 1);
    }
  });
}
