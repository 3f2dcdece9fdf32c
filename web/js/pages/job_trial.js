// The job page's trial details panel: one trial as GET /v1/jobs/{id}/trials (objects format) has
// it, fetched when its row's button is clicked (the compact rows the table draws carry no extras):
// its status in words, the compiler's log or the runner's reason, the verification error
// (extras.max_abs_err), GFLOP/s, user metrics and the rest of extras.
//
// Call order: const d = new TrialDetails(jobId); put d.el in the page; d.show(ts, i) on a click, or
// d.showTrial(ts, trialId) for a link to one trial (#/jobs/{id}?trial={trial}: a best entry's).
// peakShare(gflops, device): a GFLOP/s as a share of the device's peak (GET /v1/devices).

import { get } from "../api.js";
import { h, clear, fmtMs, fmtNum, fmtObject, statusBadge, errorBox } from "../dom.js";

const STATUS_WORDS = {
  ok: "measured correctly",
  compile_error: "the compiler refused this configuration",
  runtime_error: "the kernel failed while running",
  wrong_result: "the kernel's output did not match the reference (verification failed)",
  timeout: "the measurement ran past its time limit",
  invalid: "this configuration cannot run on the device (a launch limit or the kernel refused it)",
  illegal: "this configuration breaks a constraint of the device",
};

export function statusWords(status) {
  return STATUS_WORDS[status] || status;
}

// The label of a row's details button: what a click shows.
export function detailsLabel(status) {
  return status === "compile_error" ? "log" : status === "ok" ? "details" : "why";
}

function row(label, value, id) {
  return h("tr", id ? { id } : {}, h("th", {}, label), h("td", {}, value));
}

export class TrialDetails {
  constructor(jobId) {
    this.jobId = jobId;
    this.body = h("div", { class: "trial-details-body" });
    this.title = h("h2", {}, "Trial");
    this.el = h("section", { class: "card trial-details", id: "trial-details", hidden: true },
      h("div", { class: "card-head" }, this.title,
        h("button", { type: "button", class: "small", id: "close-details", onclick: () => this.hide() }, "Close")),
      this.body);
    this.want = -1;
  }

  hide() {
    this.el.hidden = true;
    this.want = -1;
  }

  // Shows row i of the trial set: what the row knows at once, then the full trial.
  async show(ts, i) {
    this.want = i;
    this.el.hidden = false;
    const phase = ts.finalRound[i] ? `final pick, round ${ts.finalRound[i]}` : `search evaluation ${ts.evalNo[i]}`;
    this.title.textContent = `Trial #${i + 1} · ${phase}`;
    clear(this.body, h("p", { class: "loading" }, "Loading the trial…"));
    this.el.scrollIntoView({ block: "nearest" });
    let t = null;
    try {
      // done_seq is the cursor: after done_seq - 1, the first trial is this one.
      const page = await get(`/v1/jobs/${this.jobId}/trials?after=${ts.doneSeq[i] - 1}&limit=1`);
      t = page.trials[0];
    } catch (e) {
      if (this.want === i) clear(this.body, errorBox(e));
      return;
    }
    if (this.want !== i) return; // another row was clicked meanwhile
    this.render(t);
  }

  // Shows the trial of that id (a best entry's link): fetched by id, its row found by done_seq.
  async showTrial(ts, trialId) {
    this.want = -2;
    this.el.hidden = false;
    this.title.textContent = `Trial id ${trialId}`;
    clear(this.body, h("p", { class: "loading" }, "Loading the trial…"));
    let t = null;
    try {
      const page = await get(`/v1/jobs/${this.jobId}/trials?trial=${encodeURIComponent(trialId)}`);
      t = page.trials[0];
    } catch (e) {
      if (this.want === -2) clear(this.body, errorBox(e));
      return;
    }
    if (this.want !== -2) return;
    if (!t) {
      clear(this.body, h("p", { class: "muted" }, `This job has no finished trial with id ${trialId}.`));
      return;
    }
    let i = -1;
    for (let k = 0; k < ts.n; k++) if (ts.doneSeq[k] === t.done_seq) i = k;
    const phase = t.final_round ? `final pick, round ${t.final_round}` : i >= 0 ? `search evaluation ${ts.evalNo[i]}` : "search";
    this.title.textContent = `${i >= 0 ? `Trial #${i + 1}` : "Trial"} (id ${t.id}) · ${phase}`;
    this.render(t);
    this.el.scrollIntoView({ block: "start" });
  }

  render(t) {
    this.el.dataset.trialId = String(t.id);
    const ex = (t && t.extras) || {};
    const log = typeof ex.log === "string" && ex.log ? ex.log : null;
    const reason = ["error", "message", "reason"].map((k) => ex[k]).filter((v) => typeof v === "string" && v);
    const gflops = Number.isFinite(ex.gflops) ? ex.gflops : ex.metrics && Number.isFinite(ex.metrics.gflops) ? ex.metrics.gflops : NaN;
    const shown = new Set(["log", "error", "message", "reason", "gflops", "max_abs_err", "metrics"]);
    const rest = Object.fromEntries(Object.entries(ex).filter(([k]) => !shown.has(k)));
    clear(
      this.body,
      h("p", { class: "trial-status" }, statusBadge(t.status), " ", statusWords(t.status), "."),
      reason.length ? h("div", { class: "error-box", id: "trial-reason" }, reason.join(" · ")) : null,
      h("table", { class: "compact kv" }, h("tbody", {},
        row("configuration", h("span", { class: "mono" }, fmtObject(t.config))),
        row("time", fmtMs(t.time_ms)),
        row("compile · measure", `${fmtMs(t.compile_ms)} · ${fmtMs(t.measure_ms)}`),
        Number.isFinite(gflops) ? row("GFLOP/s", fmtNum(gflops), "trial-gflops") : null,
        Number.isFinite(ex.max_abs_err) ? row("verification: max |error|", fmtNum(ex.max_abs_err), "trial-max-err") : null,
        ex.metrics && typeof ex.metrics === "object" ? row("user metrics", fmtObject(ex.metrics)) : null,
        t.repeats ? row("repeats", String(t.repeats) + (Number.isFinite(t.noise_cv) ? ` (noise ${(t.noise_cv * 100).toFixed(1)}%)` : "")) : null,
        t.worker ? row("worker", h("span", { class: "mono" }, t.worker)) : null,
        Object.keys(rest).length ? row("other extras", h("span", { class: "mono" }, JSON.stringify(rest))) : null)),
      log ? h("div", {}, h("div", { class: "label" }, t.status === "ok" ? "log" : "compiler / runner log"), h("pre", { class: "log", id: "trial-log" }, log)) : null,
      !log && t.status === "compile_error" ? h("p", { class: "muted" }, "The runner recorded no log for this failure.") : null
    );
  }
}

// The devices' peaks (GET /v1/devices: peak_gflops, peak_basis), fetched once per page load.
let peaks = null;
function devicePeaks() {
  if (!peaks)
    peaks = get("/v1/devices", { quiet: true })
      .then((r) => new Map((r.devices || []).map((d) => [d.name, { gflops: d.peak_gflops, basis: d.peak_basis || "" }])))
      .catch(() => {
        peaks = null;
        return new Map();
      });
  return peaks;
}

// "(41% of peak)" beside a GFLOP/s, filled when the devices are known; "peak unknown" (with the
// server's reason as its title) where the device's peak is not known (issue 31).
export function peakShare(gflops, device) {
  const el = h("span", { class: "peak-share muted", id: "best-peak" });
  devicePeaks().then((m) => {
    const p = m.get(device);
    if (p && typeof p.gflops === "number" && p.gflops > 0) {
      el.textContent = `(${((100 * gflops) / p.gflops).toFixed(gflops / p.gflops < 0.1 ? 2 : 1)}% of peak ${fmtNum(p.gflops)})`;
      el.title = "peak GFLOP/s: " + p.basis;
      el.dataset.peak = String(p.gflops);
    } else {
      el.textContent = "(peak unknown)";
      el.title = p ? p.basis : "the device is not listed by GET /v1/devices";
      el.dataset.peak = "unknown";
    }
  });
  return el;
}
