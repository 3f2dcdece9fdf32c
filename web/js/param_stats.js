// The job page's parameter figures, without the DOM (so that node can import it too): each row's
// parameter values as codes (ParamIndex), the rows a filter keeps, each parameter's importance,
// the decimated points of a slice plot and the lines of the parallel coordinates.
//
// Call order: ix = new ParamIndex(); ix.update(ts) after every batch of trials (it reads the rows
// added since the last call); then selectRows(ts, ix, filter) and the figures over its rows. All
// results are plain objects and typed arrays owned by the caller; nothing is kept between calls.

// A parameter value's sort key: numbers by value, anything else by its JSON text after them.
function compareValues(a, b) {
  const na = typeof a === "number", nb = typeof b === "number";
  if (na && nb) return a - b;
  if (na !== nb) return na ? -1 : 1;
  const x = JSON.stringify(a), y = JSON.stringify(b);
  return x < y ? -1 : x > y ? 1 : 0;
}

// The distinct values of every parameter and each row's value as a code (its index in values[p]),
// -1 where a configuration lacks the parameter. Codes are in first-seen order; rank[p][code] is the
// value's place in sorted order (numbers numerically), for sorting and for the axes.
export class ParamIndex {
  constructor() {
    this.names = [];
    this.values = []; // per parameter: distinct values, first-seen order
    this.keys = []; // per parameter: Map value key -> code
    this.codes = []; // per parameter: Int32Array over rows
    this.rank = []; // per parameter: Int32Array code -> sorted position
    this.sorted = []; // per parameter: codes in sorted order
    this.n = 0;
  }

  // Indexes the rows of ts (a TrialSet: n, params, configs) added since the last call.
  update(ts) {
    if (!this.names.length && ts.params.length) {
      this.names = ts.params.slice();
      this.values = this.names.map(() => []);
      this.keys = this.names.map(() => new Map());
      this.codes = this.names.map(() => new Int32Array(0));
    }
    if (ts.n <= this.n || !this.names.length) return false;
    const cap = Math.max(ts.n, 1024);
    let grew = false;
    this.names.forEach((name, p) => {
      if (this.codes[p].length < ts.n) {
        const c = new Int32Array(Math.max(cap, this.codes[p].length * 2));
        c.set(this.codes[p]);
        this.codes[p] = c;
      }
      const codes = this.codes[p], keys = this.keys[p], values = this.values[p];
      for (let i = this.n; i < ts.n; i++) {
        const cfg = ts.configs[i];
        const v = cfg && typeof cfg === "object" ? cfg[name] : undefined;
        if (v === undefined) {
          codes[i] = -1;
          continue;
        }
        const key = typeof v === "number" ? v : "j" + JSON.stringify(v);
        let code = keys.get(key);
        if (code === undefined) {
          code = values.length;
          keys.set(key, code);
          values.push(v);
          grew = true;
        }
        codes[i] = code;
      }
    });
    this.n = ts.n;
    if (grew || !this.rank.length) {
      this.sorted = this.values.map((vals) => vals.map((_, c) => c).sort((a, b) => compareValues(vals[a], vals[b])));
      this.rank = this.sorted.map((order) => {
        const r = new Int32Array(order.length);
        order.forEach((code, k) => (r[code] = k));
        return r;
      });
    }
    return true;
  }

  // Row i's value of parameter p (undefined when it has none).
  value(p, i) {
    const c = this.codes[p][i];
    return c < 0 ? undefined : this.values[p][c];
  }

  // Row i's sort key for parameter p: the value's sorted position (NaN when none).
  sortKey(p, i) {
    const c = this.codes[p][i];
    return c < 0 ? NaN : this.rank[p][c];
  }
}

// The rows a filter keeps (filter: Map parameter index -> code; empty keeps every row), split into
// the ok search rows (with their log objective) and the count of the others. Final-pick
// re-measurements are not evaluations: they repeat candidates the search already measured.
export function selectRows(ts, ix, filter) {
  const pass = new Int32Array(ts.n);
  const ok = new Int32Array(ts.n);
  let np = 0, nok = 0, failed = 0;
  const conds = [...filter.entries()];
  for (let i = 0; i < ts.n; i++) {
    let keep = true;
    for (const [p, code] of conds) if (ix.codes[p][i] !== code) keep = false;
    if (!keep) continue;
    pass[np++] = i;
    if (ts.finalRound[i]) continue;
    if (ts.time[i] > 0) ok[nok++] = i;
    else failed++;
  }
  const rows = ok.slice(0, nok);
  const y = new Float64Array(nok);
  for (let k = 0; k < nok; k++) y[k] = Math.log(ts.time[rows[k]]);
  return { pass: pass.slice(0, np), rows, y, failed };
}

// Each parameter's importance: the share of the variance of y (the log objective of rows) that its
// main effect explains. The main effects are fitted together by backfitting (y ≈ mean + Σ f_p(value
// of p), each f_p the per-value mean of what the others leave), so that a parameter that merely
// travels with an important one in an uneven sample gets little; on a full grid this is the
// first-order term of a functional ANOVA (fANOVA) exactly. A parameter each of whose values was
// seen once cannot be told from noise (it would explain everything): it is left out of the fit,
// share null. A joint fit needs data: with fewer than 1.5 evaluations per degree of freedom (an
// accel mapping's ~30 parameters on 100 trials) it would fit noise, so each parameter is then taken
// on its own, chance-corrected (one-way ANOVA's ω²; method "marginal"). Returns {params: [{p, name,
// share, levels}] sorted by share (largest first, nulls last), explained: the fitted main effects'
// share together (joint only), method: "joint" | "marginal", df, n}.
export function importance(ix, rows, y, { iterations = 40, tol = 1e-10 } = {}) {
  const n = rows.length;
  const P = ix.names.length;
  const out = { params: [], explained: 0, method: "joint", df: 0, n };
  if (n < 2) return out;
  let mean = 0;
  for (let k = 0; k < n; k++) mean += y[k];
  mean /= n;
  let total = 0;
  for (let k = 0; k < n; k++) total += (y[k] - mean) ** 2;
  const effects = []; // per parameter: Float64Array over codes (+1 slot for "missing")
  const counts = [];
  const codeOf = []; // per parameter: Int32Array over k (the code, or the missing slot)
  const levels = new Int32Array(P);
  for (let p = 0; p < P; p++) {
    const K = ix.values[p].length;
    const c = new Int32Array(n);
    const cnt = new Float64Array(K + 1);
    for (let k = 0; k < n; k++) {
      const code = ix.codes[p][rows[k]];
      c[k] = code < 0 ? K : code;
      cnt[c[k]]++;
    }
    for (let v = 0; v <= K; v++) if (cnt[v]) levels[p]++;
    codeOf.push(c);
    counts.push(cnt);
    effects.push(new Float64Array(K + 1));
  }
  for (let p = 0; p < P; p++) if (levels[p] < n) out.df += levels[p] - 1;
  if (n < 1.5 * (out.df + 1)) return marginal(out, ix, codeOf, counts, levels, y, mean, total);
  const fit = new Float64Array(n).fill(mean);
  if (total > 0) {
    for (let it = 0; it < iterations; it++) {
      let change = 0;
      for (let p = 0; p < P; p++) {
        if (levels[p] >= n) continue; // not estimable: left out
        const f = effects[p], c = codeOf[p], cnt = counts[p];
        const sum = new Float64Array(f.length);
        for (let k = 0; k < n; k++) sum[c[k]] += y[k] - fit[k] + f[c[k]];
        const next = new Float64Array(f.length);
        let centre = 0;
        for (let v = 0; v < f.length; v++) if (cnt[v]) next[v] = sum[v] / cnt[v];
        for (let v = 0; v < f.length; v++) centre += next[v] * cnt[v];
        centre /= n;
        for (let v = 0; v < f.length; v++) if (cnt[v]) next[v] -= centre;
        for (let k = 0; k < n; k++) fit[k] += next[c[k]] - f[c[k]];
        for (let v = 0; v < f.length; v++) change = Math.max(change, Math.abs(next[v] - f[v]));
        effects[p] = next;
      }
      if (change < tol) break;
    }
  }
  let resid = 0;
  for (let k = 0; k < n; k++) resid += (y[k] - fit[k]) ** 2;
  out.explained = total > 0 ? Math.max(0, 1 - resid / total) : 0;
  for (let p = 0; p < P; p++) {
    const cnt = counts[p];
    let share = 0;
    if (levels[p] >= n) share = null; // every value once: indistinguishable from noise
    else if (total > 0) {
      let ss = 0;
      for (let v = 0; v < cnt.length; v++) ss += cnt[v] * effects[p][v] ** 2;
      share = Math.min(1, ss / total); // effects that cancel can outgrow the total: capped
    }
    out.params.push({ p, name: ix.names[p], share, levels: levels[p] });
  }
  return sortShares(out);
}

function sortShares(out) {
  out.params.sort((a, b) => (a.share === null) - (b.share === null) || (b.share || 0) - (a.share || 0) || a.p - b.p);
  return out;
}

// Each parameter on its own: ω² = (SS_between - (k-1) MS_within) / (SS_total + MS_within), at
// least 0: what its per-value means explain beyond what k values would by chance.
function marginal(out, ix, codeOf, counts, levels, y, mean, total) {
  const n = y.length;
  out.method = "marginal";
  for (let p = 0; p < ix.names.length; p++) {
    let share = null;
    if (levels[p] < n) {
      const cnt = counts[p], c = codeOf[p];
      const sum = new Float64Array(cnt.length);
      for (let k = 0; k < n; k++) sum[c[k]] += y[k];
      let between = 0;
      for (let v = 0; v < cnt.length; v++) if (cnt[v]) between += cnt[v] * (sum[v] / cnt[v] - mean) ** 2;
      const msWithin = (total - between) / (n - levels[p]);
      share = total > 0 ? Math.max(0, (between - (levels[p] - 1) * msWithin) / (total + msWithin)) : 0;
    }
    out.params.push({ p, name: ix.names[p], share, levels: levels[p] });
  }
  return sortShares(out);
}

// A slice plot's points for parameter p: x the value (numbers) or its sorted position (anything
// else, with labels), y the objective; per value the fastest row always, the others by a stride
// that keeps the total near maxPoints. Sorted by x.
export function slicePoints(ts, ix, p, rows, maxPoints = 1500) {
  const numeric = ix.values[p].every((v) => typeof v === "number");
  const stride = Math.max(1, Math.ceil(rows.length / maxPoints));
  const best = new Map(); // code -> row
  const points = [];
  for (let k = 0; k < rows.length; k++) {
    const i = rows[k];
    const c = ix.codes[p][i];
    if (c < 0) continue;
    const b = best.get(c);
    if (b === undefined || ts.time[i] < ts.time[b]) best.set(c, i);
    if (k % stride === 0) points.push(i);
  }
  const taken = new Set(points);
  for (const i of best.values()) if (!taken.has(i)) points.push(i);
  const x = (i) => (numeric ? ix.values[p][ix.codes[p][i]] : ix.rank[p][ix.codes[p][i]]);
  const pts = points.map((i) => ({ x: x(i), y: ts.time[i], i }));
  pts.sort((a, b) => a.x - b.x); // the charts take the data as sorted by x (charts.js: normalized)
  return {
    numeric,
    labels: numeric ? null : ix.sorted[p].map((c) => String(typeof ix.values[p][c] === "string" ? ix.values[p][c] : JSON.stringify(ix.values[p][c]))),
    points: pts,
  };
}

// The parallel coordinates' lines: per row drawn, its position on each parameter's axis (0..1:
// the value's sorted place among the values the rows have, evenly spaced) and on the objective's
// (0..1 of log time, 0 the fastest), at most maxLines rows (the fastest tenth always, the rest by
// stride), slowest first so that the fast ones are drawn on top. params: the parameters (indices)
// to give an axis, in order (default: all).
export function parallelLines(ts, ix, rows, y, maxLines = 1500, params = ix.names.map((_, p) => p)) {
  const axes = [];
  for (const p of params) {
    const present = new Uint8Array(ix.values[p].length + 1); // [code + 1]: -1 is "none"
    for (let k = 0; k < rows.length; k++) present[ix.codes[p][rows[k]] + 1] = 1;
    const order = ix.sorted[p].filter((c) => present[c + 1]);
    const pos = new Map(order.map((c, k) => [c, order.length > 1 ? k / (order.length - 1) : 0.5]));
    axes.push({ name: ix.names[p], ticks: order.map((c) => ({ label: String(ix.values[p][c]), at: pos.get(c) })), pos });
  }
  let lo = Infinity, hi = -Infinity;
  for (let k = 0; k < y.length; k++) {
    if (y[k] < lo) lo = y[k];
    if (y[k] > hi) hi = y[k];
  }
  // The fastest tenth by a threshold (a native sort of the values, not of 100,000 indices), the
  // rest by stride; only the few chosen are sorted.
  const keepFast = Math.min(y.length, Math.ceil(maxLines / 10));
  const cut = keepFast ? y.slice().sort()[keepFast - 1] : -Infinity;
  const stride = Math.max(1, Math.ceil(y.length / (maxLines - keepFast)));
  const chosen = [];
  let fast = 0;
  for (let k = 0; k < y.length; k++) {
    if (y[k] <= cut && fast < keepFast) {
      fast++;
      chosen.push(k);
    } else if (k % stride === 0) chosen.push(k);
  }
  chosen.sort((a, b) => y[b] - y[a]);
  const span = hi > lo ? hi - lo : 1;
  const lines = chosen.map((k) => ({
    i: rows[k],
    t: (y[k] - lo) / span,
    at: params.map((p, a) => (ix.codes[p][rows[k]] < 0 ? null : axes[a].pos.get(ix.codes[p][rows[k]]))),
  }));
  return { axes, lines, min: Math.exp(lo), max: Math.exp(hi) };
}
