// The job page's final pick (GET /v1/jobs/{id} "final_pick", worker/final_pick.h): the candidates
// the search's fastest single measurements proposed, their re-measured rounds (a chart: the search's
// time, then each round), median, spread and whether each qualified, and one sentence on why the
// final answer is what it is, above all when it differs from the search's best. Also the job's
// failure in words, and the best's figures (GFLOP/s, speed-up over the kernel's default).
//
// Call order: renderPick(card, job, ts, chartRef) whenever the job or its trials change; the chart
// is made once and updated (chartRef.chart: the caller destroys it on unmount).

import { makeChart, updateChart, color } from "../charts.js";
import { h, clear, fmtMs, fmtObject, statusBadge } from "../dom.js";

// A configuration as a key that does not depend on the order of its fields.
export function configKey(cfg) {
  if (!cfg || typeof cfg !== "object") return JSON.stringify(cfg);
  return JSON.stringify(Object.keys(cfg).sort().map((k) => [k, cfg[k]]));
}

// The configuration of a candidate: from the trials loaded (a candidate's config_id is one of the
// job's rows). config_id is compared as the JSON parser gave it; the page never shows it.
function candidateConfig(ts, cand) {
  for (let i = 0; i < ts.n; i++) if (ts.configId[i] === cand.config_id) return ts.configs[i];
  return null;
}

function pct(x) {
  return Number.isFinite(x) ? (x * 100).toFixed(x < 0.1 ? 1 : 0) + "%" : "–";
}

// The search's best candidate: the fastest single search time (candidates come fastest first).
function searchBest(pick) {
  return pick.candidates && pick.candidates.length ? 0 : -1;
}

// One or two sentences: what the final answer is and why it differs from (or matches) the search's
// best. pick: job.final_pick; cfg(i): the configuration of candidate i.
export function pickExplanation(pick, cfg) {
  if (!pick) return "This job re-measures nothing: its device replays recorded times (or a cost model), so the search's best is the answer.";
  const rounds = pick.rounds;
  if (pick.state === "pending") return `Once the search ends, its ${pick.count} fastest configurations will each be measured ${rounds} more times, interleaved; the lowest median becomes the answer.`;
  if (pick.state === "measuring") return `The search is over; re-measuring its ${pick.count} fastest configurations ${rounds} times each (${pick.measured} of ${pick.count * rounds} done). Until then the answer is the search's best.`;
  if (pick.state === "not_made") return "The job ended before its final pick was made: the answer is the search's best single measurement.";
  const cands = pick.candidates || [];
  const w = pick.winner;
  const s = searchBest(pick);
  if (w === null || w === undefined || w < 0) {
    const failed = cands.filter((c) => !c.qualified).length;
    return `No candidate measured ok in all ${rounds} rounds (${failed} of ${cands.length} failed at least once), so the job keeps the search's best single measurement.`;
  }
  const W = cands[w], S = cands[s];
  const spread = Number.isFinite(W.spread) ? `, spread ${pct(W.spread)}` : "";
  if (w === s) {
    const same = Math.abs(W.median_ms - S.search_ms) <= 1e-9 * Math.max(1, S.search_ms);
    const others = cands.length === 1 ? "" : ` (interleaved with ${cands.length - 1} runner${cands.length === 2 ? "-up" : "s-up"})`;
    return `The search's fastest configuration is also the final answer: re-measured ${rounds} times${others}, its median is ${fmtMs(W.median_ms)}${spread}` +
      (same ? "." : `; the search's single measurement said ${fmtMs(S.search_ms)}, so the job reports the median, which a re-run is more likely to see.`);
  }
  const why = !S.qualified
    ? `the search's fastest, ${fmtObject(cfg(s))} (${fmtMs(S.search_ms)} once), failed in ${rounds - S.ok} of its ${rounds} re-measurements, so it is not served`
    : `the search's fastest, ${fmtObject(cfg(s))}, measured ${fmtMs(S.search_ms)} once but ${fmtMs(S.median_ms)} as the median of ${rounds} re-measurements: its single time was partly luck`;
  return `The final answer differs from the search's best: ${why}. ${fmtObject(cfg(w))} (search rank ${w + 1}, ${fmtMs(W.search_ms)} in the search) has the lowest median, ${fmtMs(W.median_ms)}${spread}, so it is the job's best.`;
}

// The final pick card's content. chartRef: {chart} kept by the caller.
export function renderPick(card, job, ts, chartRef) {
  const pick = job.final_pick;
  const cfg = (i) => candidateConfig(ts, pick.candidates[i]);
  const head = h("div", { class: "card-head" }, h("h2", {}, "Final pick"),
    pick ? h("span", { class: "muted" }, `${pick.count} candidates × ${pick.rounds} rounds · ${pick.state}`) : null);
  const why = h("p", { id: "final-why", class: "final-why" }, pickExplanation(pick, pick ? cfg : () => null));
  if (!pick || !pick.candidates) {
    clear(card, head, why);
    return;
  }
  const cands = pick.candidates;
  const rows = cands.map((c, i) =>
    h("tr", { class: i === pick.winner ? "best-row" : "", "data-candidate": i },
      h("td", { class: "num" }, i + 1),
      h("td", { class: "mono" }, fmtObject(cfg(i)), i === pick.winner ? h("span", { class: "badge status-ok winner" }, "final answer") : null,
        i === 0 && i !== pick.winner ? h("span", { class: "badge" }, "search's best") : null),
      h("td", { class: "num" }, fmtMs(c.search_ms)),
      h("td", { class: "num rounds" }, c.times_ms.map((t, r) => (t === null ? statusBadge(c.statuses[r] || "pending") : fmtMs(t))).reduce((a, x) => (a.length ? [...a, " · ", x] : [x]), [])),
      h("td", { class: "num" }, fmtMs(c.median_ms)),
      h("td", { class: "num" }, pct(c.spread)),
      h("td", {}, c.qualified ? "yes" : `no (${c.ok} of ${pick.rounds} ok)`)
    )
  );
  const table = h("div", { class: "table-scroll" },
    h("table", { id: "final-table", class: "compact" },
      h("thead", {}, h("tr", {}, ["search rank", "configuration", "search time", "re-measured rounds", "median", "spread", "qualified"].map((l) => h("th", {}, l)))),
      h("tbody", {}, rows)));
  const canvas = chartRef.canvas || (chartRef.canvas = h("canvas", { id: "final-chart", "aria-label": "final pick rounds" }));
  clear(card, head, why, h("div", { class: "grid2 final-grid" }, table, h("div", { class: "chart-box short" }, canvas)));
  const labels = ["search", ...Array.from({ length: pick.rounds }, (_, r) => `round ${r + 1}`)];
  const datasets = cands.map((c, i) => ({
    label: `#${i + 1}${i === pick.winner ? " (final)" : ""}`,
    data: [{ x: 0, y: c.search_ms }, ...c.times_ms.map((t, r) => ({ x: r + 1, y: t })).filter((p) => p.y !== null)],
    showLine: true,
    borderColor: color(i),
    backgroundColor: color(i),
    borderWidth: i === pick.winner ? 3 : 1.5,
    pointRadius: 3,
  }));
  const opts = { xTitle: "search, then each re-measurement round", yTitle: "time (ms)", logY: false, xLabels: labels };
  if (!chartRef.chart) chartRef.chart = makeChart(canvas, datasets, opts);
  else updateChart(chartRef.chart, datasets, opts);
}

// Why a job ended, in words (GET /v1/jobs/{id} stop_reason, openapi StopReason).
const STOP_WORDS = {
  budget_evaluations: "its evaluation budget was spent",
  budget_seconds: "its time budget was spent",
  space_exhausted: "every valid configuration was measured",
  strategy_finished: "the strategy had nothing more to propose",
  imported: "it was imported",
  cancelled: "it was cancelled",
  no_ok_trial: "no configuration ran correctly: every trial failed, so there is no best",
  target_unavailable: "its kernel, device or problem no longer resolves (on a restart)",
  kernel_changed: "the kernel's source changed since the job was created",
  toolchain_changed: "the device's compiler or CUDA driver changed since the job was created",
  strategy_refused: "the strategy (or its options, or its surrogate model) refused to start",
  resume_diverged: "on a restart, the search did not replay as it ran before",
  no_model: "the strategy needs a surrogate model and none is ready (POST /v1/models, kind surrogate)",
  attempts: "the process driving it died or stalled too often",
};

export function stopWords(reason) {
  return STOP_WORDS[reason] || reason;
}

// A failed job's banner: what happened in a sentence, the server's message and hint as text.
export function failureBox(job) {
  if (job.status !== "failed") return null;
  const e = job.error && typeof job.error === "object" ? job.error : null;
  return h("div", { class: "error-box job-failure", id: "job-failure", role: "alert" },
    h("strong", {}, "This job failed: " + (job.stop_reason ? stopWords(job.stop_reason) : "see the message below") + "."),
    e && e.message ? h("div", { class: "failure-message" }, e.message) : typeof job.error === "string" ? h("div", {}, job.error) : null,
    e && e.hint ? h("div", { class: "hint" }, "Hint: " + e.hint) : null,
    e && e.code ? h("div", { class: "hint mono" }, "code " + e.code) : null);
}
