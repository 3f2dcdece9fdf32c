// A job's trials in the browser: loaded incrementally from /v1/jobs/{id}/trials?after=N in the
// compact row format (one request holds up to 100,000 rows), kept as columns (typed arrays), with
// the best-so-far curve maintained as rows arrive, and each row's user metrics (extras.metrics).
// The final pick's re-measurements (final_round 1..) are rows too, but not evaluations: the
// best-so-far curve and the evaluation count (evalNo) are the search's alone.
// Nothing already loaded is asked for again: the cursor (done_seq of the last row) moves forward only.

import { get } from "./api.js";

const PAGE = 100000;

function grow(arr, need) {
  if (arr.length >= need) return arr;
  let cap = Math.max(1024, arr.length);
  while (cap < need) cap *= 2;
  const next = new arr.constructor(cap);
  next.set(arr);
  return next;
}

export class TrialSet {
  constructor(jobId) {
    this.jobId = jobId;
    this.after = 0; // cursor: done_seq of the last row loaded
    this.n = 0;
    this.seq = new Int32Array(0);
    this.configId = new Float64Array(0);
    this.time = new Float64Array(0); // NaN unless ok
    this.compile = new Float64Array(0);
    this.measure = new Float64Array(0);
    this.finished = new Float64Array(0); // Unix seconds
    this.doneSeq = new Float64Array(0); // the cursor of each row (to fetch its full trial)
    this.finalRound = new Int32Array(0); // the final pick's round of a re-measurement, 0 for the search
    this.evalNo = new Int32Array(0); // the search evaluation a row is (1..), or the count so far for a re-measurement
    this.gflops = new Float64Array(0); // the runner's GFLOP/s (extras.gflops), NaN when none
    this.best = new Float64Array(0); // best search time among rows 0..i (NaN before the first ok)
    this.status = []; // strings
    this.configs = []; // objects, as the API gives them
    this.metrics = []; // user metrics of each row ({name: number}, extras.metrics) or null
    this.metricNames = []; // every metric name seen, in order of first appearance
    this.params = []; // parameter names, from the first configuration
    this.bestIndex = -1;
    this.searchN = 0; // search evaluations loaded (rows without a final round)
    this.finalN = 0; // final-pick re-measurements loaded
    this.jobStatus = null;
    this.statusCounts = new Map();
  }

  // Fetches every trial finished since the cursor; returns how many arrived.
  async fetchNew(signal) {
    let added = 0;
    for (;;) {
      const page = await get(
        `/v1/jobs/${this.jobId}/trials?format=compact&limit=${PAGE}&after=${this.after}`,
        { signal, quiet: this.n > 0 }
      );
      this.jobStatus = page.job_status;
      this.append(page);
      added += page.rows.length;
      if (page.rows.length < PAGE) return added;
    }
  }

  append(page) {
    const rows = page.rows;
    const need = this.n + rows.length;
    if (!rows.length) return;
    for (const key of ["seq", "configId", "time", "compile", "measure", "finished", "doneSeq", "finalRound", "evalNo", "gflops", "best"]) this[key] = grow(this[key], need);
    const f = page.fields;
    const at = (name) => f.indexOf(name);
    const iSeq = at("seq"), iCid = at("config_id"), iStatus = at("status"), iTime = at("time_ms");
    const iCompile = at("compile_ms"), iMeasure = at("measure_ms"), iFinished = at("finished_at"), iConfig = at("config");
    const iMetrics = at("metrics"), iDone = at("done_seq"), iRound = at("final_round"), iGflops = at("gflops");
    let best = this.n > 0 ? this.best[this.n - 1] : NaN;
    for (const r of rows) {
      const i = this.n++;
      this.seq[i] = r[iSeq];
      this.configId[i] = r[iCid];
      const st = r[iStatus];
      this.status.push(st);
      this.statusCounts.set(st, (this.statusCounts.get(st) || 0) + 1);
      const t = st === "ok" && r[iTime] !== null ? r[iTime] : NaN;
      this.time[i] = t;
      this.compile[i] = r[iCompile] ?? NaN;
      this.measure[i] = r[iMeasure] ?? NaN;
      this.finished[i] = r[iFinished] ?? NaN;
      this.doneSeq[i] = r[iDone];
      const round = iRound >= 0 && r[iRound] ? r[iRound] : 0;
      this.finalRound[i] = round;
      if (round) this.finalN++;
      else this.searchN++;
      this.evalNo[i] = this.searchN;
      this.gflops[i] = iGflops >= 0 && typeof r[iGflops] === "number" ? r[iGflops] : NaN;
      const cfg = r[iConfig];
      this.configs.push(cfg);
      if (!this.params.length && cfg && typeof cfg === "object") this.params = Object.keys(cfg);
      const m = iMetrics >= 0 ? r[iMetrics] : null;
      this.metrics.push(m && typeof m === "object" ? m : null);
      if (m && typeof m === "object") for (const k of Object.keys(m)) if (!this.metricNames.includes(k)) this.metricNames.push(k);
      if (!round && t === t && !(t >= best)) {
        best = t;
        this.bestIndex = i;
      }
      this.best[i] = best;
    }
    this.after = page.next_after;
  }

  // Seconds since t0 at which row i finished.
  elapsed(i, t0) {
    return this.finished[i] - t0;
  }

  firstFinished() {
    let t0 = Infinity;
    for (let i = 0; i < Math.min(this.n, 64); i++) if (this.finished[i] < t0) t0 = this.finished[i];
    return Number.isFinite(t0) ? t0 : 0;
  }

  row(i) {
    return {
      index: i,
      seq: this.seq[i],
      config_id: this.configId[i],
      status: this.status[i],
      time_ms: this.time[i],
      compile_ms: this.compile[i],
      measure_ms: this.measure[i],
      finished: this.finished[i],
      config: this.configs[i],
      metrics: this.metrics[i],
      final_round: this.finalRound[i] || null,
      gflops: this.gflops[i],
    };
  }
}
