// Compare: several jobs overlaid on one convergence chart (best so far against evaluations or
// time, as milliseconds or as the fraction of the best any of them found), live while they run;
// and a `ktune bench --json` results file, chosen with a file picker and read in the page, shown as
// the fraction-of-optimum curves per strategy (averaged, or for one space) with its table.

import { get } from "../api.js";
import { TrialSet } from "../trials.js";
import { makeChart, updateChart, destroyChart, convergencePoints, color } from "../charts.js";
import { h, clear, fmtMs, errorBox, statusBadge, TERMINAL } from "../dom.js";

const POLL_MS = 2000;

function parseIds(text) {
  return [...new Set(String(text || "").split(/[\s,]+/).map(Number).filter((n) => Number.isInteger(n) && n > 0))].slice(0, 12);
}

// --- jobs overlay ------------------------------------------------------------------------------

function jobsSection(initialIds) {
  const state = { ids: initialIds, xMode: "evals", logY: true, yMode: "time", within: 5 };
  const series = new Map(); // id -> {job, ts}
  let chart = null;
  let timer = null;
  let alive = true;
  const msg = h("div", { class: "msg" });
  const idsInput = h("input", { id: "compare-ids", type: "text", value: state.ids.join(","), placeholder: "job ids, e.g. 3,4,5", "aria-label": "job ids" });
  const picker = h("div", { class: "job-picker" });
  const legend = h("div", { class: "legend-table" });
  const withinBox = h("div", { id: "compare-within", class: "within" });
  const canvas = h("canvas", { id: "compare-chart", "aria-label": "convergence of the compared jobs" });
  const controls = h(
    "div",
    { class: "controls" },
    h("select", { id: "compare-x", "aria-label": "x axis", onchange: (e) => { state.xMode = e.target.value; draw(); } },
      h("option", { value: "evals" }, "against evaluations"), h("option", { value: "time" }, "against time")),
    h("select", { id: "compare-y", "aria-label": "y axis", onchange: (e) => { state.yMode = e.target.value; draw(); } },
      h("option", { value: "time" }, "best time (ms)"), h("option", { value: "fraction" }, "fraction of the best found")),
    h("label", {}, h("input", { type: "checkbox", checked: true, onchange: (e) => { state.logY = e.target.checked; draw(); } }), " log scale")
  );
  const form = h("form", { class: "inline-form", id: "compare-form" }, h("label", {}, "Jobs", idsInput), h("button", { type: "submit" }, "Compare"));
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    location.hash = "#/compare?jobs=" + parseIds(idsInput.value).join(",");
  });

  const el = h(
    "section",
    { class: "card" },
    h("div", { class: "card-head" }, h("h2", {}, "Jobs on one chart"), controls),
    form,
    h("details", { class: "picker-details" }, h("summary", {}, "Pick from recent jobs"), picker),
    msg,
    h("div", { class: "chart-box tall" }, canvas),
    legend,
    withinBox
  );

  get("/v1/jobs?limit=50", { quiet: true })
    .then((page) => {
      clear(
        picker,
        page.jobs.map((j) =>
          h(
            "label",
            { class: "pick" },
            h("input", {
              type: "checkbox",
              value: j.id,
              checked: state.ids.includes(j.id),
              onchange: (e) => {
                const ids = parseIds(idsInput.value).filter((x) => x !== j.id);
                if (e.target.checked) ids.push(j.id);
                idsInput.value = ids.join(",");
              },
            }),
            ` #${j.id} ${j.strategy} · ${j.kernel} · ${j.device} `,
            statusBadge(j.status)
          )
        )
      );
    })
    .catch(() => {});

  // "Evaluations to within x%": per job, the first evaluation whose best so far is within x% of
  // the best time any compared job found (search evaluations only: the final pick's rounds are
  // not counted), and the seconds since the job started at that point.
  function drawWithin(all, bestAll) {
    const x = state.within;
    const limit = bestAll * (1 + x / 100);
    const select = h(
      "select",
      { id: "compare-within-x", "aria-label": "within how many percent", onchange: (e) => { state.within = Number(e.target.value); draw(); } },
      [1, 2, 5, 10, 20].map((v) => h("option", { value: v, selected: v === x }, `${v}%`))
    );
    const rows = all.map((s, k) => {
      let at = -1;
      for (let i = 0; i < s.ts.n; i++) {
        if (s.ts.finalRound[i]) continue;
        if (s.ts.best[i] <= limit) { at = i; break; }
      }
      const t0 = s.job.timings.started_at ? Date.parse(s.job.timings.started_at) / 1000 : s.ts.firstFinished();
      const evals = at >= 0 ? s.ts.evalNo[at] : null;
      const running = !TERMINAL.has(s.ts.jobStatus || s.job.status);
      const words = at >= 0 ? `${evals} of ${s.ts.searchN} evaluations` : `not reached in ${s.ts.searchN} evaluations${running ? " (still running)" : ""}`;
      return h(
        "tr",
        { "data-job": s.job.id, "data-evals": evals === null ? "" : String(evals) },
        h("td", {}, h("span", { class: "swatch", style: `background:${color(k)}` })),
        h("td", {}, h("a", { href: `#/jobs/${s.job.id}` }, "#" + s.job.id), " ", s.job.strategy),
        h("td", { class: "num within-evals" + (at >= 0 ? "" : " muted") }, words),
        h("td", { class: "num opt" }, at >= 0 && Number.isFinite(s.ts.finished[at] - t0) ? `${(s.ts.finished[at] - t0).toFixed(1)} s` : "–")
      );
    });
    clear(
      withinBox,
      h("h3", {}, "Evaluations to within ", select, " of the best"),
      h("p", { class: "muted small-text" }, Number.isFinite(bestAll) ? `The best time any of these jobs found is ${fmtMs(bestAll)}; within ${x}% is ${fmtMs(limit)} or faster.` : "No job has an ok trial yet."),
      // Times of different kernels, devices or problems do not compare: say so rather than rank them.
      new Set(all.map((s) => JSON.stringify([s.job.kernel, s.job.device_class, s.job.problem]))).size > 1
        ? h("p", { class: "warn", id: "compare-within-mixed" }, "These jobs tune different kernels, devices or problems: one job's best time says nothing about another's, so read each row against its own job.")
        : null,
      Number.isFinite(bestAll)
        ? h(
            "table",
            { class: "compact", id: "compare-within-table" },
            h("thead", {}, h("tr", {}, h("th", {}, ""), h("th", {}, "job"), h("th", { class: "num" }, "evaluations to reach it"), h("th", { class: "num opt" }, "time to reach it"))),
            h("tbody", {}, rows)
          )
        : null
    );
  }

  function draw() {
    const all = [...series.values()];
    let bestAll = Infinity;
    for (const s of all) if (s.ts.bestIndex >= 0) bestAll = Math.min(bestAll, s.ts.best[s.ts.n - 1]);
    const datasets = all.map((s, k) => {
      const t0 = s.job.timings.started_at ? Date.parse(s.job.timings.started_at) / 1000 : s.ts.firstFinished();
      let pts = convergencePoints(s.ts, state.xMode, t0);
      if (state.yMode === "fraction") pts = pts.map((p) => ({ x: p.x, y: bestAll / p.y }));
      return {
        label: `#${s.job.id} ${s.job.strategy}`,
        data: pts,
        showLine: true,
        stepped: "after",
        borderColor: color(k),
        backgroundColor: color(k),
        borderWidth: 2,
        pointRadius: 0,
      };
    });
    const opts = {
      xTitle: state.xMode === "time" ? "seconds since the job started" : "evaluations",
      yTitle: state.yMode === "fraction" ? "fraction of the best found" : "best time so far (ms)",
      logY: state.logY && state.yMode === "time",
      yPercent: state.yMode === "fraction",
    };
    if (!chart) chart = makeChart(canvas, datasets, opts);
    else updateChart(chart, datasets, opts);
    clear(
      legend,
      h(
        "table",
        { class: "compact" },
        h("thead", {}, h("tr", {}, ["", "job", "status", "strategy", "kernel / device", "trials", "best"].map((t) => h("th", {}, t)))),
        h(
          "tbody",
          {},
          all.map((s, k) =>
            h(
              "tr",
              {},
              h("td", {}, h("span", { class: "swatch", style: `background:${color(k)}` })),
              h("td", {}, h("a", { href: `#/jobs/${s.job.id}` }, "#" + s.job.id)),
              h("td", {}, statusBadge(s.job.status)),
              h("td", {}, s.job.strategy),
              h("td", { class: "mono" }, `${s.job.kernel} / ${s.job.device}`),
              h("td", { class: "num" }, s.ts.n.toLocaleString("en")),
              h("td", { class: "num" }, fmtMs(s.ts.bestIndex >= 0 ? s.ts.best[s.ts.n - 1] : null))
            )
          )
        )
      )
    );
    drawWithin(all, bestAll);
  }

  async function poll() {
    let live = false;
    try {
      for (const id of state.ids) {
        let s = series.get(id);
        if (s && TERMINAL.has(s.ts.jobStatus)) continue;
        const job = await get(`/v1/jobs/${id}`, { quiet: !!s });
        if (!s) series.set(id, (s = { job, ts: new TrialSet(id) }));
        s.job = job;
        await s.ts.fetchNew();
        if (!TERMINAL.has(s.ts.jobStatus)) live = true;
      }
      clear(msg);
    } catch (e) {
      clear(msg, errorBox(e));
    }
    if (!alive) return;
    if (state.ids.length) draw();
    if (live) timer = setTimeout(poll, POLL_MS);
    else el.setAttribute("data-loaded", "all");
  }

  if (state.ids.length) poll();
  else clear(msg, h("p", { class: "muted" }, "Choose jobs to compare: type their ids or pick them from the recent jobs."));
  return {
    el,
    stop() {
      alive = false;
      clearTimeout(timer);
      destroyChart(chart);
    },
  };
}

// --- ktune bench results -----------------------------------------------------------------------

function benchSection() {
  let chart = null;
  let result = null;
  const state = { space: "", metric: "fraction" };
  const msg = h("div", { class: "msg" });
  const spaceSel = h("select", { id: "bench-space", "aria-label": "space", onchange: (e) => { state.space = e.target.value; draw(); } });
  const metricSel = h(
    "select",
    { id: "bench-metric", "aria-label": "budget kind", onchange: (e) => { state.metric = e.target.value; draw(); } },
    h("option", { value: "fraction" }, "after N evaluations"),
    h("option", { value: "clock_fraction" }, "after N recorded seconds")
  );
  const canvas = h("canvas", { id: "bench-chart", "aria-label": "fraction of the optimum per strategy" });
  const tableBox = h("div", { class: "table-scroll" });
  const info = h("div", { class: "muted small-text" });
  const file = h("input", { type: "file", id: "bench-file", accept: ".json,application/json", "aria-label": "ktune bench results file" });
  file.addEventListener("change", async () => {
    const f = file.files && file.files[0];
    if (!f) return;
    try {
      load(JSON.parse(await f.text()), f.name);
    } catch (e) {
      clear(msg, errorBox({ code: "bad_file", message: `${f.name}: ${e.message}`, hint: "expected the output of ktune bench --json" }));
    }
  });
  const body = h("div", { class: "bench-body", hidden: true }, h("div", { class: "chart-box tall" }, canvas), info, tableBox);
  const el = h(
    "section",
    { class: "card", id: "bench-section" },
    h("div", { class: "card-head" }, h("h2", {}, "ktune bench results"), h("div", { class: "controls" }, spaceSel, metricSel)),
    h("p", { class: "muted" }, "Pick a results file written by ", h("code", {}, "ktune bench --json"), " (e.g. tests/bench/results/gpu-spaces.json); it is read in this page, nothing is uploaded."),
    file,
    msg,
    body
  );

  function curves() {
    if (!result) return null;
    if (!state.space) return result.averages;
    const sp = (result.spaces || []).find((s) => s.name === state.space);
    return sp ? sp.strategies : null;
  }

  function load(json, name) {
    if (!json || typeof json !== "object" || !json.averages || !Array.isArray(json.spaces)) throw new Error("no \"averages\" and \"spaces\" in this file");
    result = json;
    clear(spaceSel, h("option", { value: "" }, `average over ${json.spaces.length} spaces`), json.spaces.map((s) => h("option", { value: s.name }, s.name)));
    state.space = "";
    clear(msg);
    body.hidden = false;
    info.textContent = `${name}: budget ${json.budget} evaluations, ${json.seeds} seeds, strategies ${Object.keys(json.averages).join(", ")}.`;
    draw();
    el.setAttribute("data-loaded", "all");
  }

  function draw() {
    const c = curves();
    if (!c) return;
    const strategies = Object.keys(c);
    const datasets = strategies.map((s, k) => {
      const m = c[s][state.metric] || {};
      const pts = Object.keys(m).map(Number).sort((a, b) => a - b).map((x) => ({ x, y: m[String(x)] }));
      return { label: s, data: pts, showLine: true, borderColor: color(k), backgroundColor: color(k), borderWidth: 2, pointRadius: 3 };
    });
    const opts = { xTitle: state.metric === "fraction" ? "evaluations (log scale)" : "recorded seconds (log scale)", yTitle: "fraction of the optimum", logX: true, yPercent: true };
    if (!chart) chart = makeChart(canvas, datasets, opts);
    else updateChart(chart, datasets, opts);
    const budgets = [...new Set(strategies.flatMap((s) => Object.keys(c[s][state.metric] || {})))].map(Number).sort((a, b) => a - b);
    const best = Object.fromEntries(budgets.map((b) => [b, Math.max(...strategies.map((s) => (c[s][state.metric] || {})[b] ?? -1))]));
    clear(
      tableBox,
      h(
        "table",
        { class: "compact", id: "bench-table" },
        h("thead", {}, h("tr", {}, h("th", {}, "strategy"), budgets.map((b) => h("th", { class: "num" }, b)), h("th", { class: "num" }, "evals to 5% (median)"), h("th", { class: "num" }, "success"))),
        h(
          "tbody",
          {},
          strategies.map((s, k) => {
            const m = c[s][state.metric] || {};
            const e5 = c[s].evals_to_5pct || {};
            return h(
              "tr",
              {},
              h("td", {}, h("span", { class: "swatch", style: `background:${color(k)}` }), " ", s),
              budgets.map((b) => h("td", { class: "num" + (m[b] === best[b] ? " leader" : "") }, m[b] === undefined ? "–" : (m[b] * 100).toFixed(1) + "%")),
              h("td", { class: "num" }, e5.median === undefined ? "–" : e5.median.toFixed(0)),
              h("td", { class: "num" }, e5.success_rate === undefined ? "–" : (e5.success_rate * 100).toFixed(0) + "%")
            );
          })
        )
      )
    );
  }

  return {
    el,
    stop() {
      destroyChart(chart);
    },
  };
}

export function mount(root, { query }) {
  const jobs = jobsSection(parseIds(query.jobs));
  const bench = benchSection();
  clear(root, h("div", { class: "page-head" }, h("h1", {}, "Compare")), jobs.el, bench.el);
  return () => {
    jobs.stop();
    bench.stop();
  };
}
