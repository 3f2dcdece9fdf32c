// A job: summary, best configuration (copy as JSON), convergence (best so far against evaluations
// or time, every trial as a point, failures marked, log-scale toggle), time against each
// parameter's value, and the trials table (sortable, paged). Where trials carry user metrics
// (extras.metrics: GFLOP/s, GB/s, ...), the best trial's values and a table column per metric.
// Live while the job runs: after the first load, Server-Sent Events (GET /v1/jobs/{id}/events,
// events.js) bring the job and the trials finished since the last cursor as soon as they finish;
// where they fail the page polls every second (#job-page data-live says which). The final pick (its candidates, rounds and why the answer differs from the
// search's best) has a card of its own (job_pick.js): its re-measurements are not evaluations, so
// the convergence chart's x axis ends at the search's budget. Each trial's row opens its details
// (compile log, verification error, extras: job_trial.js). The best's GFLOP/s and its speed-up
// over the kernel's default configuration (GET /v1/kernels "default"), when this job measured it.
// The parameter views (param_views.js): a table column per parameter (sortable, filterable by
// value) and, below the table, importance, parallel coordinates and slices, all narrowed by the filter.
//
// When every trial is loaded and drawn, window.ktuneTimings.jobLoaded holds performance.now() (ms
// since navigation start) and #job-page gets data-loaded="all"; the browser tests read both.

import { get, del } from "../api.js";
import { TrialSet } from "../trials.js";
import { nextEvents } from "../events.js";
import { makeChart, updateChart, destroyChart, convergencePoints, trialPoints, paramPoints, color, FAIL_COLOR } from "../charts.js";
import { DataTable } from "../table.js";
import { h, clear, fmtMs, fmtNum, objectiveOf, fmtDuration, fmtTime, fmtObject, statusBadge, progressBar, errorBox, copyText, TERMINAL } from "../dom.js";
import { renderPick, failureBox, stopWords, configKey } from "./job_pick.js";
import { TrialDetails, detailsLabel, peakShare } from "./job_trial.js";
import { exportButtons } from "../export.js";
import { ParamViews } from "../param_views.js";

const POLL_MS = 1000;
const EVENTS_PAGE = 10000; // trials an events reply carries at most (api/job_events.c)

// The warm start as one line: what history seeded the search with (GET /v1/jobs/{id} "history").
function historyText(hist) {
  if (!hist || hist.mode === "none") return "none (cold start)";
  if (!hist.recorded) return "auto (gathered when the job starts)";
  const parts = [`${hist.seeded} seeded, ${hist.seeded_measured} measured`];
  if (hist.model) parts.push(`model #${hist.model.id} ${hist.model.algorithm} v${hist.model.version}`);
  parts.push(`${hist.sources.length} source${hist.sources.length === 1 ? "" : "s"}`);
  if (hist.prior_trials) parts.push(`${hist.prior_trials} prior trials`);
  return "auto: " + parts.join(", ");
}

// The harness of an external job (ask/tell, issue 27; GET /v1/jobs/{id} "harness"), as one line:
// whether it is measuring, waiting for its harness to come back, or done, and its leases.
function harnessText(hs) {
  const since = hs.seconds_since_ask == null ? "never asked" : `last ask ${fmtDuration(hs.seconds_since_ask)} ago`;
  const what = { active: "active", waiting: "waiting for its harness", ended: "ended" }[hs.state] || hs.state;
  return `${what} · ${hs.leased} leased · ${since}`;
}

// What the job optimises (GET /v1/jobs/{id} "objective", issue 27): null for the time (the page's
// default), else the metric's name and goal.
function metricObjective(job) {
  const o = job && job.objective;
  return o && o.metric !== "time_ms" ? o : null;
}

function field(label, value, cls) {
  return h("div", { class: "field " + (cls || "") }, h("div", { class: "label" }, label), h("div", { class: "value" }, value));
}

export function mount(root, { id, query }) {
  const ts = new TrialSet(id);
  const state = { xMode: "evals", logY: true, showTrials: true, param: null };
  let job = null;
  // time_ms means milliseconds, or EDP over its minimum on an accel device (dom.js objectiveOf).
  const objective = () => objectiveOf(job && job.device);
  let alive = true;
  let timer = null;
  let convChart = null, paramChart = null;
  let loadedAll = false;
  const ac = new AbortController();

  const head = h("div", { class: "page-head" }, h("h1", {}, `Job #${id}`));
  const msg = h("div", { class: "msg" });
  const summary = h("div", { class: "summary card" }, h("p", { class: "loading" }, "Loading…"));
  const bestBox = h("pre", { class: "json", id: "best-config" }, "–");
  const copyMsg = h("span", { class: "muted", role: "status" });
  const copyBtn = h(
    "button",
    {
      type: "button",
      id: "copy-best",
      class: "small",
      onclick: async () => {
        const ok = job && job.best ? await copyText(JSON.stringify(job.best.config, null, 2)) : false;
        copyMsg.textContent = ok ? "copied" : "could not copy";
        setTimeout(() => (copyMsg.textContent = ""), 2000);
      },
    },
    "Copy JSON"
  );
  const bestTime = h("span", { class: "big", id: "best-time" }, "–");
  const bestMetrics = h("div", { class: "fields", id: "best-metrics" });
  const bestSource = h("div", { class: "muted", id: "best-source" });
  const bestFigures = h("div", { class: "fields", id: "best-figures" });
  const failBox = h("div", { id: "failure-slot" });
  const pickCard = h("section", { class: "card", id: "final-pick" });
  const pickChart = { chart: null, canvas: null };
  const details = new TrialDetails(id);
  let kernelDefault; // undefined: not asked yet; null: none; else the default configuration
  let gflopsCol = false; // the table has the runner's GFLOP/s column
  let bestRowIndex = -1; // the row of the job's best trial (bestRow), highlighted in the table
  let metricCols = 0; // metric columns the table has
  let bestKey = null; // what the best metrics were drawn for (rows loaded, best configuration)

  // Chart controls.
  const xSel = h(
    "select",
    { id: "x-mode", "aria-label": "x axis", onchange: (e) => { state.xMode = e.target.value; drawCharts(); } },
    h("option", { value: "evals" }, "against evaluations"),
    h("option", { value: "time" }, "against time")
  );
  const logBox = h("input", { type: "checkbox", id: "log-y", checked: state.logY, onchange: (e) => { state.logY = e.target.checked; drawCharts(); views.redraw(); } });
  const trialsBox = h("input", { type: "checkbox", id: "show-trials", checked: state.showTrials, onchange: (e) => { state.showTrials = e.target.checked; drawCharts(); } });
  const convCanvas = h("canvas", { id: "convergence-chart", "aria-label": "best time so far" });
  const convNote = h("div", { class: "muted small-text" });
  const paramSel = h("select", { id: "param-select", "aria-label": "parameter", onchange: (e) => { state.param = e.target.value; drawParam(); } });
  const paramCanvas = h("canvas", { id: "param-chart", "aria-label": "time against parameter value" });
  const paramNote = h("div", { class: "muted small-text" });

  const t0 = () => {
    const s = job && job.timings.started_at ? Date.parse(job.timings.started_at) / 1000 : NaN;
    return Number.isFinite(s) ? s : ts.firstFinished();
  };
  const table = new DataTable(
    [
      { key: "n", label: "#", title: "order of finishing", cls: "num", value: (i) => i, render: (i) => i + 1 },
      { key: "seq", label: "proposed", cls: "num opt", title: "proposal order", value: (i) => ts.seq[i], render: (i) => ts.seq[i] },
      {
        key: "status", label: "status", value: (i) => ts.status[i],
        render: (i) => [statusBadge(ts.status[i]), ts.finalRound[i] ? h("span", { class: "badge final-round", title: "a re-measurement of the final pick, not an evaluation" }, `final r${ts.finalRound[i]}`) : null],
      },
      { key: "time", label: objective().short, cls: "num", value: (i) => ts.time[i], render: (i) => objective().fmt(ts.time[i]) },
      { key: "compile", label: "compile", cls: "num opt", value: (i) => ts.compile[i], render: (i) => fmtMs(ts.compile[i]) },
      { key: "measure", label: "measure", cls: "num opt", value: (i) => ts.measure[i], render: (i) => fmtMs(ts.measure[i]) },
      { key: "finished", label: "at", cls: "num opt", title: "seconds since the job started", value: (i) => ts.finished[i], render: (i) => fmtDuration(ts.finished[i] - t0()) },
      { key: "config", label: "configuration", cls: "mono", value: (i) => ts.configId[i], render: (i) => fmtObject(ts.configs[i]) },
      {
        key: "details", label: "", cls: "narrow",
        render: (i) => h("button", { type: "button", class: "small details-button", "data-row": i, title: "this trial's log, verification and extras", onclick: () => details.show(ts, i) }, detailsLabel(ts.status[i])),
      },
    ],
    {
      pageSize: 25,
      empty: "No trials finished yet.",
      onRow: (i, tr) => {
        if (i === bestRowIndex) tr.classList.add("best-row"); // the job's best (a final pick's median trial)
      },
    }
  );
  table.el.id = "trials-table";
  const views = new ParamViews(ts, { objective, logY: () => state.logY, onFilter: () => table.setFilter(views.keep()) });

  // The parameters' columns take the place of the configuration's once the first trial names them.
  function paramColumns() {
    const base = table.columns.filter((c) => !c.param);
    const at = base.findIndex((c) => c.key === "config");
    const end = at < 0 ? base.length - 1 : at; // else before the details button
    table.columns = [...base.slice(0, end), ...views.columns(), ...base.slice(at < 0 ? end : at + 1)];
    table.renderHead();
    table.setCount(ts.n, { force: true });
  }

  clear(
    root,
    h("div", { id: "job-page" },
      head,
      msg,
      failBox,
      summary,
      h(
        "div",
        { class: "grid2" },
        h(
          "section",
          { class: "card" },
          h("h2", {}, "Best configuration"),
          h("div", { class: "best-line" }, bestTime, copyBtn, copyMsg),
          bestSource,
          bestFigures,
          bestMetrics,
          bestBox,
          // issue 31: files the server makes (GET /v1/jobs/{id}/export), as ktune best / export write them
          exportButtons(["header", "flags", "kerneltuner"], (f) => `/v1/jobs/${id}/export?format=${f}`, { id: "job-export", name: `ktune_job${id}` })
        ),
        h(
          "section",
          { class: "card wide" },
          h("div", { class: "card-head" }, h("h2", {}, "Convergence"),
            h("div", { class: "controls" }, xSel, h("label", {}, logBox, " log scale"), h("label", {}, trialsBox, " every trial"))),
          h("div", { class: "chart-box" }, convCanvas),
          convNote
        )
      ),
      pickCard,
      h(
        "section",
        { class: "card" },
        h("div", { class: "card-head" }, h("h2", {}, "Time against a parameter"), h("div", { class: "controls" }, paramSel)),
        h("div", { class: "chart-box" }, paramCanvas),
        paramNote
      ),
      details.el,
      h("section", { class: "card" }, h("h2", {}, "Trials"), table.el),
      views.el
    )
  );

  function tooltipLabel(ctx) {
    const p = ctx.raw;
    if (!p || p.i === undefined) return `${ctx.dataset.label}: ${objective().fmt(p && p.y)}`;
    const i = p.i;
    const t = ts.status[i] === "ok" ? objective().fmt(ts.time[i]) : ts.status[i];
    return `#${i + 1} ${t} — ${fmtObject(ts.configs[i])}`;
  }

  function drawCharts() {
    if (!alive) return;
    const mode = state.xMode;
    const origin = t0();
    const best = convergencePoints(ts, mode, origin);
    const datasets = [
      { label: "best so far", data: best, showLine: true, stepped: "after", borderColor: color(0), backgroundColor: color(0), borderWidth: 2, pointRadius: 0, order: 0 },
    ];
    let note = "";
    if (state.showTrials) {
      const tp = trialPoints(ts, mode, origin);
      datasets.push({ label: "trial (ok)", data: tp.ok, borderColor: color(5, 0.5), backgroundColor: color(5, 0.35), pointRadius: 2, order: 1 });
      if (tp.failed.length)
        datasets.push({ label: `failed (${tp.nFailed.toLocaleString("en")})`, data: tp.failed, borderColor: FAIL_COLOR, backgroundColor: FAIL_COLOR, pointStyle: "crossRot", pointRadius: 4, order: 2 });
      if (tp.ok.length + tp.failed.length < ts.searchN) note = `${ts.searchN.toLocaleString("en")} trials; showing ${(tp.ok.length + tp.failed.length).toLocaleString("en")} (fastest and slowest of each run of trials, failures sampled).`;
    }
    if (ts.finalN) note = (note ? note + " " : "") + `The final pick's ${ts.finalN.toLocaleString("en")} re-measurements are not evaluations: see the Final pick card.`;
    convNote.textContent = note;
    // The axis ends at the search's budget (no further than the space, and never before the
    // evaluations loaded), so a running job shows how much of it is searched.
    const space = job && job.progress && job.progress.space_size;
    const budget = job && job.budget && job.budget.evaluations ? Math.min(job.budget.evaluations, space > 0 ? space : Infinity) : 0;
    const xMax = mode === "evals" && budget ? Math.max(budget, ts.searchN) : undefined;
    const opts = { xTitle: mode === "time" ? "seconds since the job started" : "evaluations", yTitle: objective().title, logY: state.logY, label: tooltipLabel, xMin: mode === "evals" ? 0 : undefined, xMax };
    if (!convChart) convChart = makeChart(convCanvas, datasets, opts);
    else updateChart(convChart, datasets, opts);
    drawParam();
  }

  function drawParam() {
    if (!alive) return;
    if (ts.params.length && paramSel.options.length !== ts.params.length) {
      clear(paramSel, ts.params.map((p) => h("option", { value: p }, p)));
      if (!state.param || !ts.params.includes(state.param)) state.param = ts.params[0];
      paramSel.value = state.param;
    }
    if (!state.param) {
      paramNote.textContent = "No trials yet.";
      return;
    }
    const pp = paramPoints(ts, state.param);
    const datasets = [
      { label: "fastest per value", data: pp.bestLine, showLine: true, borderColor: color(2), backgroundColor: color(2), borderWidth: 2, pointRadius: 3, order: 0 },
      { label: "trials (ok)", data: pp.points, borderColor: color(3, 0.4), backgroundColor: color(3, 0.3), pointRadius: 2, order: 1 },
    ];
    const opts = { xTitle: state.param, yTitle: objective().title, logY: state.logY, xLabels: pp.labels, label: tooltipLabel };
    if (!paramChart) paramChart = makeChart(paramCanvas, datasets, opts);
    else updateChart(paramChart, datasets, opts);
    paramNote.textContent = pp.points.length ? `${pp.bestLine.length} values; ${pp.points.length.toLocaleString("en")} points drawn.` : "No ok trials yet.";
  }

  function renderSummary() {
    const p = job.progress;
    const counts = [...ts.statusCounts.entries()].sort((a, b) => b[1] - a[1]).map(([s, n]) => `${s} ${n.toLocaleString("en")}`).join(" · ");
    const budget = [job.budget.evaluations ? `${job.budget.evaluations.toLocaleString("en")} evaluations` : null, job.budget.seconds ? `${job.budget.seconds} s` : null].filter(Boolean).join(", ");
    clear(
      summary,
      h(
        "div",
        { class: "fields" },
        field("status", statusBadge(job.status)),
        field("kernel", job.kernel),
        field("device", job.device_class && job.device === "external" ? `external (${job.device_class})` : job.device, "mono"),
        job.harness ? field("harness", harnessText(job.harness), "harness-" + job.harness.state) : null,
        field("problem", fmtObject(job.problem), "mono"),
        field("objective", metricObjective(job) ? `${job.objective.goal}imise ${job.objective.metric}` : "minimise the time", "objective-field"),
        field("strategy", job.strategy + (job.strategy_options && Object.keys(job.strategy_options).length ? ` (${fmtObject(job.strategy_options)})` : "")),
        field("budget", budget || "–"),
        field("warm start", historyText(job.history)),
        field("toolchain", job.toolchain || "–", "mono"),
        field("progress", progressBar(p.fraction, `${p.trials.toLocaleString("en")} trials`), "progress-field"),
        field("space", p.space_size ? p.space_size.toLocaleString("en") + " configurations" : "–"),
        field("trials by status", counts || "–"),
        field("recorded clock", fmtDuration(p.clock_seconds)),
        field("started", fmtTime(job.timings.started_at)),
        field("elapsed", fmtDuration(job.timings.elapsed_seconds)),
        job.stop_reason ? field("stop reason", stopWords(job.stop_reason), "stop-reason") : null,
        // Decimal text since issue 31: shown as sent, never through a JavaScript number.
        field("seed", h("span", { class: "mono", id: "job-seed" }, typeof job.seed === "string" ? job.seed : String(job.seed)))
      )
    );
    clear(head, h("h1", {}, `Job #${job.id}`), statusBadge(job.status), h("span", { class: "muted" }, `${job.kernel} on ${job.device}`),
      !TERMINAL.has(job.status)
        ? h("button", { type: "button", class: "small danger", id: "cancel-job", onclick: cancel }, "Cancel")
        : null,
      h("a", { class: "button-link small", href: `#/compare?jobs=${job.id}` }, "Compare…"));
    if (job.best) {
      // A metric job's best is its metric's best value; its time follows.
      const mo = metricObjective(job);
      bestTime.textContent = mo ? `${mo.metric} ${fmtNum(job.best.value)} · ${objective().fmt(job.best.time_ms)}` : objective().fmt(job.best.time_ms);
      bestBox.textContent = JSON.stringify(job.best.config, null, 2);
    }
    copyBtn.disabled = !job.best;
    clear(failBox, failureBox(job));
    const pick = job.final_pick;
    bestSource.textContent = !job.best
      ? TERMINAL.has(job.status) ? "none: no trial ran correctly" : ""
      : pick && pick.state === "picked" && pick.winner !== null
        ? `final pick: the median of ${pick.rounds} re-measurements (the search's fastest single time was ${fmtMs(pick.candidates[0].search_ms)})`
        : pick && (pick.state === "pending" || pick.state === "measuring")
          ? "the search's fastest so far; the final pick re-measures the fastest once the search ends"
          : "the search's fastest single measurement";
    // A failed job's banner says why; a pick it never made needs no card of its own.
    pickCard.hidden = !pick || (job.status === "failed" && pick.state === "not_made");
    if (!pickCard.hidden) renderPick(pickCard, job, ts, pickChart);
    if (kernelDefault === undefined && job.kernel) {
      kernelDefault = null;
      get("/v1/kernels", { signal: ac.signal, quiet: true })
        .then((list) => {
          const k = (list.kernels || []).find((x) => x.name === job.kernel);
          const d = k && (k.devices || []).find((x) => x.device === job.device || x.device === job.device_class);
          kernelDefault = d && d.default && Object.keys(d.default).length ? d.default : null;
          bestKey = null;
          if (alive) renderMetrics();
        })
        .catch(() => {});
    }
  }

  // The best's figures: its GFLOP/s, and the speed-up over the kernel's default configuration when
  // this job measured the default (its median ok time here).
  function renderFigures(row) {
    const out = [];
    // A told gflops metric is among the best's metrics already; the runner's is shown here.
    const told = row >= 0 && ts.metrics[row] && Number.isFinite(ts.metrics[row].gflops);
    const g = row >= 0 && !told ? ts.gflops[row] : NaN;
    if (Number.isFinite(g)) out.push(field("GFLOP/s", [h("span", { id: "best-gflops" }, fmtNum(g)), " ", peakShare(g, job && job.device)], "metric"));
    if (job && job.best && kernelDefault && metricObjective(job) === null) {
      const want = configKey(kernelDefault);
      const times = [];
      for (let i = 0; i < ts.n; i++) if (ts.status[i] === "ok" && configKey(ts.configs[i]) === want) times.push(ts.time[i]);
      times.sort((a, b) => a - b);
      const def = times.length ? times[(times.length - 1) >> 1] : NaN;
      out.push(field("vs. the default",
        Number.isFinite(def) && job.best.time_ms > 0
          ? h("span", { id: "speedup", title: fmtObject(kernelDefault) },
            def >= job.best.time_ms ? `${(def / job.best.time_ms).toFixed(2)}× faster (default ${fmtMs(def)})` : `${(job.best.time_ms / def).toFixed(2)}× slower (default ${fmtMs(def)})`)
          : h("span", { id: "speedup", class: "muted" }, "not measured by this job"), "speedup-field"));
    }
    clear(bestFigures, out);
  }

  // The row of the job's best: the fastest ok row when its configuration is the best's, else the
  // fastest ok row of that configuration (a final pick may choose another); -1 when none.
  function bestRow() {
    if (!job || !job.best || ts.bestIndex < 0) return -1;
    const want = JSON.stringify(job.best.config);
    let row = -1;
    for (let i = 0; i < ts.n; i++) {
      if (ts.status[i] !== "ok" || JSON.stringify(ts.configs[i]) !== want) continue;
      if (ts.time[i] === job.best.time_ms) return i; // the best's own trial (a final pick's median)
      if (row < 0 || ts.time[i] < ts.time[row]) row = i;
    }
    return row;
  }

  // User metrics: the best trial's values, and a column per metric name once one is seen.
  function renderMetrics() {
    const names = ts.metricNames;
    const wantGflops = !names.includes("gflops") && ts.gflops.subarray(0, ts.n).some(Number.isFinite);
    if (names.length !== metricCols || wantGflops !== gflopsCol) {
      metricCols = names.length;
      gflopsCol = wantGflops;
      const base = table.columns.filter((c) => !c.metric);
      const at = base.findIndex((c) => c.key === "compile");
      const cols = names.map((name) => ({
        key: "metric:" + name, metric: true, label: name, cls: "num", title: "user metric (extras.metrics)",
        value: (i) => (ts.metrics[i] && Number.isFinite(ts.metrics[i][name]) ? ts.metrics[i][name] : NaN),
        render: (i) => (ts.metrics[i] && Number.isFinite(ts.metrics[i][name]) ? fmtNum(ts.metrics[i][name]) : "–"),
      }));
      if (wantGflops)
        cols.push({
          key: "metric:gflops", metric: true, label: "GFLOP/s", cls: "num", title: "GFLOP/s from the kernel's flop count (extras.gflops)",
          value: (i) => ts.gflops[i], render: (i) => (Number.isFinite(ts.gflops[i]) ? fmtNum(ts.gflops[i]) : "–"),
        });
      table.columns = [...base.slice(0, at), ...cols, ...base.slice(at)];
      table.renderHead();
      table.setCount(ts.n, { force: true });
    }
    const key = `${ts.n}|${job && job.best ? JSON.stringify(job.best.config) : ""}`;
    if (key === bestKey) return;
    bestKey = key;
    const row = bestRow();
    if (row !== bestRowIndex) {
      bestRowIndex = row;
      table.render();
    }
    const m = row >= 0 ? ts.metrics[row] : null;
    clear(bestMetrics, m ? Object.entries(m).map(([k, v]) => field(k, fmtNum(v), "metric")) : []);
    renderFigures(row);
  }

  async function cancel(e) {
    e.target.disabled = true;
    try {
      job = await del(`/v1/jobs/${id}`);
      renderSummary();
    } catch (err) {
      clear(msg, errorBox(err));
    }
  }

  // Live updates: Server-Sent Events once the page has loaded (the server answers when something
  // changed, so the next request follows at once); polling every POLL_MS when they fail.
  let live = "events";
  async function update() {
    if (job && live === "events") {
      try {
        const ev = await nextEvents(id, { after: ts.after, status: job.status, waitS: 5, signal: ac.signal });
        job = ev.job;
        if (ev.trials) {
          ts.jobStatus = ev.trials.job_status;
          ts.append(ev.trials);
          if (ev.trials.rows.length >= EVENTS_PAGE) await ts.fetchNew(ac.signal);
        } else {
          ts.jobStatus = job.status;
        }
        return;
      } catch (e) {
        if (e.name === "AbortError") throw e;
        live = "polling"; // e.g. a server without the route, or too many waiting requests
        root.querySelector("#job-page")?.setAttribute("data-live", live);
      }
    }
    job = await get(`/v1/jobs/${id}`, { signal: ac.signal, quiet: job !== null });
    await ts.fetchNew(ac.signal);
  }

  async function tick() {
    try {
      const first = job === null;
      const before = ts.n;
      await update();
      if (!alive) return;
      if (first) root.querySelector("#job-page")?.setAttribute("data-live", live);
      clear(msg);
      renderSummary();
      if (ts.n !== before || !convChart) {
        drawCharts();
        if (views.update() && views.columnsChanged) paramColumns();
        table.setCount(ts.n);
        views.draw();
      }
      renderMetrics();
      if (!loadedAll && TERMINAL.has(ts.jobStatus)) {
        loadedAll = true;
        views.flush(); // the parameter views: now if on screen, else once the browser is idle
        // Measured after the frame that shows the charts and the table.
        requestAnimationFrame(() => {
          window.ktuneTimings = Object.assign(window.ktuneTimings || {}, { jobLoaded: performance.now(), jobTrials: ts.n, jobId: id });
          root.querySelector("#job-page")?.setAttribute("data-loaded", "all");
        });
        if (query && query.trial) details.showTrial(ts, query.trial); // a best entry's link (issue 31)
      }
    } catch (e) {
      if (!alive || e.name === "AbortError") return;
      clear(msg, errorBox(e));
      if (e.status === 404) return; // no such job: nothing to poll
    }
    // A finished job still gets polled once more in case trials were in flight; then it stops.
    if (alive && !(loadedAll && TERMINAL.has(job && job.status))) timer = setTimeout(tick, live === "events" ? 0 : POLL_MS);
  }

  tick();
  return () => {
    alive = false;
    clearTimeout(timer);
    ac.abort();
    destroyChart(convChart);
    destroyChart(paramChart);
    destroyChart(pickChart.chart);
    views.destroy();
  };
}
